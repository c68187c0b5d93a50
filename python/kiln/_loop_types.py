"""The values captured loops carry (kiln._loop_capture, kiln._loop_appends): their types, and
the failure that makes a loop run as Python instead."""
import types

import numpy as np

from ._graph_breaks import is_kiln_code
from ._tracer import TracedArray, backend, cast


class CaptureFailed(Exception):
    """The loop or branch cannot be captured: it runs as Python (the reason is recorded)."""


class Retype(Exception):
    """Trace the body again with these variables carried as (dtype, shape)."""

    def __init__(self, types):
        super().__init__(str(types))
        self.types = types


class AppendsUnderCondition(Retype):
    """A list a branch's side appends to, not yet carried with a count: the loop is traced
    again with it counted (kiln._conditional_appends); a branch passes it on."""


class WindowMismatch(CaptureFailed):
    """A graph break of a window's rule (kiln._windows), or a window of the body a carried name
    is rebound to (`x = x[:i + 1] * d`): a carried array may shrink (probed)."""


class DrawsInBody(CaptureFailed):
    """A loop's body drew from a random generator: the loop is unrolled, and the call's trace
    is this call's only (the driver's opaque_call)."""


def is_number(value):
    # complex too: an escape-time loop's `z = 0j` becomes a traced complex in its first
    # iteration, as `s = 0.0` becomes a traced float
    return isinstance(value, (bool, int, float, complex, np.bool_, np.integer, np.floating,
                              np.complexfloating))


def is_python_number(value):
    return type(value) is int or type(value) is float or type(value) is complex


def python_type(value):
    """int, float, complex or bool where `value` is (or, traced, stands for) a Python number
    or bool, else None (a NumPy scalar or an array)."""
    if isinstance(value, TracedArray):
        return value._weak
    return type(value) if is_python_number(value) or type(value) is bool else None


def type_of(tensor):
    return tensor.dtype, tuple(tensor.shape)


def changed_before(types, variables):
    """The first variable whose value before the loop has another type than `types` gives it:
    an array or NumPy scalar of another dtype or shape, a Python number that becomes an array
    (one that becomes a 0-d value stays a number: README, differences item 1). Lists the body
    appends to (types that are no (dtype, shape) pair) are not such values."""
    for name, kind in types.items():
        if not isinstance(kind, tuple):
            continue
        dtype, shape = kind
        old = variables.get(name)
        if isinstance(old, TracedArray):
            if (old._weak is None and type_of(old.tensor) != (dtype, tuple(shape))
                    or old._weak is not None and tuple(shape)):   # a dynamic Python number
                return name
        elif isinstance(old, np.generic):
            if (old.dtype.name, ()) != (np.dtype(dtype).name, tuple(shape)):
                return name
        elif is_number(old) and tuple(shape):
            return name
    return None


def widened(placeholder, tensor, name):
    """The carried type when one iteration turns `placeholder`'s type into `tensor`'s: NumPy's
    promotion of the two, broadcast shapes; refused when it is not the body's own result."""
    dtype = np.result_type(np.dtype(placeholder.dtype), np.dtype(tensor.dtype)).name
    try:
        shape = np.broadcast_shapes(tuple(placeholder.shape), tuple(tensor.shape))
    except ValueError:
        shape = None
    if dtype != tensor.dtype or shape != tuple(tensor.shape):
        raise CaptureFailed(f"the loop changes the shape or dtype of `{name}` from "
                            f"{placeholder.dtype}{tuple(placeholder.shape)} to "
                            f"{tensor.dtype}{tuple(tensor.shape)}")
    return dtype, shape


def retyped(context, tensor, dtype, shape):
    tensor = cast(tensor, dtype)
    if tuple(tensor.shape) != tuple(shape):
        tensor = backend().broadcast_to(tensor, list(shape))
    return tensor


