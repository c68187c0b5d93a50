"""np.argmax and np.argmin of a window (kiln._windows): a slice whose bounds move with a loop's
index, `np.argmax(np.abs(A[k:, k])) + k` (partial pivoting), or an array that shrinks in a
loop. NumPy's result is a position inside the window, counted from its start.

The window's reduced axis is moved to start at position 0 (a shifted read) and the positions
past its extent are filled with a value no element beats (-inf for argmax of floats, the
dtype's least for integers, False for bools). NumPy's rules then hold as they are: the first
of equal values wins (every position inside comes before the filled ones, so a fill equal to
the largest value loses the tie) and so does the first NaN (a fill is never NaN). A window
that may be empty is a graph break (NumPy raises), and so are complex values (their order is
lexicographic) and argmax(axis=None) of more than one dimension.
"""
import numpy as np

from ._tracer import TracedArray, graph_break
from ._tracer_types import normalize_axis
from ._windows import Window, _keep_window, extent, shifted, whole_and_window


def _fill(function, dtype):
    """A value that no element beats in `function`'s order."""
    largest = function is np.argmin
    if dtype.kind == "f":
        return np.inf if largest else -np.inf
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if largest else info.min
    if dtype.kind == "b":
        return largest
    graph_break(f"numpy.{function.__name__} of a loop-varying slice of {dtype}")


def arg_reduction(function, a, axis=None, out=None, *, keepdims=False):
    name = function.__name__
    if out is not None or not isinstance(a, TracedArray):
        graph_break(f"numpy.{name} of a loop-varying slice with out=")
    context = a._context
    whole, window = whole_and_window(context, a)
    ndim = len(whole.tensor.shape)
    if axis is None and ndim != 1:
        graph_break(f"numpy.{name}(axis=None) of a loop-varying slice of more than one "
                    f"dimension")
    reduced = 0 if axis is None else normalize_axis(axis, ndim, name)
    bound = window.bounds[reduced]
    if bound is not None:
        alone = [None] * ndim
        alone[reduced] = bound
        if not Window(alone).never_empty():
            graph_break(f"numpy.{name} of a loop-varying slice that may be empty")
        if extent(bound) is None:  # (a clamped bound's: kiln._clamped_bounds)
            graph_break(f"numpy.{name} of a loop-varying slice of varying length")
        fill = _fill(function, a.dtype)
        whole = shifted(context, whole, reduced, bound[0])  # its start at position 0
        alone[reduced] = (0, extent(bound))
        inside = Window(alone).mask(context, tuple(whole.tensor.shape))
        whole = np.where(inside, whole, np.asarray(fill, a.dtype))
    result = function(whole, axis=axis, keepdims=keepdims)
    return _keep_window(result, window, axis, ndim, keepdims)


def argmax(a, axis=None, out=None, *, keepdims=False):
    return arg_reduction(np.argmax, a, axis, out, keepdims=keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return arg_reduction(np.argmin, a, axis, out, keepdims=keepdims)


FUNCTIONS = {np.argmax: argmax, np.argmin: argmin}
