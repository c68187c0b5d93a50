"""Tracer implementations of NumPy's searches in sorted arrays (searchsorted, digitize,
interp) and of histogram with integer bins. A search counts comparisons with every element of
the sorted array, so only short ones (_SHORT_SORTED) are traced; histogram follows NumPy's
lib/_histograms_impl.py (its bin edges, its index correction) with np.add.at for the counts,
and its data-dependent errors (a range that is not finite, too many bins) are runtime checks
(kiln._kiln.check_flag). What cannot be traced exactly (long tables, complex values, float16
edges) runs eagerly: NumPy's result, a graph break."""
import operator
import warnings

import numpy as np

from ._numpy_functions import _as_traced, _k, _result
from ._numpy_math import (_array, _check_vector, _eager, _known, _operand, _scalar_result,
                          _take)
from ._loop_types import rerun_note, rerun_where
from ._tracer import TracedArray, cast, materialize_all, to_tensor

try:
    from numpy._core.multiarray import _monotonicity
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import _monotonicity

# NumPy >= 1.26 divides by the range before multiplying by the bin count (histogram).
_HISTOGRAM_DIVIDES = np.lib.NumpyVersion(np.__version__) >= "1.26.0"


def _refuses_colliding_edges():
    """Whether this NumPy raises "Too many bins for data range" for bin edges of the data's range
    that collide (NumPy 1.24 returns what its rounding gives, or an IndexError of its own)."""
    try:
        np.histogram(np.array([1.0, 1.0 + 2.0 ** -52]), 3)
    except ValueError:
        return True
    return False


# Where it does not, np.histogram of the data's range runs as NumPy for data whose edges may
# collide (floats, 64-bit integers, many bins): kiln's checks raise NumPy's newer errors.
_CHECKS_EDGES = _refuses_colliding_edges()
_SHORT_SORTED = 256   # longest sorted array searched by comparing with each of its elements


# ---- searches in sorted arrays ----

def _less(p, q):
    """NumPy's sort order (NaN after everything) as p < q."""
    if np.result_type(p.dtype, q.dtype).kind != "f":
        return p < q
    return (p < q) | (np.isnan(q) & ~np.isnan(p))


def _count_before(context, haystack, needles, right):
    """np.searchsorted(haystack, needles, side) for a sorted 1-d tracer: the number of
    elements before each needle (< it, or <= it on the right), in NumPy's sort order."""
    dtype = np.promote_types(haystack.dtype, needles.dtype)
    haystack = np.reshape(haystack.astype(dtype), (1,) * needles.ndim + haystack.shape)
    needles = np.expand_dims(needles.astype(dtype), -1)
    before = ~_less(needles, haystack) if right else _less(haystack, needles)
    return _result(context, np.sum(before, axis=-1, dtype=np.intp).tensor)


def _side_is_right(side):
    """NumPy parses `side` (its errors): searchsorted([0.], 0., side) is 1 on the right."""
    return int(np.searchsorted(np.zeros(1), 0.0, side=side)) == 1


def searchsorted(context, a, v, side="left", sorter=None):
    right = _side_is_right(side)
    haystack, needles = _as_traced(context, a), _as_traced(context, v)
    dtype = np.promote_types(haystack.dtype, needles.dtype)
    _check_vector(haystack)
    order = None if sorter is None else _known(context, sorter)
    if order is not None:
        order = np.asarray(order)
        # NumPy only notices a bad index where its binary search looks: leave those to it.
        if (order.ndim == 1 and order.dtype.kind in "iu" and order.size == haystack.size
                and (order.size == 0 or 0 <= order.min() and order.max() < order.size)):
            haystack, sorter = haystack[order], None
    if sorter is not None or haystack.size > _SHORT_SORTED or dtype.kind not in "biuf":
        return _eager(np.searchsorted, "np.searchsorted in a long or complex array, or with a "
                      "traced sorter", a, v, side, sorter)
    result = _count_before(context, haystack, needles, right)
    result._bound = haystack.size  # an insertion point, 0 to len(a)
    return result


