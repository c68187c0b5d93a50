"""NumPy's reductions and scans (sum, prod, max, min, any, all, argmax/argmin, cumsum/cumprod,
ptp, count_nonzero) for _numpy_api.FUNCTIONS. Each takes the TraceContext first, then NumPy's
arguments."""
import numpy as np

from ._memory_layout import c_strides, strides_of
from ._numpy_functions import _NO_VALUE, _as_traced, _k, _result, axis_operand
from ._tracer import call_eagerly, cast, check_dtype, normalize_axis, to_tensor
from ._tracer_types import normalize_reduce_axes


def _accumulation_dtype(dtype):
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "u" and dtype.itemsize < 8:
        return np.dtype(np.uint64)
    return dtype


_IDENTITY = {"sum": 0, "prod": 1, "any": 0, "all": 1}
_UFUNC_NAME = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
               "any": "logical_or", "all": "logical_and"}


def _numpy_rounds_each_step(shape, strides, axes):
    """Whether NumPy's float16 sum or prod over `axes` of an array of `shape` and element
    `strides` rounds to float16 at each step. Its iterator puts the axes in decreasing stride
    order (C order among ties) and merges neighbours that make one stride; the innermost loop
    then either reduces a run of axes in float, rounded once (pairwise for sums), or is an
    elementwise add into the float16 result (HALF_add, numpy/_core/src/umath/loops.c.src).
    Where it is elementwise, or the run leaves reduced axes outside it, the float16 result
    takes the elements (or the runs' float totals) one at a time, rounded each time: far from
    a sum in float rounded once (1000 rows of [0, 10) summed down a column: 56 apart)."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    reduced = [d for d in dims if d in axes]
    if not reduced or 0 in shape:
        return False
    order = sorted(dims, key=lambda d: -abs(strides[d]))
    if order[-1] not in axes:
        return True
    run = [order[-1]]
    for d in reversed(order[:-1]):
        if d not in axes or strides[d] != strides[run[-1]] * shape[run[-1]]:
            break
        run.append(d)
    return len(run) < len(reduced)


def _numpy_laid_out(array, shape, strides):
    """`array`'s values in an array of NumPy's element `strides` (the traced array's layout),
    so that NumPy's call iterates it as it iterates the caller's."""
    low = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    memory = np.empty(high - low + 1, array.dtype)
    laid_out = np.lib.stride_tricks.as_strided(memory[-low:], shape,
                                               [s * array.itemsize for s in strides])
    laid_out[...] = array
    return laid_out


def _float16_steps(context, kind, x, axes, dtype, out, keepdims):
    """NumPy's float16 sum/prod where it rounds at each step (_numpy_rounds_each_step) or casts
    into float16 in buffered chunks (dtype=float16 of another dtype): a graph break, NumPy
    running the reduction on an array of the traced one's layout; None elsewhere."""
    shape = tuple(int(n) for n in x.shape)
    strides = strides_of(x) or c_strides(shape)  # (a layout kiln does not know: C's)
    if x.dtype == np.float16 and not _numpy_rounds_each_step(shape, strides, axes):
        return None
    function = getattr(np, kind)

    def eagerly(array, out=None):
        return function(_numpy_laid_out(array, shape, strides), axis=tuple(axes), dtype=dtype,
                        out=out, keepdims=keepdims)
    result = call_eagerly(eagerly, (x,), {"out": out},
                          f"np.{kind} in float16 (NumPy rounds each step to float16 here)")
    if out is not None:
        return result
    return _result(context, _as_traced(context, result).tensor)  # (a tracer, as np.var reads)


def _reduction(kind):
    def reduce(context, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
               where=True):
        x = _as_traced(context, a)
        k, shape = _k(), x.shape
        axes = normalize_reduce_axes(axis, len(shape), kind)
        if kind in ("sum", "prod"):
            result_dtype = check_dtype(dtype) if dtype is not None else _accumulation_dtype(
                x.dtype)
            if result_dtype == np.float16 and axes and where is True and initial is _NO_VALUE:
                eager = _float16_steps(context, kind, x, axes, dtype, out, keepdims)
                if eager is not None:
                    return eager
        elif kind in ("any", "all"):
            result_dtype = np.dtype(np.bool_)
        else:
            result_dtype = check_dtype(dtype) if dtype is not None else x.dtype
        tensor = x.tensor
        if dtype is not None:
            tensor = cast(tensor, result_dtype)
        # Masked-out elements become the identity; max/min have none, initial stands in.
        fill = _IDENTITY[kind] if kind in _IDENTITY else initial
        if kind in ("max", "min") and initial is _NO_VALUE:
            if where is not True:
                raise ValueError(f"reduction operation '{_UFUNC_NAME[kind]}' does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'")
            if any(shape[d] == 0 for d in axes):
                raise ValueError(f"zero-size array to reduction operation {_UFUNC_NAME[kind]} "
                                 "which has no identity")
        elif kind in ("max", "min") and any(shape[d] == 0 for d in axes):
            # An empty max/min with `initial` is `initial` everywhere (NumPy's reduce).
            reduced = [1 if d in axes else extent for d, extent in enumerate(shape)]
            if not keepdims:
                reduced = [extent for d, extent in enumerate(shape) if d not in axes]
            tensor = context.constant(initial, tensor.dtype, reduced)
            return _result(context, cast(tensor, result_dtype), out)
        if where is not True:
            condition = to_tensor(context, where, np.bool_)
            tensor = k.where(condition, tensor, context.constant(fill, tensor.dtype))
        if axes:
            tensor = getattr(k, kind)(tensor, axes, bool(keepdims))
        if initial is not _NO_VALUE:
            combine = {"sum": k.add, "prod": k.multiply, "max": k.maximum, "min": k.minimum,
                       "any": k.logical_or, "all": k.logical_and}[kind]
            tensor = combine(tensor, context.constant(initial, tensor.dtype))
        return _result(context, cast(tensor, result_dtype), out)
    return reduce


def _arg_reduction(kind):
    def reduce(context, a, axis=None, out=None, *, keepdims=False):
        # of a 0-d array NumPy's result is 0-d, kept dims or not
        keepdims = keepdims and _as_traced(context, a).ndim > 0
        x = axis_operand(context, a, axis)
        if axis is not None:
            axis = normalize_axis(axis, x.ndim, kind)
        # Only the reduced axis must be non-empty: argmax(zeros((0, 3)), axis=1) is fine.
        if (x.size if axis is None else x.shape[axis]) == 0:
            raise ValueError(f"attempt to get {kind} of an empty sequence")
        tensor = getattr(_k(), kind)(x.tensor, axis, bool(keepdims))
        result = _result(context, cast(tensor, np.int64), out)
        if out is None:  # a position along the axis (np.bincount's length: kiln._numpy_binning)
            result._bound = (x.size if axis is None else x.shape[axis]) - 1
        return result
    return reduce


def _scan(kind):
    def scan(context, a, axis=None, dtype=None, out=None):
        x = axis_operand(context, a, axis)
        result_dtype = check_dtype(dtype) if dtype is not None else _accumulation_dtype(x.dtype)
        if result_dtype == np.float16:
            # NumPy's accumulate stores every step in float16 (np.cumsum of 5000 x 0.1 stops
            # at 256.0); kiln's scans keep float32 running values, torch's rule.
            return call_eagerly(getattr(np, kind), (a,), {"axis": axis, "dtype": dtype, "out": out},
                                f"np.{kind} in float16 (NumPy rounds every step to float16)")
        tensor = x.tensor
        if axis is None:
            tensor, axis = _k().reshape(tensor, [-1]), 0
        else:
            axis = normalize_axis(axis, x.ndim, kind)
        tensor = getattr(_k(), kind)(cast(tensor, result_dtype), axis)
        return _result(context, cast(tensor, result_dtype), out, scalar=False)
    return scan


def ptp(context, a, axis=None, out=None, keepdims=False):
    # NumPy's subtract(max, min, out): out= was dropped (the caller's out kept its old values)
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims), out=out)


def count_nonzero(context, a, axis=None, *, keepdims=False):
    return np.sum(np.not_equal(a, 0), axis=axis, keepdims=keepdims)


FUNCTIONS = {
    np.sum: _reduction("sum"), np.prod: _reduction("prod"), np.max: _reduction("max"),
    np.min: _reduction("min"), np.any: _reduction("any"), np.all: _reduction("all"),
    np.argmax: _arg_reduction("argmax"), np.argmin: _arg_reduction("argmin"),
    np.cumsum: _scan("cumsum"), np.cumprod: _scan("cumprod"), np.ptp: ptp,
    np.count_nonzero: count_nonzero,
}
FUNCTIONS[np.amax] = FUNCTIONS[np.max]
FUNCTIONS[np.amin] = FUNCTIONS[np.min]

_UFUNC_REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max,
                     np.minimum: np.min, np.logical_and: np.all, np.logical_or: np.any}
