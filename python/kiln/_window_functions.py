"""NumPy's functions of windows, slices whose bounds move with a captured loop's index
(kiln._windows): np.var of an expanding window, np.cumsum(x[:i]), np.linalg.norm(R[k:, k]),
np.flip(y[:k]) ... each written with the window rules of kiln._windows (reductions that mask
the positions outside, elementwise work on the whole axes); `function` dispatches np.<function>
of a window to them, and any other function of a window is a graph break."""
import numpy as np

from ._affine_indices import is_int, total
from ._tracer import TracedArray, backend, graph_break, traced
from ._windows import (PRODUCTS, REDUCTIONS, Window, elementwise, identity_outside, outer,
                       product, reduction, whole_and_window, window_count)


def nan_mean(a, axis=None, keepdims=False):
    """np.nanmean of a window: the sum of its numbers over their count (no number: NaN, as
    NumPy's 0/0), in NumPy's dtype (a float's own, integers' mean in float64)."""
    if a.dtype.kind not in "fc":
        return reduction(np.mean, a, axis=axis, keepdims=keepdims)
    numbers = ~np.isnan(a)
    total = reduction(np.sum, elementwise(np.where, (numbers, a, 0)), axis=axis,
                      keepdims=keepdims)
    count = reduction(np.sum, numbers, axis=axis, keepdims=keepdims)
    return (total / count).astype(a.dtype)


def difference_along(a, axis=-1):
    """np.diff of a window (n=1): its static slices a[1:] and a[:-1] along the axis, moved onto
    each other (kiln._window_indexing), subtracted, or compared as NumPy compares booleans."""
    ndim = len(a.tensor.shape)
    axis %= ndim
    later = tuple(slice(1, None) if d == axis else slice(None) for d in range(ndim))
    earlier = tuple(slice(None, -1) if d == axis else slice(None) for d in range(ndim))
    operation = np.not_equal if a.dtype == np.bool_ else np.subtract
    return operation(a[later], a[earlier])


def scan(function, a, axis=None, dtype=None):
    """np.cumsum and np.cumprod of a window (`np.cumsum(x[:i])`): the scan of the whole axes
    with the positions outside the window the identity, so that each position inside holds
    the window's running total; the result is that window of it. axis=None of a window of
    several dimensions (flattened: its positions are not the whole array's) breaks the graph."""
    ndim = len(a.tensor.shape)
    if axis is None and ndim != 1:
        graph_break(f"numpy.{function.__name__} of a loop-varying slice of {ndim} dimensions "
                    f"without an axis")
    values = identity_outside(a._context, a, 0 if function is np.cumsum else 1)
    result = function(values, axis=0 if axis is None else axis, dtype=dtype)
    result._selection = a._selection
    return result


