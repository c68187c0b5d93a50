"""Tracer implementations of NumPy's products of arrays: cov and corrcoef (NumPy's own Python
code run on tracers), cross, and convolve/correlate, which add up one shifted slice per element
of the shorter operand (at most _SHORT_KERNEL of them; longer ones run eagerly: NumPy's
result, a graph break). Each takes the TraceContext first, then NumPy's arguments."""
import inspect
import operator
import warnings

import numpy as np

from ._numpy_functions import _NO_VALUE, _as_traced, _k, _result, product_dtype
from ._numpy_math import _NUMPY2, _array, _check_vector, _eager, _operand, _stand_in
from ._tracer import cast, normalize_axis

_SHORT_KERNEL = 64    # longest shorter operand of convolve/correlate: one slice per element


# ---- covariance ----

def cov(context, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        *, dtype=None):
    if fweights is not None or aweights is not None:  # NumPy checks their values
        return _eager(np.cov, "np.cov with fweights or aweights", m, y, rowvar, bias, ddof,
                      fweights, aweights, dtype=dtype)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _as_traced(context, m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _as_traced(context, y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*[_stand_in(v) for v in (m, y) if v is not None], np.float64)
    if m.dtype.kind == "c" or np.dtype(dtype).kind == "c":
        return _eager(np.cov, "np.cov of complex values", m, y, rowvar, bias, ddof,
                      dtype=dtype)
    X = np.atleast_2d(m).astype(dtype)
    if not rowvar and (m.ndim != 1 if _NUMPY2 else X.shape[0] != 1):
        X = X.T
    if X.shape[0] == 0:
        return _result(context, context.constant(0, np.float64, (0, 0)), scalar=False)
    if y is not None:
        y = np.atleast_2d(y).astype(dtype)
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = np.concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    # NumPy's mean: a sum, then a division (it must be exact for constant rows).
    half = X.dtype == np.float16  # summed in float32
    total = np.sum(X, axis=1, dtype=np.float64 if X.dtype.kind in "biu" else
                   np.float32 if half else None)
    average = total / X.shape[1]
    average = average.astype(np.float16) if half else average
    fact = X.shape[1] - ddof
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
        fact = 0.0
    X -= average[:, None]
    c = np.dot(X, X.T)
    c *= _operand(context, np.true_divide(1, fact))
    return np.squeeze(c)


def _correlation_coefficients(context, x, y=None, rowvar=True, *, dtype=None):
    if any(_array(v).dtype.kind == "c" for v in (x, y) if v is not None) or (
            dtype is not None and np.dtype(dtype).kind == "c"):
        return _eager(np.corrcoef, "np.corrcoef of complex values", x, y, rowvar,
                      dtype=dtype)
    c = cov(context, x, y, rowvar, dtype=dtype)
    if c.ndim != 2:  # NumPy's diag refuses a 0-d covariance
        return c / c
    stddev = np.sqrt(np.diagonal(c))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return np.clip(c, -1, 1)


if "bias" in inspect.signature(np.corrcoef).parameters:  # NumPy < 2.4
    def corrcoef(context, x, y=None, rowvar=True, bias=_NO_VALUE, ddof=_NO_VALUE, *,
                 dtype=None):
        if bias is not _NO_VALUE or ddof is not _NO_VALUE:
            warnings.warn("bias and ddof have no effect and are deprecated", DeprecationWarning,
                          stacklevel=4)
        return _correlation_coefficients(context, x, y, rowvar, dtype=dtype)
else:
    def corrcoef(context, x, y=None, rowvar=True, *, dtype=None):
        return _correlation_coefficients(context, x, y, rowvar, dtype=dtype)


# ---- cross ----

def cross(context, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    a, b = _as_traced(context, a), _as_traced(context, b)
    if _NUMPY2 and (a.ndim < 1 or b.ndim < 1):
        raise ValueError("At least one array has zero dimension")
    a = np.moveaxis(a, normalize_axis(operator.index(axisa), a.ndim, "cross"), -1)
    b = np.moveaxis(b, normalize_axis(operator.index(axisb), b.ndim, "cross"), -1)
    # The installed NumPy's checks of the vector lengths, asked of NumPy: 2-d vectors are
    # deprecated from 2.0 and an error from 2.5.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.cross(np.zeros(a.shape[-1]), np.zeros(b.shape[-1]))
    for warning in caught:
        warnings.warn(warning.message, warning.category, stacklevel=4)
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    vectors = a.shape[-1] == 3 or b.shape[-1] == 3  # else one number each
    if vectors:
        axisc = normalize_axis(operator.index(axisc), len(shape) + 1, "cross")
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = a.astype(dtype), b.astype(dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    third = a0 * b1 - a1 * b0
    if not vectors:
        return _result(context, cast(third.tensor, dtype), scalar=False)
    if a.shape[-1] == 2:
        first, second = a1 * b[..., 2], -(a0 * b[..., 2])
    elif b.shape[-1] == 2:
        first, second = -(a[..., 2] * b1), a[..., 2] * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        first, second = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    parts = [np.broadcast_to(v.astype(dtype), shape) for v in (first, second, third)]
    return np.moveaxis(np.stack(parts, axis=-1), -1, axisc)


# ---- convolution ----

def _correlate_mode(mode):
    """NumPy's number for `mode` (0 valid, 1 same, 2 full), parsed by NumPy (its errors)."""
    return (len(np.correlate(np.zeros(3), np.zeros(3), mode)) - 1) // 2


def _correlate_vectors(context, longer, shorter, mode, dtype):
    """NumPy's _pyarray_correlate for len(longer) >= len(shorter): output i is
    sum_j padded[i + j] * shorter[j], `longer` zero-padded as the mode says; bool is the
    or of ands (an integer sum, then nonzero) and float16 sums in float32, as NumPy's dot."""
    k = _k()
    n1, n2 = longer.shape[0], shorter.shape[0]
    before, after = {0: (0, 0), 1: (n2 // 2, n2 - n2 // 2 - 1), 2: (n2 - 1, n2 - 1)}[mode]
    compute = product_dtype(dtype)
    x, w = cast(longer.tensor, compute), cast(shorter.tensor, compute)
    if before or after:
        x = k.pad(x, [(before, after)], "constant", 0.0)
    length = n1 - n2 + 1 + before + after
    total = None
    for j in range(n2):
        term = k.multiply(k.slice(x, [(j, j + length, 1)]), k.slice(w, [(j, j + 1, 1)]))
        total = term if total is None else k.add(total, term)
    total = k.not_equal(total, 0.0) if dtype == np.bool_ else cast(total, dtype)
    return _result(context, total, scalar=False)


def correlate(context, a, v, mode="valid"):
    mode = _correlate_mode(mode)
    x, y = _as_traced(context, a), _as_traced(context, v)
    dtype = np.promote_types(x.dtype, y.dtype)
    _check_vector(x)
    _check_vector(y)
    if x.shape[0] == 0:
        raise ValueError("first array argument cannot be empty")
    if y.shape[0] == 0:
        raise ValueError("second array argument cannot be empty")
    if min(x.shape[0], y.shape[0]) > _SHORT_KERNEL or dtype.kind == "c":
        return _eager(np.correlate, "np.correlate of long or complex operands", a, v, mode)
    if x.shape[0] >= y.shape[0]:
        return _correlate_vectors(context, x, y, mode, dtype)
    return np.flip(_correlate_vectors(context, y, x, mode, dtype))  # NumPy's swap, reverted


def convolve(context, a, v, mode="full"):
    x, y = np.atleast_1d(_as_traced(context, a)), np.atleast_1d(_as_traced(context, v))
    if len(x) == 0:
        raise ValueError("a cannot be empty")
    if len(y) == 0:
        raise ValueError("v cannot be empty")
    if len(y) > len(x):
        x, y = y, x
    mode = _correlate_mode(mode)
    _check_vector(x)
    _check_vector(y)
    dtype = np.promote_types(x.dtype, y.dtype)
    if len(y) > _SHORT_KERNEL or dtype.kind == "c":
        return _eager(np.convolve, "np.convolve of long or complex operands", a, v, mode)
    return _correlate_vectors(context, x, np.flip(y), mode, dtype)


FUNCTIONS = {
    np.cov: cov, np.corrcoef: corrcoef, np.cross: cross, np.convolve: convolve,
    np.correlate: correlate,
}