def _traced_monotonicity(context, bins):
    """NumPy's check of bins (_monotonicity, on the edges as float64) on traced ones: 1
    increasing, -1 decreasing, 0 neither (a 0-d int tensor). Leading repeats of the first edge
    are skipped, the first edge unlike it (or NaN) chooses the direction, and only the pairs
    after it are checked, as NumPy's loop does."""
    edges = bins.astype(np.float64)
    count = edges.shape[0]
    if count < 2:
        return context.lift(np.int64(1))
    differs = edges[1:] != edges[0]
    first = np.argmax(differs) + 1  # the first edge unlike edges[0] (NaN is unlike anything)
    rising = edges[0] < np.take(edges, first)
    after = np.arange(1, count) > first  # pairs (k - 1, k) past it
    falls = np.any((edges[:-1] > edges[1:]) & after)
    climbs = np.any((edges[:-1] < edges[1:]) & after)
    direction = np.where(rising, np.where(falls, 0, 1), np.where(climbs, 0, -1))
    return np.where(np.any(differs), direction, 1)


def digitize(context, x, bins, right=False):
    values = _as_traced(context, x)
    if values.dtype.kind == "c":
        raise TypeError("x may not be complex")
    side = "left" if right else "right"
    # NaN among the bins: NumPy's binary search (its steps, which remember the last key's
    # place) decides where values land; kiln counts the edges before each value, which agrees
    # only on bins sorted with NaN last. Such calls run as NumPy.
    if (isinstance(bins, TracedArray) and bins.ndim == 1 and bins.dtype.kind in "biuf"
            and (bins.dtype.kind != "f" or rerun_note(context) is not None)):
        # Bins of the trace (np.linspace of the data's range): their direction is found when
        # the graph runs, an unordered one raising NumPy's error there.
        if bins.dtype.kind == "f":
            rerun_where(context, np.any(np.isnan(bins)).tensor,
                        "np.digitize's bins hold NaN", "digitize")
        direction = _traced_monotonicity(context, bins)
        _k().check_flag((direction == 0).tensor, context.constant(0, np.dtype(np.int64), (0,)),
                        "bins must be monotonically increasing or decreasing", "", "digitize")
        rising = searchsorted(context, bins, values, side=side)
        if not isinstance(rising, TracedArray):  # long bins: NumPy's result, eagerly
            return rising
        falling = len(bins) - searchsorted(context, bins[::-1], values, side=side)
        result = _result(context, np.where(direction == -1, falling, rising).tensor)
        result._bound = len(bins)
        return result
    edges = np.asarray(materialize_all(bins, "np.digitize with traced bins (NumPy checks that "
                                       "they are monotonic)"))
    direction = _monotonicity(edges)
    if direction == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    if edges.dtype.kind == "f" and np.isnan(edges).any():
        return _eager(np.digitize, "np.digitize with NaN among its bins", x, edges, right)
    if direction == -1:
        result = len(edges) - searchsorted(context, edges[::-1], values, side=side)
    else:
        result = searchsorted(context, edges, values, side=side)
    if isinstance(result, TracedArray):
        result._bound = len(edges)  # a bin number, 0 to len(bins): np.bincount's length
    return result


# Values of these dtypes are at most this: np.bincount(image_u8, minlength=256) has that length.
_DTYPE_BOUNDS = {np.dtype(np.bool_): 1, np.dtype(np.uint8): 255, np.dtype(np.uint16): 65535}


def bincount(context, x, weights=None, minlength=0):
    """np.bincount whose length is minlength whatever the data: non-negative values known to
    be below it (positions from argmin/argmax, bin numbers from np.digitize, uint8 and bool
    data), as one scatter-add (k-means' cluster sizes, an 8-bit image's histogram). Its length
    depends on the data otherwise: NumPy's, eagerly (a graph break)."""
    values = _as_traced(context, x)
    bound = values._bound if values._bound is not None else _DTYPE_BOUNDS.get(values.dtype)
    minlength = operator.index(minlength) if minlength is not None else 0
    w = None if weights is None else _as_traced(context, weights)
    if (bound is None or bound >= minlength or values.ndim != 1
            or not np.can_cast(values.dtype, np.intp, "safe")
            or w is not None and (w.shape != values.shape or w.dtype.kind == "c")):
        return _eager(np.bincount, "np.bincount: its length depends on the data (its values "
                      "are not known to be below minlength)", x, weights, minlength)
    dtype = np.dtype(np.intp if w is None else np.float64)
    counts = _result(context, context.constant(0, dtype, (minlength,)), scalar=False)
    np.add.at(counts, values.astype(np.intp), 1 if w is None else w.astype(np.float64))
    return counts


