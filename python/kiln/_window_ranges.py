"""np.arange whose bounds follow a captured loop's index: the stock prices of a binomial tree's
level, `S0 * d ** np.arange(i, -1, -1) * u ** np.arange(0, i + 1)`, in a loop over i.

Its length changes every iteration, so it made the loop unroll (an American option's tree of
200 levels compiled for 4-12 s). Where start and stop are Python ints or affine in one loop's
index (kiln._windows.Affine) and the step a Python int that divides the change of their
difference, the length is affine in the index too: the array is a window (kiln._windows) over
the first `length` positions of an arange of the largest length the loop's bounds give, its
values start + p * step at every position p (those past the window nobody reads); where the
index cancels (np.arange(i, i + 3)) it is a plain array of its fixed length. Elsewhere
(a length that would go below zero, where NumPy's would stay empty; bounds of a loop unknown at
the trace; a dtype= or a float bound) None: np.arange runs as before.
"""
from ._tracer import TracedArray, backend, traced
from ._affine_indices import Affine, difference, is_int
from ._windows import Window


def _form(value):
    """A Python int or the Affine of a traced Python int that follows a loop's index."""
    if is_int(value):
        return int(value)
    if isinstance(value, TracedArray) and value._weak is int and value._affine is not None:
        return value._affine
    return None


def arange(context, start, stop, step, dtype):
    """The window of np.arange(start, stop, step), or None where it is not one."""
    if dtype is not None or not is_int(step) or int(step) == 0:
        return None
    step, forms = int(step), [_form(start), _form(stop)]
    if None in forms:
        return None
    change = difference(forms[1], forms[0])  # stop - start
    if change is None:
        return None
    if not isinstance(change, Affine):  # np.arange(i, i + 3): a length of its own
        return _values(context, start, step, max(0, -(-change // step)))
    if change.scale % step:
        return None
    # ceil((offset + scale * i) / step), scale * i a multiple of step
    length = Affine(change.index, -(-change.offset // step), change.scale // step)
    span = length.span()
    if span is None or span[0] < 0:
        return None
    whole = _values(context, start, step, span[1])
    whole._selection = Window([(0, length)])
    return whole


def _values(context, start, step, count):
    """start + p * step at positions p < count, int64 (NumPy's for int bounds)."""
    whole = traced(context, backend().arange(context.anchor(), count, "int64"))
    if step != 1:
        whole = whole * step
    if not (is_int(start) and int(start) == 0):
        whole = whole + start
    whole._scalar, whole._weak = False, None
    return whole
