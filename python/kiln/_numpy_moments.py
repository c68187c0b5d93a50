"""np.mean, np.var and np.std in the tracer: float moments through kiln's reductions (Welford
for the variance), and NumPy's own integer arithmetic when an integer dtype is asked for."""
import math

import numpy as np

from ._numpy_functions import _NO_VALUE, _as_traced, _k, _result
from ._numpy_reductions import _reduction
from ._tracer import cast, check_dtype, normalize_axes, to_tensor
from ._tracer_types import check_axis_type


def _mean_dtype(dtype, requested):
    if requested is not None:
        return check_dtype(requested)
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _mask(context, x, where):
    return to_tensor(context, where, np.bool_)


def mean(context, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    x = _as_traced(context, a)
    k = _k()
    check_axis_type(axis)
    axes = normalize_axes(axis, x.ndim, "mean")
    result_dtype = _mean_dtype(x.dtype, dtype)
    if result_dtype.kind in "biu":
        # NumPy sums in the integer dtype asked for (wrapping: int8 data's mean with
        # dtype=np.int8 is its int8 sum over the count), then divides and truncates.
        total = _reduction("sum")(context, x, axis, result_dtype, None, keepdims, where=where)
        count = (math.prod(x.shape[d] for d in axes) if where is True else np.sum(
            np.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims))
        return _result(context, cast(np.true_divide(total, count).tensor, result_dtype), out)
    compute = np.dtype(np.float64) if x.dtype.kind in "biu" else result_dtype
    tensor = cast(x.tensor, compute)
    if where is True:
        if axes:
            tensor = k.mean(tensor, axes, bool(keepdims))
        return _result(context, cast(tensor, result_dtype), out)
    # NumPy's own way, the sum where the mask holds over its count, counted as integers (the
    # builder's masked mean sums the mask cast to float64, which ran 7x slower than a count:
    # azimint_naive's data[in_bin].mean() took 41 ms against NumPy's 6)
    total = _reduction("sum")(context, x, axis, compute, None, keepdims, where=where)
    count = np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims)  # (int64)
    count = count.astype(compute) if hasattr(count, "astype") else compute.type(count)
    return _result(context, cast(np.true_divide(total, count).tensor, result_dtype), out)


def _into(context, tensor, out, root):
    """var's result, or std's (NumPy's last step, sqrt(ret, out=ret), casts by its rule)."""
    if root:
        return _result(context, tensor, out, casting="same_kind", ufunc=np.sqrt)
    return _result(context, tensor, out)


def var(context, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=_NO_VALUE, correction=_NO_VALUE, root=False):
    x = _as_traced(context, a)
    k = _k()
    if correction is not _NO_VALUE:
        ddof = correction
    if mean is not _NO_VALUE and mean is not None:
        return _var_about(context, x, mean, axis, dtype, out, ddof, keepdims, where, root)
    if x.dtype.kind == "c":  # the parts' variances add up to NumPy's (real) one
        real_dtype = None if dtype is None or np.dtype(dtype).kind == "c" else dtype
        total = sum(var(context, _result(context, part(x.tensor)), axis, real_dtype, None, ddof,
                        keepdims, where=where) for part in (k.real, k.imag))
        return _into(context, (np.sqrt(total) if root else total).tensor, out, root)
    axes = normalize_axes(axis, x.ndim, "var")
    check_axis_type(axis)
    result_dtype = _mean_dtype(x.dtype, dtype)
    if result_dtype.kind in "biu":
        return _into(context, _integer_var(context, x, axes, axis, result_dtype, ddof,
                                           keepdims, where, root).tensor, out, root)
    if result_dtype == np.float16 and x.dtype == np.float16:
        # NumPy's own steps in float16 (its mean rounded there, the squares too, so they can
        # overflow to inf where a wider Welford would not): what it returns, inf included
        total = np.sum(x, axis=axis, keepdims=True, where=where)
        count = (math.prod(x.shape[d] for d in axes) if where is True else
                 np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=True))
        mean = np.true_divide(total, count).astype(np.float16)
        return _var_about(context, x, mean, axis, None, out, ddof, keepdims, where, root)
    compute = np.dtype(np.float64) if x.dtype.kind in "biu" else result_dtype
    tensor = cast(x.tensor, compute)
    if where is True and axes:
        tensor = (k.std if root else k.var)(tensor, axes, bool(keepdims), int(ddof))
        return _into(context, cast(tensor, result_dtype), out, root)
    mask = _mask(context, x, where) if where is not True else to_tensor(context, True, np.bool_)
    result = k.masked_var(tensor, mask, axes, bool(keepdims), int(ddof))
    if root:
        result = k.sqrt(result)
    return _into(context, cast(result, result_dtype), out, root)


def _var_about(context, x, mean, axis, dtype, out, ddof, keepdims, where, root):
    """NumPy 2's var/std with mean= given: the squared deviations from that mean (broadcast,
    NumPy's promotion: a float64 mean of float32 data gives float64), summed in `dtype` (float64
    for integer and bool data), over the count less ddof; the result keeps the sum's dtype."""
    normalize_axes(axis, x.ndim, "var")
    check_axis_type(axis)
    if dtype is None and x.dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    deviation = np.subtract(x, mean)
    squares = (np.multiply(deviation, np.conjugate(deviation)).real
               if deviation.dtype.kind == "c" else np.multiply(deviation, deviation))
    total = np.sum(squares, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    if where is True:
        count = math.prod(x.shape[d] for d in normalize_axes(axis, x.ndim, "var"))
    else:
        count = np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims)
    result = np.true_divide(total, np.maximum(count - ddof, 0)).astype(total.dtype)
    if root:
        if result.ndim and result.dtype.kind in "biu":  # NumPy's sqrt(ret, out=ret)
            np.sqrt(np.zeros(1, result.dtype), out=np.zeros(1, result.dtype))
        result = np.sqrt(result).astype(result.dtype)
    return _into(context, result.tensor, out, root)


def _integer_var(context, x, axes, axis, dtype, ddof, keepdims, where, root):
    """NumPy's variance in an integer dtype asked for: the sum, the mean (truncated), the
    deviations and their squares all in integers (wrapping), the last division truncated;
    its std of an array result is NumPy's casting error (sqrt into the integer result)."""
    total = _reduction("sum")

    def count(keep):
        if where is True:
            return math.prod(x.shape[d] for d in axes)
        return np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=keep)
    mean = np.true_divide(total(context, x, axis, dtype, None, True, where=where),
                          count(True)).astype(dtype)
    deviation = np.subtract(x, mean)
    squares = total(context, np.multiply(deviation, deviation), axis, dtype, None, keepdims,
                    where=where)
    result = np.true_divide(squares, np.maximum(count(keepdims) - ddof, 0)).astype(dtype)
    if root:
        if result.ndim:  # NumPy's sqrt(ret, out=ret): a float into the integer array
            np.sqrt(np.zeros(1, dtype), out=np.zeros(1, dtype))
        result = np.sqrt(result).astype(dtype)
    return result


def std(context, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        mean=_NO_VALUE, correction=_NO_VALUE):
    return var(context, a, axis, dtype, out, ddof, keepdims, where=where, mean=mean,
               correction=correction, root=True)


FUNCTIONS = {np.mean: mean, np.var: var, np.std: std}