def _interpolate(context, x, xp, fp, left, right):
    """NumPy's compiled interp (numpy/_core/src/multiarray/compiled_base.c) for float64: the
    interval of each x found by counting the xp <= x."""
    # NumPy's argument errors, in its order: ranks and dtypes, lengths, then left and right.
    np.interp(*[np.zeros((1,) * v.ndim, v.dtype) for v in (
        _array(u) for u in (x, xp, fp))])
    n = np.size(xp)
    if n == 0:
        raise ValueError("array of sample points is empty")
    if np.size(fp) != n:
        raise ValueError("fp and xp are not of the same length.")
    np.interp(0.0, [0.0], [0.0], *[None if isinstance(v, TracedArray) else v
                                   for v in (left, right)])
    if n > _SHORT_SORTED:
        return _eager(np.interp, "np.interp in a long xp", x, xp, fp, left, right)
    x, xp, fp = (_as_traced(context, v).astype(np.float64) for v in (x, xp, fp))

    def fill(value, default):  # NumPy's float(value)
        if value is None:
            return default
        traced = isinstance(value, TracedArray) and value.ndim == 0
        return value.astype(np.float64) if traced else float(value)
    low, high = fill(left, fp[0]), fill(right, fp[n - 1])
    if n == 1:
        return _scalar_result(context, np.where(x < xp[0], low, np.where(x > xp[0], high,
                                                                          fp[0])))
    count = _count_before(context, xp, x, right=True)
    j = np.clip(count - 1, 0, n - 2)
    x0, x1, f0, f1 = (_take(context, v, i) for v, i in ((xp, j), (xp, j + 1), (fp, j),
                                                        (fp, j + 1)))
    slope = (f1 - f0) / (x1 - x0)
    result = slope * (x - x0) + f0
    result = np.where(np.isnan(result), slope * (x - x1) + f1, result)  # the other side
    result = np.where(np.isnan(result) & (f0 == f1), f0, result)
    result = np.where(x0 == x, f0, result)
    result = np.where(count == n, fp[n - 1], result)
    result = np.where(x < xp[0], low, result)
    result = np.where(x > xp[n - 1], high, result)
    return _scalar_result(context, np.where(np.isnan(x), x, result))


def interp(context, x, xp, fp, left=None, right=None, period=None):
    values = _array(fp)
    if values.dtype.kind == "c" or _array(x).dtype.kind == "c":
        return _eager(np.interp, "np.interp of complex values", x, xp, fp, left, right, period)
    if period is None:
        return _interpolate(context, x, xp, fp, left, right)
    xp, period = materialize_all((xp, period), "np.interp with period= sorts xp")
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = abs(period)
    x = _array(x).astype(np.float64)
    xp = np.asarray(xp, dtype=np.float64)
    values = values.astype(np.float64)
    if xp.ndim != 1 or values.ndim != 1:
        raise ValueError("Data points must be 1-D sequences")
    if xp.shape[0] != values.shape[0]:
        raise ValueError("fp and xp are not of the same length")
    x = x % _operand(context, period)
    xp = xp % period
    order = np.argsort(xp)
    xp, values = xp[order], values[order]
    xp = np.concatenate((xp[-1:] - period, xp, xp[0:1] + period))
    values = np.concatenate((values[-1:], values, values[0:1]))
    return _interpolate(context, x, xp, values, None, None)


# ---- histogram ----

_UNSIGNED = {np.dtype(f"i{n}"): np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def _unsigned_subtract(a, b):
    """NumPy's _unsigned_subtract for concrete values: b - a of signed integers wraps into
    their unsigned type."""
    dtype = np.result_type(a, b)
    unsigned = _UNSIGNED.get(dtype)
    if unsigned is None:
        return np.subtract(a, b, dtype=dtype)
    return np.subtract(np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype), casting="unsafe",
                       dtype=unsigned)