def variance(function, a, axis=None, dtype=None, ddof=0, keepdims=False):
    """np.var and np.std of a window (an expanding z-score's `x[:i + 1].std()`): NumPy's two
    passes over the positions inside, the mean, then the squared deviations' sum divided by
    their count less ddof (none left: a division by zero, as NumPy's), in NumPy's dtype."""
    kind = a.dtype.kind
    kept = (np.dtype(dtype) if dtype is not None else a.dtype if kind == "f" else
            np.finfo(a.dtype).dtype if kind == "c" else np.dtype(np.float64))
    values = a if kind in "fc" and dtype is None else a.astype(
        np.result_type(kept, a.dtype) if kind == "c" else kept)
    mean = reduction(np.mean, values, axis=axis, keepdims=True)
    deviation = np.abs(values - mean) if kind == "c" else values - mean
    total = reduction(np.sum, deviation * deviation, axis=axis, keepdims=keepdims)
    count = window_count(a._selection, tuple(a.tensor.shape), axis)
    result = (total / np.maximum(count - ddof, 0)).astype(kept)
    return np.sqrt(result) if function is np.std else result


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm of a window (a Householder vector's `np.linalg.norm(R[k:, k])`): the
    2-norm of vectors and the Frobenius norm of matrices, NumPy's `ord=None`, is the square
    root of the sum of squares over the window's positions; other orders break the graph."""
    if ord is not None:
        graph_break(f"numpy.linalg.norm(ord={ord!r}) of a slice with a loop-varying bound")
    if x.dtype.kind == "c":  # the moduli's squares (a window's .real is no window)
        x = np.abs(x)
    elif x.dtype.kind != "f":  # NumPy's norm computes in float64 from other dtypes
        x = x.astype(np.float64)
    squares = x * x
    return np.sqrt(np.sum(squares, axis=axis, keepdims=keepdims))


def transpose(a, axes=None):
    whole, window = whole_and_window(a._context, a)
    ndim = len(window.bounds)
    order = list(range(ndim))[::-1] if axes is None else [x % ndim for x in axes]
    result = np.transpose(whole, order)
    result._selection = Window([window.bounds[x] for x in order])
    return result


def flip(x, axis=None):
    """np.flip of a window: each bounded axis reversed within its bounds (positions a..b-1
    hold b-1..a), so the window stays where it is; the others flipped whole. Durbin's
    np.flip(y[:k]) made its loop unroll (at n = 800, a 27 MiB graph that ran eagerly)."""
    context, k = x._context, backend()
    whole, window = whole_and_window(context, x)
    ndim = len(whole.tensor.shape)
    axes = range(ndim) if axis is None else [
        int(a) % ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    for axis_here in axes:
        bound = window.bounds[axis_here]
        if bound is None:
            whole = np.flip(whole, axis=axis_here)
            continue
        last = total(total(bound[0], bound[1]), -1)   # a + b - 1
        if last is None:
            graph_break("numpy.flip of a slice with bounds of two loops' indices")
        size = whole.tensor.shape[axis_here]
        positions = traced(context, k.arange(context.anchor(), size, "int64"))
        moved = np.clip((last if is_int(last) else last.value()) - positions, 0,
                        size - 1)
        whole = traced(context, k.take(whole.tensor, moved.tensor, axis_here, check_bounds=False))
    whole._selection = window
    return whole


def function(implementation, args, kwargs):
    """np.<function> on windows: the reductions and products above, else a graph break."""
    allowed = {"axis", "keepdims"} if implementation in (np.max, np.min) else {
        "axis", "dtype", "keepdims"}
    if implementation in REDUCTIONS and set(kwargs) <= allowed:
        return reduction(implementation, *args, **kwargs)
    if implementation in PRODUCTS and len(args) == 2 and not kwargs:
        return product(implementation, *args)
    if implementation is np.outer and len(args) == 2 and not kwargs:
        return outer(*args)
    if ((implementation is np.where and len(args) == 3 or implementation is np.clip
         and len(args) == 3) and not kwargs):
        return elementwise(implementation, args)
    if (implementation is np.count_nonzero and len(args) == 1
            and set(kwargs) <= {"axis", "keepdims"}):  # kiln's count_nonzero, on the window
        return reduction(np.sum, np.not_equal(args[0], 0), **kwargs)
    if implementation is np.nanmean and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        return nan_mean(*args, **kwargs)
    if implementation is np.average and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        return reduction(np.mean, *args, **kwargs)  # no weights: the mean
    if implementation is np.diff and len(args) == 1 and set(kwargs) <= {"axis"}:
        return difference_along(args[0], **kwargs)
    if implementation is np.ptp and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"}:
        return (reduction(np.max, *args, **kwargs) - reduction(np.min, *args, **kwargs))
    if implementation is np.nansum and len(args) == 1 and set(kwargs) <= allowed:
        a = args[0]
        return reduction(np.sum, elementwise(np.where, (np.isnan(a), 0, a)), **kwargs)
    if (implementation in (np.cumsum, np.cumprod) and isinstance(args[0], TracedArray)
            and len(args) <= 2 and set(kwargs) <= {"axis", "dtype"}):
        return scan(implementation, *args, **kwargs)
    if (implementation in (np.var, np.std) and isinstance(args[0], TracedArray) and len(args) == 1
            and set(kwargs) <= {"axis", "dtype", "ddof", "keepdims"}):
        return variance(implementation, *args, **kwargs)
    if (implementation is np.linalg.norm and isinstance(args[0], TracedArray)
            and set(kwargs) <= {"ord", "axis", "keepdims"}):
        return norm(*args, **kwargs)
    if implementation is np.transpose and isinstance(args[0], TracedArray):
        return transpose(*args, **kwargs)
    if (implementation is np.flip and isinstance(args[0], TracedArray) and len(args) <= 2
            and set(kwargs) <= {"axis"}):
        return flip(*args, **kwargs)
    graph_break(f"numpy.{getattr(implementation, '__name__', implementation)} of a slice with a "
                f"loop-varying bound")
