"""Tracer implementations of NumPy's nan-reductions, average, diff, round, trace and diagonal.
Each takes the TraceContext first, then NumPy's arguments. They follow NumPy's own Python code
(numpy/lib/_nanfunctions_impl.py, _function_base_impl.py) composed from NumPy calls on tracers;
its data-dependent errors are checks that raise when the graph runs (kiln._kiln.check_flag)."""
import numpy as np

from ._numpy_functions import _NO_VALUE, _as_traced, _k, _result, read_only_view
from ._tracer import _UFuncOutputCastingError, normalize_axis
from ._tracer_types import check_axis_type, normalize_axes, normalize_axis_tuple


def _finish(context, value, out=None, ufunc=None):
    """A tracer result as NumPy returns it: written into `out`, or a scalar when 0-d. `ufunc`:
    NumPy's last step, which casts into out by its rule (same_kind)."""
    if ufunc is None:
        return _result(context, value.tensor, out)
    return _result(context, value.tensor, out, casting="same_kind", ufunc=ufunc)


# ---- nan-reductions ----

def _replace_nan(context, a, fill):
    """`a` with NaNs replaced by `fill`, and the NaN mask (None: integers and bools have no
    NaNs, and NumPy then just calls the plain function)."""
    x = _as_traced(context, a)
    if x.dtype.kind != "f":
        return x, None
    mask = np.isnan(x)
    return np.where(mask, fill, x), mask


def _check_inexact(dtype, out):
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and out.dtype.kind != "f":
        raise TypeError("If a is inexact, then out must be inexact")


def _nan_accumulation(function, identity):
    """nansum, nanprod (reductions) and nancumsum, nancumprod (scans): NaN counts as the
    identity."""
    def reduce(context, a, *args, **kwargs):
        return function(_replace_nan(context, a, identity)[0], *args, **kwargs)
    return reduce


