"""NumPy's reductions and scans (sum, prod, max, min, any, all, argmax/argmin, cumsum/cumprod,
ptp, count_nonzero) for _numpy_api.FUNCTIONS. Each takes the TraceContext first, then NumPy's
arguments."""
import numpy as np

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


def _reduction(kind):
    def reduce(context, a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
               where=True):
        x = _as_traced(context, a)
        k, shape = _k(), x.shape
        axes = normalize_reduce_axes(axis, len(shape), kind)
        if kind in ("sum", "prod"):
            result_dtype = check_dtype(dtype) if dtype is not None else _accumulation_dtype(
                x.dtype)
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