class _Bins:
    """np.histogram's bins (NumPy's _get_bin_edges for a number of them): `count`, the `first`
    and `last` edges, `span` = last - first, the `edges`, whether they were `detected` from the
    data's range (every value lies between them, or a check fails), and edge(index) =
    edges[index]."""

    def __init__(self, count, first, last, span, edges, detected, edge):
        self.count, self.first, self.last, self.span = count, first, last, span
        self.edges, self.detected, self.edge = edges, detected, edge


def _linspace(index, first, last, step, bins):
    """np.linspace(first, last, bins + 1)[index]: index * step + first, the last edge `last`;
    the product rounded apart (the where), as NumPy's separate loops round it: kiln's compiler
    would fuse an fma. (NumPy multiplies the other way round where the step is 0, where edges
    collide anyway.)"""
    product = index.astype(first.dtype) * step
    return np.where(index < bins, np.where(np.isnan(product), np.nan, product) + first, last)


def _detected_bins(context, values, bins, op):
    """The bins of data with no range= (NumPy's min, max, +-0.5 when equal, and linspace, all
    traced), in NumPy's dtype for them: the data's float dtype, float64 for integers. NumPy's
    errors for a range that is not finite and for edges that collide are checks that raise
    when the graph runs, named after `op`. An edge is computed again where it is needed: a
    gather from the edges is slower on the CPU."""
    low, high = np.min(values), np.max(values)
    equal = low == high
    if values.dtype.kind == "f":
        _k().check_flag((~(np.isfinite(low) & np.isfinite(high))).tensor,
                        np.stack([low, high]).tensor, "autodetected range of [",
                        "] is not finite", op)
        first, last = np.where(equal, low - 0.5, low), np.where(equal, high + 0.5, high)
        span = last - first
    else:
        if values.dtype.kind == "i":  # last - first wraps into the unsigned type, as NumPy's
            span = np.subtract(high, low, dtype=_UNSIGNED[values.dtype], casting="unsafe")
        else:
            span = high - low
        low, high = low.astype(np.float64), high.astype(np.float64)
        first, last = np.where(equal, low - 0.5, low), np.where(equal, high + 0.5, high)
        span = np.where(equal, 1.0, span.astype(np.float64))
    step = (last - first) / bins
    edges = _linspace(_result(context, _k().arange(context.anchor(), bins + 1, "int64")),
                      first, last, step, bins)
    _k().check_flag(np.any(edges[:-1] >= edges[1:]).tensor,
                    context.constant(bins, np.dtype(np.int64), ()),
                    "Too many bins for data range. Cannot create ", " finite-sized bins.", op)
    return _Bins(bins, first, last, span, edges, True,
                 lambda index: _linspace(index, first, last, step, bins))


def _counts(context, bins, index, values, dtype):
    """np.add.at(np.zeros(bins, dtype), index, values) for an index known to lie in [0, bins):
    one scatter-add, without np.add.at's bounds check (another pass over the data)."""
    zeros = context.constant(0, dtype, (bins,))
    tensor = _k().index_put(zeros, cast(index.tensor, np.int64), to_tensor(context, values, dtype),
                            0, True, check_bounds=False)
    return _result(context, tensor, scalar=False)