def _nan_extremum(function, fill):
    def reduce(context, a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
        x, mask = _replace_nan(context, a, fill)
        result = function(x, axis=axis, keepdims=keepdims, initial=initial, where=where)
        # NumPy's fmin/fmax reduction gives NaN for an all-NaN slice; with `initial` there is
        # no such slice (and without it, where= is refused by the plain reduction above).
        if mask is not None and initial is _NO_VALUE:
            result = np.where(np.all(mask, axis=axis, keepdims=keepdims), np.nan, result)
        return _finish(context, result, out)
    return reduce


def _nan_arg_extremum(function, fill):
    """nanargmax, nanargmin: NumPy's ValueError for an all-NaN slice, which depends on the
    data, is a check that raises when the graph runs (kiln returned 0 for such a slice)."""
    def reduce(context, a, axis=None, out=None, *, keepdims=False):
        x, mask = _replace_nan(context, a, fill)
        if mask is not None and mask.size:
            # a count of the values per slice: a sibling of the arg reduction, one read of the
            # data (np.all of the mask took a pass of its own: +30% on a 1000x1000 array)
            empty = np.sum(~mask, axis=axis) == 0
            _k().check_flag(np.any(empty).tensor,
                            context.constant(0, np.int64, (0,)), "All-NaN slice encountered",
                            "", function.__name__.replace("arg", "nanarg"))
        return function(x, axis=axis, out=out, keepdims=keepdims)
    return reduce


def nanmean(context, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    x, mask = _replace_nan(context, a, 0)
    if mask is None:
        return np.mean(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    _check_inexact(dtype, out)
    count = np.sum(~mask, axis=axis, dtype=np.intp, keepdims=keepdims, where=where)
    total = np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    # An all-NaN slice is 0 / 0 = nan, as in NumPy (which also warns).
    return _finish(context, (total / count).astype(total.dtype), out)


def nanvar(context, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=_NO_VALUE, correction=_NO_VALUE):
    if correction is not _NO_VALUE:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    x, mask = _replace_nan(context, a, 0)
    if mask is None:
        return np.var(x, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                      where=where)
    _check_inexact(dtype, out)
    count = np.sum(~mask, axis=axis, dtype=np.intp, keepdims=True, where=where)
    if mean is _NO_VALUE:
        total = np.sum(x, axis=axis, dtype=dtype, keepdims=True, where=where)
        mean = (total / count).astype(total.dtype)
    # NumPy subtracts in place, in the input's dtype.
    deviation = np.where(mask, 0, (x - mean).astype(x.dtype))
    variance = np.sum(deviation * deviation, axis=axis, dtype=dtype, keepdims=keepdims,
                      where=where)
    freedom = np.reshape(count, variance.shape) - ddof
    variance = np.where(freedom <= 0, np.nan, (variance / freedom).astype(variance.dtype))
    return _finish(context, variance, out)


def nanstd(context, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=_NO_VALUE, correction=_NO_VALUE):
    variance = nanvar(context, a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                      correction=correction)
    return _finish(context, np.sqrt(variance), out, np.sqrt)


# ---- average, diff ----

# NumPy 1's average takes weights of a's shape or 1-D ones along one axis (NumPy 2 also N-D
# weights along an axis tuple), and leaves a repeated axis to its sum's error.
_NUMPY_1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def average(context, a, axis=None, weights=None, returned=False, *, keepdims=False):
    x = _as_traced(context, a)
    if axis is None:
        axes = None
    elif _NUMPY_1:  # whose average hands a list axis to mean's C code: its TypeError
        check_axis_type(axis)
        axes = tuple(normalize_axes(axis, x.ndim, "average"))
    else:
        axes = normalize_axis_tuple(axis, x.ndim, "average", "axis")
    if weights is None:
        result = np.mean(x, axis=axes, keepdims=keepdims)
        # NumPy divides a.size by the result's size in Python (ZeroDivisionError when empty).
        scale = context.constant(x.size / result.size, result.dtype, result.shape)
    else:
        w = _as_traced(context, weights)
        if w.shape != x.shape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if _NUMPY_1 and w.ndim != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            if w.shape != tuple(x.shape[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = np.reshape(np.transpose(w, np.argsort(axes)),
                           [x.shape[d] if d in axes else 1 for d in range(x.ndim)])
        floats = ("f8",) if x.dtype.kind in "biu" else ()
        result_dtype = np.result_type(x.dtype, w.dtype, *floats)
        scale = np.sum(w, axis=axes, dtype=result_dtype, keepdims=keepdims)
        # NumPy's ZeroDivisionError for weights summing to 0 depends on the data: a check
        # (kiln gave inf or nan there).
        _k().check_flag(np.any(scale == 0).tensor, context.constant(0, np.int64, (0,)),
                        "Weights sum to zero, can't be normalized", "", "average",
                        error="ZeroDivisionError")
        result = np.sum(np.multiply(x, w, dtype=result_dtype), axis=axes,
                         keepdims=keepdims) / scale
        if returned and scale.shape != result.shape:
            scale = _k().broadcast_to(scale.tensor, list(result.shape))
        else:
            scale = scale.tensor
    result = _finish(context, result)
    return (result, _result(context, scale)) if returned else result


def diff(context, a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    x = _as_traced(context, a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, x.ndim, "diff")
    edge_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]

    def edge(value):  # a scalar prepend/append is one slice along axis
        value = _as_traced(context, value)
        return np.broadcast_to(value, edge_shape) if value.ndim == 0 else value
    parts = ([edge(prepend)] if prepend is not _NO_VALUE else []) + [x] + (
        [edge(append)] if append is not _NO_VALUE else [])
    if len(parts) > 1:
        x = np.concatenate(parts, axis)
    later = (slice(None),) * axis + (slice(1, None),)
    earlier = (slice(None),) * axis + (slice(None, -1),)
    operation = np.not_equal if x.dtype == np.bool_ else np.subtract
    for _ in range(n):
        x = operation(x[later], x[earlier])
    return x


# ---- round ----

def round_(context, a, decimals=0, out=None):
    """NumPy's PyArray_Round: rint(x * 10**d) / 10**d, or rint(x / 10**-d) * 10**-d for d < 0;
    integers are computed in float64 and cast back (decimals >= 0 leaves them as they are)."""
    x = _as_traced(context, a)
    if out is not None and out.size != x.size:
        raise ValueError("invalid output shape")
    integer = x.dtype.kind in "iu"
    if decimals >= 0 and integer:
        return _result(context, x.tensor, out)
    if decimals == 0:
        return _finish(context, np.rint(x), out, np.rint)
    first, second = (np.multiply, np.true_divide) if decimals > 0 else (np.true_divide,
                                                                       np.multiply)
    factor = 10.0 ** abs(decimals) if abs(decimals) <= 308 else np.inf  # as C's pow gives
    target = np.dtype(np.float64) if integer else x.dtype
    scaled = first(x, factor)
    if not np.can_cast(scaled.dtype, target, "same_kind"):  # bool: NumPy's own error
        raise _UFuncOutputCastingError(first, "same_kind", scaled.dtype, target, 0)
    rounded = second(np.rint(scaled), factor)
    return _finish(context, rounded.astype(x.dtype) if integer else rounded, out,
                   None if integer else second)


# ---- diagonal, trace ----

def diagonal(context, a, offset=0, axis1=0, axis2=1):
    """Index arithmetic: axis1, axis2 moved last and merged into one of n*m elements, of which
    the diagonal is a strided slice. A read-only view, as in NumPy: it follows later writes to
    `a`."""
    x = _as_traced(context, a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    first, second = (normalize_axis(d, x.ndim, "diagonal") for d in (axis1, axis2))
    if first == second:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = int(offset)
    n, m = x.shape[first], x.shape[second]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    k = _k()
    rest = [d for d in range(x.ndim) if d not in (first, second)]
    window = (start, start + (length - 1) * (m + 1) + 1, m + 1) if length else (0, 0, 1)

    def forward(root):
        merged = k.reshape(k.transpose(root, rest + [first, second]),
                           [x.shape[d] for d in rest] + [n * m])
        return k.slice(merged, [(None, None, 1)] * len(rest) + [window])
    return read_only_view(x, forward)


def trace(context, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return np.sum(diagonal(context, a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


FUNCTIONS = {
    np.nansum: _nan_accumulation(np.sum, 0), np.nanprod: _nan_accumulation(np.prod, 1),
    np.nancumsum: _nan_accumulation(np.cumsum, 0),
    np.nancumprod: _nan_accumulation(np.cumprod, 1),
    np.nanmax: _nan_extremum(np.max, -np.inf), np.nanmin: _nan_extremum(np.min, np.inf),
    np.nanargmax: _nan_arg_extremum(np.argmax, -np.inf),
    np.nanargmin: _nan_arg_extremum(np.argmin, np.inf),
    np.nanmean: nanmean, np.nanvar: nanvar, np.nanstd: nanstd,
    np.average: average, np.diff: diff, np.round: round_, np.around: round_,
    np.diagonal: diagonal, np.trace: trace,
}
