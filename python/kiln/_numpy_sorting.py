"""Tracer implementations of NumPy's sorts (sort, argsort, lexsort, partition, argpartition;
ndarray.sort and ndarray.partition in _tracer_operators.py) and of the statistics read from
sorted rows (median, quantile, percentile): kiln's sort ops, an extern sort kernel
(src/extern/sort.h). NumPy's order: NaN after every number; ties keep their positions (a stable
sort, whatever `kind` asks: NumPy leaves the order of ties to the kind). partition and
argpartition are full sorts, a valid partition for every kth (NumPy promises only that the kth
elements are in place and the rest on their sides). Structured `order=` and complex values run
eagerly."""
import operator

import numpy as np

from ._numpy_functions import _as_traced, _k, _result, axis_operand
from ._numpy_math import _eager, _known
from ._tracer import TracedArray, cast, normalize_axes, normalize_axis

_KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def _kind(kind, stable=None):
    if stable is not None and kind is not None:
        raise ValueError("`kind` and `stable` parameters can't be provided at the same time. "
                         "Use only one of them.")
    if kind is not None and (not isinstance(kind, str) or not any(
            name.startswith(kind.lower()[:1]) for name in _KINDS) or not kind):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' (got {kind!r})")


def _sortable(x):
    """Whether kiln sorts x's dtype (real numbers and bool)."""
    return x.dtype.kind in "biuf"


def _prepare(context, a, axis, name):
    """(traced array, axis) for sorting `a` along `axis`; axis None flattens it."""
    x = _as_traced(context, a)
    if axis is None:
        return np.reshape(x, -1), 0
    if name.startswith("arg"):  # argsort/argpartition see a 0-d array as 1-d; sort does not
        x = axis_operand(context, x, axis)
    return x, normalize_axis(operator.index(axis), x.ndim, name)


def _sorted(context, a, axis, kind, order, stable, function, traced, empty):
    """np.sort or np.argsort (`function`): `traced`(tensor, axis) of the operand along its
    axis, `empty`(x) for no elements; complex values and order= run eagerly."""
    _kind(kind, stable)
    x = _as_traced(context, a)
    name = function.__name__
    if order is not None or not _sortable(x):
        return _eager(function, f"np.{name} of complex values or with order=", x, axis=axis,
                      kind=kind, order=order)
    x, axis = _prepare(context, x, axis, name)
    if x.size == 0:
        return empty(x)
    return _result(context, traced(x.tensor, axis), scalar=False)


def sort(context, a, axis=-1, kind=None, order=None, *, stable=None):
    return _sorted(context, a, axis, kind, order, stable, np.sort,
                   lambda tensor, axis: _k().sort(tensor, axis)[0], lambda x: x.copy())


def argsort(context, a, axis=-1, kind=None, order=None, *, stable=None):
    return _sorted(context, a, axis, kind, order, stable, np.argsort, _k().argsort,
                   lambda x: context.lift(np.zeros(x.shape, np.intp)))