def carried_flags(value, dtype, shape):
    """(NumPy scalar?, weak type) of the placeholder that carries `value`, a number before the
    loop, at (dtype, shape): what the body's next iteration sees in NumPy. A Python number
    or bool stays Python's (`s = 0` that the body makes a float is a float; `found = False`
    that a branch sets True is a bool, not np.True_), a NumPy scalar stays one
    (`s += v` rebinds it: in place on a 0-d array, the result was an ndarray); an array
    (`s = s + x[i:i+3]`) is neither."""
    if tuple(shape):
        return False, None
    if is_python_number(value) or type(value) is bool:
        return True, {"i": int, "f": float, "c": complex, "b": bool}.get(np.dtype(dtype).kind)
    return True, None


def rerun_note(context):
    """The traced function's note that a check's error reruns the call eagerly
    (kiln._raising_calls); None where no call reruns (kiln.wrap_numpy's)."""
    driver = context.driver or context.body_driver  # a check in a loop body: carried
    return getattr(getattr(driver, "function", None), "_note_reruns_on_checks", None)


def rerun_where(context, flag, message, op):
    """A check that reruns the call eagerly where the bool 0-d tensor `flag` holds when the
    graph runs: the trace assumed what Python's run does not (rerun_note must not be None)."""
    rerun_note(context)()
    nothing = context.lift(np.zeros(0, np.int64))  # the message names no values
    backend().check_flag(flag, nothing.tensor, message, "", op)


def truth(value):
    """A while loop's test as a bool 0-d tensor (NumPy's truth value of a size-1 array)."""
    if not isinstance(value, TracedArray) or value.size != 1:
        raise CaptureFailed("the loop's test is no longer a traced value after an iteration")
    return cast(backend().reshape(value.tensor, []), "bool")


def unshared_scalars(context, names, values, set_, keep):
    """`best = cur = x[0]`: names holding one NumPy scalar or Python number (immutable, so
    nothing can tell them apart) get an array of their own each, so that a loop can carry them
    apart when it rebinds them to different values (a CaptureFailed before). `keep`: what
    set_ takes for a name left as it is."""
    seen, new = set(), list(values)
    for index, value in enumerate(values):
        if not (isinstance(value, TracedArray) and value._root is None and value._selection is None
                and value.ndim == 0 and (value._scalar or value._weak is not None)):
            continue
        if id(value) in seen:
            clone = TracedArray(context, value.tensor)
            clone._scalar, clone._weak = value._scalar, value._weak
            new[index] = clone
        seen.add(id(value))
    if all(a is b for a, b in zip(new, values)):
        return values
    set_(tuple(a if a is not b else keep for a, b in zip(new, values)))
    return tuple(new)


# `with warnings.catch_warnings(): warnings.simplefilter("ignore")` in a loop body (the
# manager itself: LoopCapture.managed)
_IDEMPOTENT_FILTERS = ("simplefilter", "filterwarnings")


def untraced_effect(function):
    """Why a call statement's effects would not repeat on every iteration of a captured loop
    (None: they are traced): Python functions and methods (their array updates are traced;
    a list, dict or set they change makes the loop run as Python, kiln._loop_escapes), NumPy's
    functions and ufunc methods, and a traced array's methods are."""
    owner = getattr(function, "__self__", None)
    if isinstance(owner, (TracedArray, np.ufunc)) or isinstance(function, np.ufunc):
        return None
    if isinstance(function, types.MethodType):
        function = function.__func__
    if isinstance(function, types.FunctionType) and not is_kiln_code(
            function.__code__.co_filename):
        return None
    module = getattr(function, "__module__", None) or ""
    if module.split(".")[0] == "numpy" and "random" not in module and owner is None:
        return None
    name = getattr(function, "__qualname__", None) or type(function).__name__
    if module == "warnings" and name in _IDEMPOTENT_FILTERS:
        return None  # once or every iteration, the same filter first in the list
    return f"a call whose result is dropped ({name}: its effects would happen once)"
