"""Slices whose bounds move with a captured loop's index: A[i, i+1:], L[j, :j], x[:n-k].

Their shapes change every iteration, so a loop body that takes them cannot be one graph of fixed
shapes. kiln keeps the shapes fixed and moves the bounds into the values (bounded dynamic
shapes, as XLA's dynamic padder does): the slice is the whole axis, in place, with a Window
saying which positions of each axis the slice holds. A window's bounds are affine in the loop
index (Affine: offset + scale * i, tracked through +, - and * by Python ints), so two slices
are known to have the same bounds at trace time, with no run-time check.

Elementwise ufuncs compute on the whole axes (positions outside the window hold values nobody
reads); reductions and products mask the positions outside with the identity (0 for sums and
contractions); x[window] = value writes only the window. Windows of one extent at different
positions (`out[:n-i] += a[i:]`, `x[1:] - x[:-1]` of a shrinking array) meet after one is moved
onto the other (a shifted read). Static slices and elements of a window are
kiln._window_indexing's, and so are slices of fixed length at a loop's index (x[i:i+3]).
NumPy's other functions of windows (np.var, np.cumsum, np.linalg.norm, np.flip ...) are
kiln._window_functions'. Anything else on a window (reshape, shape, iteration, a window leaving
the iteration) has no rule: it is a graph break, and the loop is unrolled as before, which is
slower to compile but exact.
"""
import numpy as np

from ._affine_indices import Affine, difference, extent, is_int, total
from ._clamped_bounds import Clamped, lowest_extent
from ._graph_breaks import materialize
from ._tracer import (TracedArray, _UFuncOutputCastingError, backend, cast, graph_break,
                      to_tensor, traced)

REDUCTIONS = {np.sum: 0, np.mean: 0, np.prod: 1, np.any: False, np.all: True, np.max: None,
               np.min: None}
PRODUCTS = {np.dot, np.inner, np.vdot, np.matmul}


class Window:
    """Per axis of the whole array: None (all of it) or the (start, stop) positions the slice
    holds, each an Affine, a Clamped (kiln._clamped_bounds) or an int."""
    __slots__ = ("bounds",)

    def __init__(self, bounds):
        self.bounds = tuple(bounds)

    def __eq__(self, other):
        return isinstance(other, Window) and self.bounds == other.bounds

    def never_empty(self):
        """Whether every bounded axis holds a position on every iteration (known from the
        loop's bounds): max and min of an empty slice raise in NumPy."""
        for bound in self.bounds:
            if bound is None:
                continue
            if any(isinstance(b, Clamped) for b in bound):
                least = lowest_extent(*bound)
                if least is None or least < 1:
                    return False
                continue
            start, stop = (b if isinstance(b, Affine) else Affine(None, b, 0) for b in bound)
            indices = {id(b.index) for b in (start, stop) if b.scale}
            extent = Affine(start.index if start.scale else stop.index, stop.offset - start.offset,
                            stop.scale - start.scale)
            span = extent.span() if extent.scale else (extent.offset, extent.offset)
            if len(indices) > 1 or span is None or span[0] < 1:
                return False
        return True

    def mask(self, context, shape):
        """Where the window holds positions: a bool tracer of `shape` (right-aligned axes)."""
        k, result = backend(), None
        offset = len(shape) - len(self.bounds)
        for axis, bound in enumerate(self.bounds):
            if bound is None:
                continue
            size = shape[axis + offset]
            positions = traced(context, k.arange(context.anchor(), size, "int64"))
            start, stop = (b if is_int(b) else b.value() for b in bound)
            inside = np.logical_and(positions >= start, positions < stop)
            axes = [1] * len(shape)
            axes[axis + offset] = size
            inside = np.reshape(inside, axes)
            result = inside if result is None else np.logical_and(result, inside)
        return np.broadcast_to(result, tuple(shape))


def is_window_reason(reason):
    """Whether a graph break's reason is one of the windows' rules (they all name them so)."""
    return "loop-varying" in reason