def lexsort(context, keys, axis=-1):
    """The last key sorts first: stable sorts by each key from the first on, each of the
    order so far (kiln's sorts are stable)."""
    keys = [_as_traced(context, key) for key in (keys if isinstance(keys, (list, tuple)) else
                                                  list(_as_traced(context, keys)))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(key.shape != keys[0].shape for key in keys):
        raise ValueError("all keys need to be the same shape")
    if axis is None or keys[0].ndim == 0 or any(not _sortable(key) for key in keys):
        return _eager(np.lexsort, "np.lexsort of complex or 0-d keys or with axis=None", keys,
                      axis=axis)
    order = None
    for key in keys:
        if order is not None:
            key = np.take_along_axis(key, order, axis)
        step = np.argsort(key, axis=axis, kind="stable")
        order = step if order is None else np.take_along_axis(order, step, axis)
    return order


def _check_kth(kth, extent):
    """NumPy's checks of kth (an int or a sequence of ints, negative from the end)."""
    kths = np.asarray(kth)
    if kths.dtype.kind not in "iu" and kths.dtype != np.bool_:
        raise TypeError("Partition index must be integer")
    if kths.ndim > 1:
        raise ValueError("kth array must have dimension <= 1")
    for k in np.atleast_1d(kths):
        k = int(k)
        if not -extent <= k < extent:
            raise ValueError(f"kth(={k}) out of bounds ({extent})")


def _partition(function, name, positions):
    def partition(context, a, kth, axis=-1, kind="introselect", order=None):
        x = _as_traced(context, a)
        if order is not None or not _sortable(x):
            return _eager(function, f"np.{name} of complex values or with order=", x, kth,
                          axis=axis, kind=kind, order=order)
        if kind != "introselect":
            raise ValueError(f"select kind must be 'introselect' (got {kind!r})")
        x, along = _prepare(context, x, axis, name)
        if x.size == 0:  # NumPy checks kth only where there is something to partition
            return context.lift(np.zeros(x.shape, np.intp)) if positions else x.copy()
        _check_kth(kth, x.shape[along])
        values, places = _k().sort(x.tensor, along)
        return _result(context, places if positions else values, scalar=False)
    return partition


def median(context, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's median: the mean of the middle one or two of the sorted elements, NaN where a
    slice holds one (NumPy checks the largest, which a sort puts last). Empty slices (NumPy's
    warning and NaN) and out= run eagerly."""
    x = _as_traced(context, a)
    if out is not None or not _sortable(x):
        return _eager(np.median, "np.median with out= or of complex values", x, axis=axis,
                      out=out, overwrite_input=overwrite_input, keepdims=keepdims)
    ordered, n, kept, axes = _sorted_rows(context, x, axis, "median")
    if n == 0:
        return _eager(np.median, "np.median of an empty slice", x, axis=axis,
                      keepdims=keepdims)
    k = _k()
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    middle = _column(ordered, (n - 1) // 2, dtype)
    if n % 2 == 0:  # NumPy's mean of the two: their sum over 2
        middle = k.divide(k.add(middle, _column(ordered, n // 2, dtype)),
                          context.constant(2, dtype))
    if x.dtype.kind == "f":
        middle = k.where(k.isnan(_column(ordered, n - 1, dtype)), context.constant(np.nan, dtype),
                         middle)
    return _result(context, k.reshape(middle, _reduced_shape(x, kept, axes, keepdims)))


def _sorted_rows(context, x, axis, name):
    """(x sorted along the merged `axis` (moved last), n, the kept axes, the reduced axes)."""
    axes = normalize_axes(axis, x.ndim, name)
    kept = [d for d in range(x.ndim) if d not in axes]
    n = 1
    for d in axes:
        n *= x.shape[d]
    k = _k()
    rows = k.reshape(k.transpose(x.tensor, kept + axes), [x.shape[d] for d in kept] + [n])
    return (k.sort(rows, -1)[0] if n else rows), n, kept, axes


def _column(rows, i, dtype):
    """Element i of each sorted row, as `dtype`."""
    shape = list(rows.shape)
    return cast(_k().slice(rows, [(0, extent, 1) for extent in shape[:-1]] + [(i, i + 1, 1)]),
                dtype)


def _reduced_shape(x, kept, axes, keepdims):
    return [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keepdims else \
        [x.shape[d] for d in kept]


def _quantiles(name, scale):
    """np.quantile (scale 1) or np.percentile (scale 100), NumPy's default method ("linear"):
    NumPy's interpolation between the sorted elements around q * (n - 1), NaN where a slice
    holds one. Other methods, weights, traced q, out= and empty slices run eagerly."""
    function = getattr(np, name)

    def quantile(context, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, **more):
        x = _as_traced(context, a)
        known = _known(context, q)  # a constant q the trace knows (np.array([0.1, 0.9]))
        if known is not None:
            q = known
        if x.dtype.kind == "b":  # NumPy's TypeError (no boolean subtraction)
            function(np.zeros(2, x.dtype), q)
        if (out is not None or more or method != "linear" or isinstance(q, TracedArray)
                or x.dtype.kind not in "iuf" or 0 in x.shape):
            return _eager(function, f"np.{name} with out=, weights, another method, a traced q "
                          "or of an empty or complex array", x, q, axis=axis, out=out,
                          overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                          **more)
        # NumPy's errors for q, and the result's dtype (NEP 50 makes it depend on q's type)
        dtype = np.asarray(function(np.zeros(2, x.dtype), q)).dtype
        fractions = np.true_divide(np.asarray(q), scale) if scale != 1 else np.asarray(q)
        rows, n, kept, axes = _sorted_rows(context, x, axis, name)
        k = _k()
        results = []
        for fraction in np.asarray(fractions, np.float64).reshape(-1):
            virtual = fraction * (n - 1)
            below = min(max(int(np.floor(virtual)), 0), n - 1)
            above = min(below + 1, n - 1)
            t = virtual - below
            a, b = _column(rows, below, dtype), _column(rows, above, dtype)
            difference = k.subtract(b, a)
            if t >= 0.5:  # NumPy's _lerp: from the nearer end
                value = k.subtract(b, k.multiply(difference, context.constant(1 - t, dtype)))
            else:
                value = k.add(a, k.multiply(difference, context.constant(t, dtype)))
            if x.dtype.kind == "f":
                value = k.where(k.isnan(_column(rows, n - 1, x.dtype)),
                                context.constant(np.nan, dtype), value)
            results.append(k.reshape(value, [1] + _reduced_shape(x, kept, axes, keepdims)))
        joined = results[0] if len(results) == 1 else k.concatenate(results, 0)
        return _result(context, k.reshape(joined, list(np.shape(fractions))
                                          + _reduced_shape(x, kept, axes, keepdims)))
    return quantile


FUNCTIONS = {
    np.sort: sort, np.argsort: argsort, np.lexsort: lexsort, np.median: median,
    np.quantile: _quantiles("quantile", 1), np.percentile: _quantiles("percentile", 100),
    np.partition: _partition(np.partition, "partition", False),
    np.argpartition: _partition(np.argpartition, "argpartition", True),
}
