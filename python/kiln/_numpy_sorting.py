"""Tracer implementations of NumPy's sorts (sort, argsort, partition, argpartition, median;
ndarray.sort and ndarray.partition in _tracer_operators.py): kiln's argsort op, an extern sort kernel
(src/extern/sort.h), and a gather of the values at its positions. NumPy's order: NaN after every
number; ties keep their positions (a stable sort, whatever `kind` asks: NumPy leaves the order of
ties to the kind). partition and argpartition are full sorts, a valid partition for every kth
(NumPy promises only that the kth elements are in place and the rest on their sides).
Structured `order=` and complex values run eagerly."""
import operator

import numpy as np

from ._numpy_functions import _as_traced, _k, _result
from ._numpy_math import _eager
from ._tracer import cast, normalize_axes, normalize_axis

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
    return x, normalize_axis(operator.index(axis), x.ndim, name)


def sort(context, a, axis=-1, kind=None, order=None, *, stable=None):
    _kind(kind, stable)
    x = _as_traced(context, a)
    if order is not None or not _sortable(x):
        return _eager(np.sort, "np.sort of complex values or with order=", x, axis=axis,
                      kind=kind, order=order)
    x, axis = _prepare(context, x, axis, "sort")
    if x.size == 0:
        return x.copy()
    return _result(context, _k().sort(x.tensor, axis)[0], scalar=False)


def argsort(context, a, axis=-1, kind=None, order=None, *, stable=None):
    _kind(kind, stable)
    x = _as_traced(context, a)
    if order is not None or not _sortable(x):
        return _eager(np.argsort, "np.argsort of complex values or with order=", x, axis=axis,
                      kind=kind, order=order)
    x, axis = _prepare(context, x, axis, "argsort")
    if x.size == 0:
        return context.lift(np.zeros(x.shape, np.intp))
    return _result(context, _k().argsort(x.tensor, axis), scalar=False)


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
    axes = normalize_axes(axis, x.ndim, "median")
    kept = [d for d in range(x.ndim) if d not in axes]
    n = 1
    for d in axes:
        n *= x.shape[d]
    if n == 0:
        return _eager(np.median, "np.median of an empty slice", x, axis=axis,
                      keepdims=keepdims)
    k = _k()
    rows = k.reshape(k.transpose(x.tensor, kept + axes), [x.shape[d] for d in kept] + [n])
    ordered = k.sort(rows, -1)[0]
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)

    def element(i):
        return cast(k.slice(ordered, [(0, extent, 1) for extent in rows.shape[:-1]]
                            + [(i, i + 1, 1)]), dtype)
    middle = element((n - 1) // 2)
    if n % 2 == 0:  # NumPy's mean of the two: their sum over 2
        middle = k.divide(k.add(middle, element(n // 2)), context.constant(2, dtype))
    if x.dtype.kind == "f":
        middle = k.where(k.isnan(element(n - 1)), context.constant(np.nan, dtype), middle)
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keepdims else \
        [x.shape[d] for d in kept]
    return _result(context, k.reshape(middle, shape))


FUNCTIONS = {
    np.sort: sort, np.argsort: argsort, np.median: median,
    np.partition: _partition(np.partition, "partition", False),
    np.argpartition: _partition(np.argpartition, "argpartition", True),
}