def shifted(context, whole, axis, delta):
    """`whole` with position p of `axis` holding p + delta's element (clamped to the axis; the
    positions that clamp lie outside the window that is moved): a window moved by -delta."""
    if is_int(delta) and delta == 0:
        return whole
    k = backend()
    size = whole.tensor.shape[axis]
    if is_int(delta):  # a slice and a pad: plain loads g++ vectorises
        ndim, amount = len(whole.tensor.shape), min(abs(delta), size)
        part = k.slice(whole.tensor, [(None, None, 1)] * axis +
                       [(amount, size, 1) if delta > 0 else (0, size - amount, 1)] +
                       [(None, None, 1)] * (ndim - axis - 1))
        widths = [(0, 0)] * ndim
        widths[axis] = (0, amount) if delta > 0 else (amount, 0)
        return traced(context, k.pad(part, widths, "constant", 0.0))
    positions = traced(context, k.arange(context.anchor(), size, "int64"))
    moved = np.clip(positions + delta.value(), 0, size - 1)
    return traced(context, k.take(whole.tensor, moved.tensor, axis, check_bounds=False))


def resized(context, whole, axis, size):
    """`whole` cut or padded at the end of `axis` to `size` positions (windows of arrays of
    different lengths meeting: the moved window lies inside the first `size` positions)."""
    have = whole.tensor.shape[axis]
    if have == size:
        return whole
    k, ndim = backend(), len(whole.tensor.shape)
    if have > size:
        return traced(context, k.slice(whole.tensor, [(None, None, 1)] * axis + [(0, size, 1)] +
                                       [(None, None, 1)] * (ndim - axis - 1)))
    widths = [(0, 0)] * ndim
    widths[axis] = (0, size - have)
    return traced(context, k.pad(whole.tensor, widths, "constant", 0.0))


def has_moving_bounds(key):
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(item, slice) and any(isinstance(b, TracedArray)
                                                for b in (item.start, item.stop, item.step))
               for item in items)