def _binning(context, function, a, bins, range, weights):
    """NumPy's _ravel_and_check_weights and _get_bin_edges for a number of bins: the flat
    values and weights and the _Bins; or a string, why NumPy must run `function` eagerly."""
    values = _as_traced(context, a)
    detect = range is None and values.size > 0  # NumPy takes the data's minimum and maximum
    if isinstance(bins, str) or np.ndim(bins) != 0:
        return f"{function} with bin edges or a bin estimator"
    if detect and values.dtype.kind == "f" and values.dtype.itemsize < 4:
        return f"{function} of float16 data without range="
    bins, range = materialize_all((bins, range), f"{function} with traced bins or range")
    if detect and not _CHECKS_EDGES and (values.dtype.kind == "f" or values.itemsize > 4 or
                                         operator.index(bins) > 2 ** 17):
        return f"{function} of the data's range on NumPy {np.__version__} (its edges may collide)"
    if values.dtype == np.bool_:
        warnings.warn(f"Converting input from {values.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=5)
        values = values.astype(np.uint8)
    w = None
    if weights is not None:
        w = _as_traced(context, weights)
        if w.shape != values.shape:
            raise ValueError("weights should have the same shape as a.")
        w = np.ravel(w)
    values = np.ravel(values)
    # NumPy's checks of bins and range, and its bin edges for them, from an empty stand-in.
    edges = np.histogram_bin_edges(np.empty(0, values.dtype), bins, range,
                                   weights=None if w is None else np.empty(0, w.dtype))
    count = operator.index(bins)
    if detect:
        return values, w, _detected_bins(context, values, count, function[3:])
    first, last = (0, 1) if range is None else range
    if first == last:
        first, last = first - 0.5, last + 0.5
    edges = context.lift(edges)
    return values, w, _Bins(count, first, last, _unsigned_subtract(last, first), edges, False,
                            lambda index: _take(context, edges, index))


def histogram_bin_edges(context, a, bins=10, range=None, weights=None):
    binning = _binning(context, "np.histogram_bin_edges", a, bins, range, weights)
    if isinstance(binning, str):
        return _eager(np.histogram_bin_edges, binning, a, bins, range, weights)
    return _result(context, binning[2].edges.tensor, scalar=False)


def histogram(context, a, bins=10, range=None, density=None, weights=None):
    binning = None
    if weights is not None and _array(weights).dtype.kind == "c":
        binning = "np.histogram with complex weights"
    binning = binning or _binning(context, "np.histogram", a, bins, range, weights)
    if isinstance(binning, str):
        return _eager(np.histogram, binning, a, bins, range, density, weights)
    values, w, found = binning
    bins, first, last, span, edges = found.count, found.first, found.last, found.span, found.edges
    if found.detected:
        dtype, keep = edges.dtype, None
        if bins == 1 and values.dtype.kind == "f":  # last - first overflows: NumPy's index of
            _k().check_flag(np.isinf(span).tensor,  # the last value is out of its edges
                            context.constant(np.iinfo(np.int64).min, np.dtype(np.int64), ()),
                            "index ", " is out of bounds for axis 0 with size 2", "histogram",
                            error="IndexError")
    else:
        dtype = np.result_type(np.empty(1, edges.dtype), first)  # of tmp_a - first
        keep = (values >= _operand(context, first)) & (values <= _operand(context, last))
    values = values.astype(edges.dtype)
    shifted = np.subtract(values, _operand(context, first), dtype=dtype)
    if _HISTOGRAM_DIVIDES:
        position = shifted / _operand(context, span) * bins
    else:
        position = shifted * _operand(context, bins / span)
    # The index of each counted value, NumPy's `bins` moved down to the last bin; 0 for the
    # others, and for positions that are not numbers (data that fails a check).
    counted = position >= 0 if keep is None else keep & (position >= 0)
    # int32 where the bins fit (NumPy's intp otherwise; the same integers): AVX2 converts float64
    # to and from int32 four at a time but has no such int64 instruction, so an intp index kept
    # this loop scalar (1M values: 2.7x NumPy's time)
    small = np.int32 if bins < np.iinfo(np.int32).max else np.intp
    index = np.where(counted, np.minimum(position, bins - 1), 0).astype(small)
    # NumPy's correction of the index by one where the division was off at the bin edges
    # (clipped: for data outside the range, which is not counted, they would be out of bounds).
    index = np.clip(index - (values < found.edge(index)), 0, bins - 1)
    index = index + ((values >= found.edge(index + 1)) & (index != bins - 1))
    if w is None:
        counts = _counts(context, bins, index, 1 if keep is None else keep.astype(np.intp),
                         np.dtype(np.intp))
    else:  # NumPy's bincount adds the weights in float64
        weight = w.astype(np.float64)
        counts = _counts(context, bins, index,
                         weight if keep is None else np.where(keep, weight, 0.0),
                         np.dtype(np.float64)).astype(w.dtype)
    edges = _result(context, edges.tensor, scalar=False)
    if density:
        return counts / np.diff(edges).astype(np.float64) / np.sum(counts), edges
    return counts, edges


FUNCTIONS = {np.searchsorted: searchsorted, np.digitize: digitize, np.interp: interp,
             np.histogram: histogram, np.histogram_bin_edges: histogram_bin_edges,
             np.bincount: bincount}
