"""Carried arrays whose shape changes by the same amount every iteration (kiln._loop_capture):
a binomial tree's `v = p * v[:-1] + q * v[1:]`, repeated differences `x = x[1:] - x[:-1]`, a
Schur complement `A = A[1:, 1:] - ...` shrink; `x = np.append(x, value)` grows.

NumPy's shapes differ per iteration, so the loop cannot carry such an array as it is, and
unrolling it traced and compiled every iteration (a 1,000-step tree took 13 s). The loop carries
it at the largest shape it takes instead (its shape before the loop, or after the last iteration
when it grows: padded), with a Window (kiln._windows) over the first extent(i) positions of
each axis that changes, the extent affine in the loop index: the body's slices, ufuncs,
reductions and concatenations work on windows as they do on moving slices, and the body's
result is moved to the next iteration's window (its start back to 0). After the loop the array
is the window's positions at the loop's end. Only for trip counts known at the trace, and only
while no extent goes below zero (the affine extents would no longer be NumPy's).
"""
import numpy as np

from . import _windows
from ._affine_indices import Affine, difference, extent, is_int
from ._branch_capture import _Retype
from ._loop_types import CaptureFailed, retyped, type_of
from ._tracer import TracedArray, backend, cast, traced


class Resizing:
    """A carried variable's kind (like the (dtype, shape) pairs of _loop_capture's retypes):
    its dtype, its shape before the loop and the change of each axis's extent an iteration."""
    __slots__ = ("dtype", "shape", "change")

    def __init__(self, dtype, shape, change):
        self.dtype, self.shape, self.change = dtype, tuple(shape), tuple(change)

    def __eq__(self, other):
        return isinstance(other, Resizing) and (self.dtype, self.shape, self.change) == (
            other.dtype, other.shape, other.change)

    def __repr__(self):
        return f"Resizing({self.dtype}, {self.shape}, {self.change})"

    def whole(self, span):
        """The shape it is carried at over a loop of `span`: each axis's largest extent."""
        return tuple(max(size, size + change * len(span))
                     for size, change in zip(self.shape, self.change))


def probed(trace_at_first_index):
    """The carried variables' kinds after one iteration traced at the loop's first index (a
    Python int; its trace dropped), where they show an array that changes shape; else None.
    A carried array that shrinks (`V = p * V[1:] + ...`) is a window once an iteration has
    shown it (a retype), but a window of the body (`S[:i + 1]`, `np.arange(i + 1)`) met it
    as a fixed-size array before: a graph break. The retrace with these kinds decides."""
    try:
        trace_at_first_index()
    except _Retype as retype:
        if any(isinstance(kind, Resizing) for kind in retype.types.values()):
            return dict(retype.types)
    except CaptureFailed:
        pass
    return None


def initial(array, kind, span):
    """The value before the loop of an array that changes shape, at the shape it is carried at
    (padded with zeros where it grows); made before the body is opened."""
    tensor = cast(array.tensor, kind.dtype)
    if span is None or kind.whole(span) == kind.shape:
        return tensor
    return backend().pad(tensor, [(0, w - s) for w, s in zip(kind.whole(span), kind.shape)],
                         "constant", 0.0)


def by_value(context, tensor, array, kind, index, span, windows, rebound):
    """(initial tensor, placeholder, the array the names are rebound to) of a variable carried
    by value, its names rebound to a new array in the body: an array that changes shape (kind
    Resizing, `tensor` from initial()), as a window of its largest shape, or a view made before
    the loop (`y = X[j]`), which the body must rebind (writes through it would have to reach
    its base: kiln's carried arrays are updated in place through their identity, and a view
    has its base's). Records the slot in `windows` (placeholder id: (Resizing, Window)) and
    `rebound` (placeholder id: (the rebound array, a view?))."""
    window = None
    if isinstance(kind, Resizing):
        window = _window(kind, index, span)
    elif kind is not None:  # a view of another dtype or shape after an iteration
        tensor = retyped(context, tensor, *kind)
    placeholder = context.trace.loop_placeholder(*type_of(tensor))
    value = TracedArray(context, placeholder)
    if window is not None:
        windows[placeholder.id] = (kind, window)
        value._selection = window
    rebound[placeholder.id] = (value, array._root is not None)
    return tensor, placeholder, value


def check_rebound(slot, new, placeholder, name):
    """A variable carried by value may not be written into (NumPy's writes would reach the
    array from before the loop, or a view's base), nor, when it is a view, kept as it is."""
    value, view = slot
    if value._tensor.id != placeholder.id or view and new is value:
        raise CaptureFailed(f"`{name}` is a view made before the loop or changes shape in it, "
                            f"and the loop keeps it or writes into it")


