"""The NumPy tracer, assembled: the tracer (_tracer), NumPy's function and ufunc tables
(_numpy_api and the _numpy_* families), indexing (_indexing) and the ndarray methods and
operators (_tracer_operators). The driver (kiln._compile) imports only this module; the modules
below import each other in one direction (_graph_breaks <- _tracer <- the tables), so the
package has no import cycle and no imports inside functions.

The driver's interface: wrap, unwrap, is_scalar_result, as_output (_trace_context), and
attach_driver(trace, driver) -> a context manager to trace inside, and loop_capture(trace,
record) -> the helper of functions whose loops kiln._loop_transform rewrote, and
creation_substitutes() for NumPy functions the user's names hold.
"""
import weakref

from . import (_indexing, _loop_capture, _masked_selections, _numpy_api,  # noqa: F401
               _numpy_creation, _pytree, _stacked_rows, _traced_classes, _tracer,
               _tracer_operators)
from ._trace_context import (as_output, context_for, is_scalar_result,  # noqa: F401
                             mark_read_only, note_layout, unwrap, wrap)

_tracer.install(_numpy_api, _indexing, _masked_selections)


def attach_driver(trace, driver):
    """Tracing `trace` for `driver` (graph breaks, data inputs reach it through the trace
    context); returns the context manager under which the user's function runs: NumPy's
    creation functions then build nodes in this trace."""
    context = context_for(trace)
    context.driver = driver
    return _numpy_creation.capturing(context)


def held_tensors(trace):
    """The tensors of `trace` that its live traced arrays hold (a view's comes from its root):
    what a graph break's cut keeps (kiln._compile)."""
    context = context_for(trace)
    live = [array for array in (reference() for reference in context.arrays) if array is not None]
    context.arrays = [weakref.ref(array) for array in live]
    # (a row of a loop's appends not read yet has none: its stack is among them)
    return [array._tensor for array in live if array._root is None and array._tensor is not None]


def stacked_row(leaf):
    """(the stack, a function of its output giving the row) where the result leaf is an
    unchanged row of a loop's appends (kiln._stacked_rows); else None."""
    return _stacked_rows.output_row(leaf)


def compact_rows(spec):
    """The output spec with each list or tuple of a whole stack's rows built at once."""
    return _stacked_rows.compact(spec, _pytree.Rebuilt)


def loop_capture(trace, record):
    """The helper a function rewritten by kiln._loop_transform calls while `trace` is traced:
    it captures loops and branches (kiln._loop_capture); record(kind, location, reason)."""
    context = context_for(trace)
    context.loop_capture = _loop_capture.LoopCapture(context, record)
    return context.loop_capture


def holds_dtype(dtype):
    """Whether a graph holds arrays of `dtype` (not strings, objects, long doubles, ...)."""
    return (dtype.kind in "biufc" and dtype.isnative
            and _tracer.dtype_name(dtype) in _tracer.SUPPORTED_DTYPES)


def creation_substitutes():
    """{id(NumPy creation function): (it, its tracing wrapper)} (kiln._traced_classes)."""
    return _traced_classes.substitutes()


def traced_builtins():
    """{builtin name: its stand-in in a traced function's names} (kiln._traced_classes)."""
    return {"type": _traced_classes.traced_type}


def ndarray_global():
    """(the global name, the np.ndarray stand-in) that TracedArray.__class__ reads."""
    return _traced_classes.NDARRAY_GLOBAL, _traced_classes.ndarray
