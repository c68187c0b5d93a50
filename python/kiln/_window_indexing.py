"""x[key] of a window (kiln._windows) with a key of static slices, integers and None: v[:-1],
v[1:], v[0], v[-1], f[:, None] of an array that shrinks in a loop (kiln._loop_extents) or of a
slice whose bounds move with a loop's index. NumPy's basic indexing of the positions the window
holds: the result keeps the whole axes, its window's bounds the window's moved by the key, as
long as the loop's bounds keep them inside the window on every iteration (else a graph break,
and the loop is unrolled). And x[i:i+K] of a plain array: a view of fixed shape, no window."""
import numpy as np

from ._tracer import TracedArray, backend, graph_break, traced
from ._affine_indices import difference, is_int, lowest, total
from ._clamped_bounds import Clamped, form_of, lowest_extent
from ._windows import Window


def _position(item, start, stop, default):
    """A static index or slice bound of a window's axis as a position of the whole axis: from
    the window's start, or from its stop when negative (NumPy's rule)."""
    if item is None:
        return default
    if is_int(item):
        return total(start, int(item)) if int(item) >= 0 else total(stop, int(item))
    form = item._affine if isinstance(item, TracedArray) else None
    span = form.span() if form is not None and form.index is not None else None
    if span is None or span[0] < 0 <= span[1]:
        graph_break("an index of a loop-varying slice that is not affine in a loop's index "
                    "or changes sign over the loop")
    return total(start, form) if span[0] >= 0 else total(stop, form)


def _ordered(first, second, gap=0):
    """Whether second - first >= gap on every iteration (bounds int, Affine or clamped)."""
    if any(isinstance(form, Clamped) for form in (first, second)):
        least = lowest_extent(first, second)
    else:
        least = lowest(difference(second, first))
    return least is not None and least >= gap


def index_window(x, key, plain_getitem):
    """x[key] of a window x with a key of slices, integers and None (v[:-1], v[1:], v[0],
    f[:, None]): NumPy's basic indexing of the positions the window holds. The result keeps
    the whole axes (a view of x's, so writes through it reach x) with their windows, the slice's
    bounds a window's bounds moved by static amounts."""
    plain, bounds = _whole_axes_key(x, key)
    window = x._selection
    x._selection = None  # indexed as the whole axes it stands for: a view of x
    try:
        result = plain_getitem(x, tuple(plain))
    finally:
        x._selection = window
    if isinstance(result, TracedArray) and any(b is not None for b in bounds):
        result._selection, result._scalar = Window(bounds), False
    return result


def set_window_elements(x, key, value, plain_setitem):
    """x[key] = value of a window x whose key takes one position of each moving axis
    (Householder's `v = R[k:, k].copy(); v[0] += s`): the same assignment to x's whole axes at
    those positions. False where the key keeps a moving axis (kiln._windows.setitem's)."""
    plain, bounds = _whole_axes_key(x, key)
    if any(b is not None for b in bounds):
        return False
    window = x._selection
    x._selection = None
    try:
        plain_setitem(x, tuple(plain), value)
    finally:
        x._selection = window
    return True


def _whole_axes_key(x, key):
    """The key of x's whole axes for `key` of the window x, and the window bounds (None for a
    whole axis) of the axes the result keeps."""
    items = list(key) if isinstance(key, tuple) else [key]
    window, shape = x._selection, tuple(x.tensor.shape)
    if any(item is Ellipsis for item in items):
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        used = sum(item is not None for item in items) - 1
        items[at:at + 1] = [slice(None)] * (len(shape) - used)
    plain, bounds, axis = [], [], 0
    for item in items:
        if item is None:
            plain.append(None)
            bounds.append(None)
            continue
        if axis >= len(shape):
            raise IndexError("too many indices for array")
        bound = window.bounds[axis]
        axis += 1
        is_slice = isinstance(item, slice)
        integer = is_int(item) or (isinstance(item, TracedArray) and item.ndim == 0
                                    and item.dtype.kind in "iu")
        if not (is_slice or integer):
            graph_break("an index array or mask of a loop-varying slice")
        if bound is None:
            plain.append(item)
            if is_slice:
                bounds.append(None)
            continue
        start, stop = bound
        if integer:  # an element the window holds on every iteration
            position = _position(item, start, stop, None)
            if not (_ordered(start, position) and _ordered(position, stop, 1)):
                graph_break("an index of a loop-varying slice that may leave it")
            plain.append(position if is_int(position) else position.value())
            continue
        if item.step is not None and not (is_int(item.step) and int(item.step) == 1):
            graph_break("a slice with a step of a loop-varying slice")
        new = (_position(item.start, start, stop, start), _position(item.stop, start, stop, stop))
        if not (_ordered(start, new[0]) and _ordered(new[1], stop) and _ordered(*new)):
            graph_break("a slice of a loop-varying slice that may reach past it")
        plain.append(slice(None))
        bounds.append(new)
    bounds += window.bounds[axis:]
    return plain, bounds


def _fixed_extent(item, size):
    """(start tracer, extent) of a slice i+a:i+b (same index, unit step; or lo:lo+b of a
    clamped lo = min(max(i - 1, 0), n - 3), kiln._clamped_bounds) that the loop's range keeps
    inside an axis of `size`, or None."""
    if not (isinstance(item, slice) and isinstance(item.start, TracedArray) and
            (item.step is None or is_int(item.step) and int(item.step) == 1)):
        return None
    start, stop = form_of(item.start), form_of(item.stop)
    count = difference(start, stop) if start is not None and stop is not None else None
    if not is_int(count) or -count < 1 or start.index is None:
        return None
    span = start.span()
    if span is None or span[0] < 0 or span[1] - count > size:
        return None
    return item.start, -count


def fixed_extents(x, key, getitem):
    """x[..., i:i+K, ...] (i a captured loop's index, whose range keeps the K positions inside
    the axis): NumPy's result, of fixed shape K, as the positions i + arange(K) taken along the
    axis: a view, writes through it reach x. As a window it masked the whole axis, which cannot
    meet an axis of fixed size: a sliding window (conv2d's inp[:, i:i+K, j:j+K] * w) made the
    loops unroll. None where the key has no such slice."""
    items = list(key) if isinstance(key, tuple) else [key]
    if any(item is Ellipsis or isinstance(item, (list, np.ndarray)) or
           isinstance(item, TracedArray) and item.ndim > 0 for item in items):
        return None
    axis = 0
    for position, item in enumerate(items):
        if item is None:
            continue
        found = _fixed_extent(item, x.shape[axis]) if axis < x.ndim else None
        if found is not None:
            context, k = x._context, backend()
            start, count = found
            steps = traced(context, k.arange(context.anchor(), count, "int64"))
            indices = (start.astype(np.int64) + steps).tensor
            taken = x._make_view(
                k.take(x.tensor, indices, axis, check_bounds=False),
                lambda root: k.take(root, indices, axis, check_bounds=False),
                lambda root, value: k.index_put(root, indices, value, axis, False,
                                                check_bounds=False))
            rest = items[:position] + [slice(None)] + items[position + 1:]
            return getitem(taken, tuple(rest))
        axis += 1
    return None