def resizing(placeholder, value):
    """The Resizing kind when one iteration turns the carried `placeholder` into `value`, a
    fresh array of the same rank and other extents (of its dtype or one it promotes to); else
    None."""
    if not isinstance(value, TracedArray) or value._selection is not None:
        return None
    before, after = tuple(placeholder.shape), tuple(value.tensor.shape)
    dtype = np.dtype(value.dtype)
    if (len(before) != len(after) or before == after
            or np.result_type(np.dtype(placeholder.dtype), dtype) != dtype):
        return None
    return Resizing(dtype.name, before, [a - b for a, b in zip(after, before)])


def _window(kind, index, span):
    """The Window of the iteration at `index` (a traced loop index over `span`): positions
    [0, shape + change * k) of each axis that changes, in the k-th iteration."""
    if span is None:
        raise CaptureFailed("an array changes shape in a loop whose trip count is unknown at "
                            "the trace")
    bounds = []
    for size, change in zip(kind.shape, kind.change):
        if change == 0:
            bounds.append(None)
            continue
        if size + change * len(span) < 0:
            raise CaptureFailed("an array shrinks past empty (NumPy's slices stop at empty)")
        if change % span.step:
            raise CaptureFailed("an array changes shape by an amount that is not a multiple of "
                                "the loop's step")
        scale = change // span.step
        bounds.append((0, Affine(index, size - scale * span.start, scale)))
    return _windows.Window(bounds)


def _following(window, kind):
    """The Window of the next iteration."""
    return _windows.Window([None if bound is None else
                            (0, Affine(bound[1].index, bound[1].offset + change, bound[1].scale))
                            for bound, change in zip(window.bounds, kind.change)])


def carried(context, value, window, kind, shape, name):
    """The tensor the loop carries for the body's `value` of a Resizing variable: its
    positions moved to the next iteration's window, of whole axes of `shape`. (Written over the
    carried array inside that window only, it would not be updated in place: it reads other
    positions of it, so sched/in_place.h computes it whole first, a pass more.)"""
    whole = None
    if (isinstance(value, TracedArray) and isinstance(value._selection, _windows.Window) and
            np.dtype(value.dtype).name == kind.dtype):
        whole = _moved(context, value, _following(window, kind), shape)
    if whole is None:
        raise CaptureFailed(f"`{name}` does not change shape by the same amount every "
                            f"iteration")
    return whole.tensor


def _moved(context, value, window, shape):
    """The whole axes of a window `value`, its positions moved to `window`'s of whole axes of
    `shape`; None where the windows differ in more than their starts."""
    whole, bounds = traced(context, value.tensor), value._selection.bounds
    if len(bounds) != len(window.bounds) or len(shape) != len(bounds):
        return None
    for axis, (bound, target) in enumerate(zip(bounds, window.bounds)):
        if bound is None or target is None:
            if bound is not target or whole.tensor.shape[axis] != shape[axis]:
                return None
            continue
        count = extent(bound)
        if count is None or extent(target) != count:
            return None
        whole = _windows.shifted(context, whole, axis, difference(bound[0], target[0]))
        whole = _windows.resized(context, whole, axis, shape[axis])
    return whole


def final(tensor, kind, count):
    """The variable after `count` iterations: the window's positions, a plain array."""
    return backend().slice(tensor, [(0, size + change * count, 1)
                                    for size, change in zip(kind.shape, kind.change)])


def index_range(bounds):
    """(low, high) holding every value a for loop's index over traced bounds takes, from the
    ranges of the bounds (`for j in range(i)` inside `for i in range(n)`: 0 <= j <= n - 2), or
    None where a bound's range is unknown. Slices by j (`A[i, :j]`, LU's and Cholesky's
    triangles) then keep their sign and need no run-time check: without it the outer loop was
    unrolled, LU at n = 200 a 14 MiB kernel that compiled for 48 s and then ran eagerly."""
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
        bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else 1)

    def span(bound):
        if is_int(bound):
            return int(bound), int(bound)
        form = bound._affine if isinstance(bound, TracedArray) else None
        if form is None:  # i * i: the range its operands' give it (_numpy_api._index_range)
            return bound._range if isinstance(bound, TracedArray) else None
        return (form.offset, form.offset) if not form.scale else form.span()
    spans = span(start), span(stop)
    if None in spans or not is_int(step):
        return None
    low, high = ((spans[0][0], spans[1][1] - 1) if int(step) > 0 else
                 (spans[1][0] + 1, spans[0][1]))
    return (low, high) if low <= high else None