def data_bounds_read(key):
    """The key with each slice bound computed from data, not from a captured loop's index
    (`return buf[:count]` after the loop that counted, `x[lo:hi]` of a searched range), as its
    value: NumPy's slice needs the number, so the graph so far runs (a graph break that
    continues). In a loop body being captured it is the graph break that unrolls the loop, as
    before; it ended the whole trace everywhere else, so that the function ran eagerly."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(item, slice) and any(_from_data(b) for b in _bounds(item))
               for item in items):
        return key
    read = tuple(slice(*(_value(b) if _from_data(b) else b for b in _bounds(item)))
                 if isinstance(item, slice) else item for item in items)
    return read if isinstance(key, tuple) else read[0]


def _bounds(item):
    return item.start, item.stop, item.step


def _from_data(bound):
    if not isinstance(bound, TracedArray) or bound._clamped is not None:
        return False
    form = bound._affine
    return form is None or form.index is None


def _value(bound):
    """A bound's NumPy scalar (its type decides NumPy's error for a float or a bool)."""
    return materialize(bound, "a slice bound computed from data (not from a loop's index)")[()]


def unit_slices(key, shape):
    """The key with x[i:i+1] (i a captured loop's index, kept in [0, size) by the loop's
    range) as x[i, None]: NumPy's result, a view of fixed shape. As a window it masks a whole
    axis, which cannot meet a fixed-size one (Floyd-Warshall's D[:, k:k+1] + D[k:k+1, :]
    was unrolled, its iterations fused with recomputation: 15x NumPy's time)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not any(isinstance(item, slice) and has_moving_bounds(item) for item in items):
        return key
    if any(item is Ellipsis or isinstance(item, (list, np.ndarray)) or
           isinstance(item, TracedArray) and item.ndim > 0 for item in items):
        return key  # (an integer next to index arrays would be one of them)
    rewritten, axis, changed = [], 0, False
    for item in items:
        if item is None:
            rewritten.append(item)
            continue
        if isinstance(item, slice) and axis < len(shape) and (
                item.step is None or is_int(item.step) and int(item.step) == 1):
            start, stop = (getattr(b, "_affine", None) if isinstance(b, TracedArray) else None
                           for b in (item.start, item.stop))
            span = start.span() if start is not None and start.index is not None else None
            if (span is not None and stop is not None and stop.index is start.index and
                    stop.scale == start.scale and stop.offset == start.offset + 1 and
                    0 <= span[0] and span[1] < shape[axis]):
                rewritten += [item.start, None]
                changed = True
                axis += 1
                continue
        rewritten.append(item)
        axis += 1
    return tuple(rewritten) if changed else key


def _bound(value, size, default):
    """A slice bound as an int in [0, size] or an Affine (NumPy's negative bounds resolved)."""
    if value is None:
        return default
    if is_int(value):
        value = int(value)
        return min(max(value + size if value < 0 else value, 0), size)
    if isinstance(value, TracedArray) and value._clamped is not None:
        return _clamped_bound(value._clamped)
    form = value._affine if isinstance(value, TracedArray) else None
    span = form.span() if form is not None else None
    if form is None or form.index is None:
        graph_break("a slice bound computed from data (not from a loop's index)")
    if span is not None and span[1] < 0:
        return Affine(form.index, form.offset + size, form.scale)
    if span is None or span[0] < 0:
        graph_break("a loop-varying slice bound whose sign changes over the loop")
    return form


def _clamped_bound(form):
    """A clamped index (max(0, i - k + 1), min(i + w, n)) as a bound: NumPy's own where it
    never goes below zero (past the axis's end, NumPy's and the mask's positions both stop)."""
    span = form.span()
    if (form.low is None or form.low < 0) and (span is None or span[0] < 0):
        graph_break("a loop-varying slice bound whose sign changes over the loop")
    return form


def _split(x, key):
    """(the key with moving slices taken whole, the Window of the result)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if any(item is Ellipsis for item in items):
        graph_break("a loop-varying slice next to an Ellipsis")
    shape = x.tensor.shape
    plain, bounds, axis = [], [], 0
    for item in items:
        if item is None:
            plain.append(None)
            bounds.append(None)
            continue
        if isinstance(item, TracedArray) and item.ndim > 0 or isinstance(item, (list, np.ndarray)):
            graph_break("a loop-varying slice next to an index array")
        if axis >= len(shape):
            raise IndexError("too many indices for array")
        if isinstance(item, slice) and has_moving_bounds(item):
            if item.step is not None and not (is_int(item.step) and int(item.step) == 1):
                graph_break("a loop-varying slice with a step")
            size = shape[axis]
            bounds.append((_bound(item.start, size, 0), _bound(item.stop, size, size)))
            plain.append(slice(None))
        else:
            plain.append(item)
            if isinstance(item, slice):
                bounds.append(None)
        axis += 1
    bounds += [None] * (len(shape) - axis)
    return tuple(plain), Window(bounds)


def getitem(x, key, plain_getitem):
    plain, window = _split(x, key)
    result = plain_getitem(x, plain)
    result._selection = window  # a view stays a view: it still reads through to x
    return result


def whole_and_window(context, value):
    """(the whole-axes tracer, its Window or None) of an operand."""
    if isinstance(value, TracedArray) and isinstance(value._selection, Window):
        return traced(context, value.tensor), value._selection
    return value, None


def _reference(context, operands, ndim, anchored):
    """Per right-aligned axis, the bound the operands' windows are moved to and the length of
    the axis it is a window of: the first operand's when `anchored` (the target of out= or of
    an assignment), else one that starts at 0 where there is one (a shrinking loop's carried
    windows start at 0: x[1:] - x[:-1] then moves one operand, not both and the result
    again)."""
    bounds, sizes = [None] * ndim, [None] * ndim
    for value in operands:
        whole, window = whole_and_window(context, value)
        for axis in range(1, len(window.bounds) + 1 if window is not None else 1):
            bound = window.bounds[-axis]
            if bound is not None and (bounds[-axis] is None or not anchored and
                                      bounds[-axis][0] != 0 and bound[0] == 0):
                bounds[-axis], sizes[-axis] = bound, whole.tensor.shape[-axis]
    return bounds, sizes


def _combine(context, operands, ndim, anchored=False):
    """(the common Window of right-aligned operands, their whole-axes values). Windows of one
    extent at different positions (x[1:] with x[:-1] of a window, out[:n-i] += a[i:]) are moved
    to the positions of one of them (_reference); a graph break where NumPy's shapes would only
    agree on some iterations."""
    bounds, sizes = _reference(context, operands, ndim, anchored)
    wholes = []
    for value in operands:
        whole, window = whole_and_window(context, value)
        shape = tuple(whole.tensor.shape) if isinstance(whole, TracedArray) else np.shape(whole)
        mine = list(window.bounds) if window is not None else [None] * len(shape)
        for axis in range(1, len(shape) + 1):
            bound, size = mine[-axis], shape[-axis]
            if bound is None:
                if size != 1 and any(isinstance(v, TracedArray) and isinstance(v._selection, Window)
                                     and len(v._selection.bounds) >= axis
                                     and v._selection.bounds[-axis] is not None for v in operands):
                    graph_break("a loop-varying slice meets a fixed-size axis")
                continue
            if bounds[-axis] != bound:
                size_here = extent(bound)
                delta = difference(bound[0], bounds[-axis][0])
                if size_here is None or extent(bounds[-axis]) != size_here or delta is None:
                    graph_break("slices with different loop-varying bounds in one operation")
                whole = shifted(context, whole, len(shape) - axis, delta)
            whole = resized(context, whole, len(shape) - axis, sizes[-axis])
        wholes.append(whole)
    return Window(bounds), wholes


def ufunc(call, function, inputs, out, where, dtype, casting):
    """An elementwise ufunc on windows: on the whole axes, the result holding the window."""
    if where is not True or out is not None and (len(out) != 1 or function.signature is not None):
        graph_break(f"{function.__name__} with where= or out= on a loop-varying slice")
    if function.signature is not None:
        return product(np.matmul, *inputs)
    if out is not None:  # x[i:] += y: only the window's positions change
        target = out[0]
        if not (isinstance(target, TracedArray) and isinstance(target._selection, Window)):
            graph_break(f"{function.__name__} of a loop-varying slice into out=")
        result = ufunc(call, function, inputs, None, True, dtype, casting)
        _, (_, result) = _combine(target._context, [target, result], len(target.tensor.shape),
                                  anchored=True)
        if not np.can_cast(result.dtype, target.dtype, casting):
            raise _UFuncOutputCastingError(function, casting, result.dtype, target.dtype, 0)
        inside = target._selection.mask(target._context, tuple(target.tensor.shape))
        target._assign(backend().where(inside.tensor, cast(to_tensor(target._context, result),
                                                           target.dtype), target.tensor))
        return target
    context = next(x for x in inputs if isinstance(x, TracedArray))._context
    ndim = max(np.ndim(x) if not isinstance(x, TracedArray) else len(x.tensor.shape)
               for x in inputs)
    window, wholes = _combine(context, inputs, ndim)
    results = call(function, tuple(wholes), dtype=dtype, casting=casting)
    for result in results if isinstance(results, tuple) else (results,):
        result._selection, result._scalar = window, False
    return results


def identity_outside(context, value, identity):
    """The whole-axes tracer with the positions outside its window set to `identity`."""
    whole, window = whole_and_window(context, value)
    if window is None:
        return whole
    mask = window.mask(context, tuple(whole.tensor.shape))
    return np.where(mask, whole, identity)


def _masked_axis(context, whole, bound, axis):
    """`whole` with zeros outside `bound` along `axis` (unchanged when bound is None)."""
    if bound is None:
        return whole
    ndim = len(whole.tensor.shape)
    bounds = [None] * ndim
    bounds[axis % ndim] = bound
    return np.where(Window(bounds).mask(context, tuple(whole.tensor.shape)), whole, 0)


def reduction(function, a, axis=None, dtype=None, keepdims=False):
    """sum, mean, prod, any, all of a window: the positions outside count as the identity (mean
    divides by the count of positions inside)."""
    context = a._context
    if function in (np.max, np.min):
        if not a._selection.never_empty():
            graph_break(f"{function.__name__} of a loop-varying slice that may be empty")
        kind = a.dtype.kind
        info = np.finfo if kind == "f" else np.iinfo if kind in "iu" else None
        if info is None:
            graph_break(f"{function.__name__} of a loop-varying slice of {a.dtype}")
        extreme = info(a.dtype).min if function is np.max else info(a.dtype).max
        identity = -np.inf if function is np.max and kind == "f" else np.inf if kind == "f" else extreme
        values = identity_outside(context, a, identity)
        result = function(values, axis=axis, keepdims=keepdims)
        return _keep_window(result, a._selection, axis, len(a.tensor.shape), keepdims)
    identity = REDUCTIONS[function]
    values = identity_outside(context, a, identity)
    if function in (np.any, np.all) and values.dtype != np.bool_:
        values = np.where(a._selection.mask(context, tuple(a.tensor.shape)),
                          traced(context, a.tensor) != 0, identity)
    if function is np.mean:  # NumPy's dtype: float or complex kept, integers in float64
        total = np.sum(values, axis=axis, dtype=dtype, keepdims=keepdims)
        count = window_count(a._selection, tuple(a.tensor.shape), axis)
        kept = dtype if dtype is not None else a.dtype if a.dtype.kind in "fc" else np.float64
        result = (total / count).astype(kept)
    else:  # (np.any and np.all take no dtype)
        typed = {} if dtype is None else {"dtype": dtype}
        result = function(values, axis=axis, keepdims=keepdims, **typed)
    return _keep_window(result, a._selection, axis, len(a.tensor.shape), keepdims)


def window_count(window, shape, axis):
    """The count of positions a reduction over `axis` of the window adds up (the reduced axes'
    lengths, a window's clipped to its axis), an int64 scalar: from the bounds, not a sum of
    the mask, which ran over the whole axis on every iteration (sched/trim_loops.h trims
    the sums of values, not of a mask)."""
    ndim, offset = len(shape), len(shape) - len(window.bounds)
    reduced = range(ndim) if axis is None else sorted(
        {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))})
    count = 1
    for position in reduced:
        size = shape[position]
        bound = window.bounds[position - offset] if position >= offset else None
        if bound is None:
            count = count * size
            continue
        start, stop = (min(b, size) if is_int(b) else np.minimum(b.value(), size) for b in bound)
        count = count * np.maximum(stop - start, 0)
    return count if isinstance(count, TracedArray) else np.int64(count)


def _keep_window(result, window, axis, ndim, keepdims):
    """The reduction's result holds the window's bounds of the axes it keeps."""
    if axis is None:
        return result
    reduced = {a % ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    kept = [None if a in reduced else window.bounds[a] for a in range(ndim)
            if keepdims or a not in reduced]
    if any(b is not None for b in kept) and isinstance(result, TracedArray):
        result._selection = Window(kept)
    return result


def product(function, a, b):
    """dot, inner, vdot, matmul of windows (at most 2-D): the contracted positions outside the
    windows are zeros; the result holds the windows of the axes it keeps."""
    context = (a if isinstance(a, TracedArray) else b)._context
    wholes = [whole_and_window(context, v) for v in (a, b)]
    shapes = [tuple(w.tensor.shape) if isinstance(w, TracedArray) else np.shape(w)
              for w, _ in wholes]
    if any(len(s) not in (1, 2) for s in shapes):
        graph_break(f"{function.__name__} of loop-varying slices of more than 2 dimensions")
    bounds = [list(window.bounds) if window is not None else [None] * len(shape)
              for (_, window), shape in zip(wholes, shapes)]
    contracted = (-1, -1) if function is np.inner else (-1, 0 if len(shapes[1]) == 1 else -2)
    if function is np.vdot and (len(shapes[0]) > 1 or len(shapes[1]) > 1):
        graph_break("vdot of 2-D loop-varying slices")
    left, right = bounds[0][contracted[0]], bounds[1][contracted[1]]
    if left != right:  # x[i:] @ y[:n-i]: the right one moved onto the left one, if it can be
        size = extent(left) if left is not None and right is not None else None
        if size is None or extent(right) != size or difference(right[0], left[0]) is None:
            graph_break(f"{function.__name__}: the contracted axes are not the same "
                        f"loop-varying slice")
        axis = contracted[1] % len(shapes[1])
        whole = shifted(context, wholes[1][0], axis, difference(right[0], left[0]))
        wholes[1] = (resized(context, whole, axis, shapes[0][contracted[0]]), wholes[1][1])
        shapes[1] = tuple(wholes[1][0].tensor.shape)
        bounds[1][axis], right = left, left
    # Only the contracted positions need zeros (values outside the other axes' windows land in
    # positions of the result that nobody reads).
    masked = [_masked_axis(context, whole, bound, axis)
              for (whole, _), bound, axis in zip(wholes, (left, right), contracted)]
    rows = _output_window(shapes, bounds, contracted, masked)
    result = function(*masked) if rows is None else _guarded_product(context, masked, *rows)
    kept = [bound for axis, bound in enumerate(bounds[0]) if axis != contracted[0] % len(shapes[0])]
    kept += [bound for axis, bound in enumerate(bounds[1]) if axis != contracted[1] % len(shapes[1])]
    if any(bound is not None for bound in kept) and isinstance(result, TracedArray):
        # Zeros outside the window: then only the positions inside are computed at all
        # (sched/guard_reductions.h skips the sums that are selected away).
        result._selection = Window(kept)
        result = identity_outside(context, result, 0)
        result._selection, result._scalar = Window(kept), False
    return result


def _output_window(shapes, bounds, contracted, masked):
    """(matrix position, its output axis, the bound) of a float matrix-vector product whose
    output axis is a window, or None."""
    if len(shapes[0]) + len(shapes[1]) != 3 or not all(
            isinstance(m, TracedArray) and m.dtype.kind in "fc" for m in masked):
        return None
    matrix = 0 if len(shapes[0]) == 2 else 1
    axis = 1 - contracted[matrix] % 2
    bound = bounds[matrix][axis]
    return None if bound is None else (matrix, axis, bound)


def _guarded_product(context, masked, matrix, axis, bound):
    """The product as a sum of elementwise products, both factors zero outside the output's
    window: then each output outside is a sum of exact zeros, which sched/guard_reductions.h
    does not compute (a BLAS call, or a sum of one guarded factor, would run every row)."""
    vector = masked[1 - matrix]
    shape = tuple(masked[matrix].tensor.shape)
    spread = np.expand_dims(vector, axis)  # along the output axis
    bounds = [None, None]
    bounds[axis] = bound
    inside = Window(bounds).mask(context, shape)
    terms = np.where(inside, masked[matrix], 0) * np.where(inside, spread, 0)
    return np.sum(terms, axis=1 - axis)


def outer(a, b):
    context = (a if isinstance(a, TracedArray) else b)._context
    (left, left_window), (right, right_window) = (whole_and_window(context, v)
                                                  for v in (a, b))
    if any(np.ndim(w) != 1 if not isinstance(w, TracedArray) else len(w.tensor.shape) != 1
           for w in (left, right)):
        graph_break("outer of loop-varying slices that are not vectors")
    result = np.outer(left, right)
    result._selection = Window([w.bounds[0] if w is not None else None
                           for w in (left_window, right_window)])
    return result


def elementwise(implementation, operands):
    """np.where(c, a, b) and np.clip(a, lo, hi) of windows (`np.where(w > t, w, 0).sum()` of
    an expanding window): on the whole axes, the result holding the window, the operands'
    windows combined as a ufunc's are."""
    context = next(x for x in operands if isinstance(x, TracedArray))._context
    ndim = max(np.ndim(x) if not isinstance(x, TracedArray) else len(x.tensor.shape)
               for x in operands)
    window, wholes = _combine(context, operands, ndim)
    result = implementation(*wholes)
    result._selection, result._scalar = window, False
    return result


def setitem(x, key, value, plain_getitem, plain_setitem):
    """x[... moving slices ...] = value: the window's positions of the region take value."""
    plain, window = _split(x, key)
    region = plain_getitem(x, plain)
    context = x._context
    whole, value_window = whole_and_window(context, value)
    shape = tuple(region.tensor.shape)
    if value_window is not None:  # moved to the region's window
        _, (_, whole) = _combine(context, [TracedArray(context, region.tensor, mask=window),
                                           value], len(shape), anchored=True)
    else:
        value_shape = tuple(whole.tensor.shape) if isinstance(whole, TracedArray) else np.shape(whole)
        for axis, bound in enumerate(window.bounds):
            back = len(shape) - axis  # NumPy aligns the value's axes from the right
            if bound is not None and back <= len(value_shape) and value_shape[-back] != 1:
                graph_break("a fixed-size value assigned to a loop-varying slice")
    new = to_tensor(context, whole, region.dtype, "setitem")
    inside = window.mask(context, shape)
    updated = backend().where(inside.tensor, cast(new, region.dtype), region.tensor)
    plain_setitem(x, plain, traced(context, updated))
