"""Python's math functions of traced numbers in a captured loop (`math.sqrt(dx * dx + dy *
dy)`, `math.exp(-beta * dE)`, `if not math.isnan(v):`) and outside loops: each asked float() of
a traced value, a graph break (per iteration in a loop). kiln._loop_transform rewrites such
calls everywhere in the function to the capture helper's math_call, which computes them with
NumPy's ufunc in float64, as the Python float (or bool) they give. Where Python's raises (a
domain error: math.sqrt(-1.0), math.log(0.0); an overflow: math.exp(1000.0), as CPython tells
them: a non-finite result of finite arguments, or NaN of no NaN), a check reruns the call
eagerly, where Python raises. The builtin round(x) of one traced float (`round(x[i] / tick)`)
is one of them: it gives a Python int, as math.floor does (round(x, n) is NumPy's scalar round,
traced by the tracer itself)."""
import functools
import math

import numpy as np

from ._loop_types import rerun_note, rerun_where
from ._tracer import TracedArray, backend, cast, to_tensor

_FLOAT = {math.sqrt: np.sqrt, math.exp: np.exp, math.log: np.log, math.log10: np.log10,
          math.log2: np.log2, math.log1p: np.log1p, math.expm1: np.expm1, math.sin: np.sin,
          math.cos: np.cos, math.tan: np.tan, math.asin: np.arcsin, math.acos: np.arccos,
          math.atan: np.arctan, math.sinh: np.sinh, math.cosh: np.cosh, math.tanh: np.tanh,
          math.fabs: np.fabs, math.atan2: np.arctan2, math.hypot: np.hypot}
_BOOL = {math.isnan: np.isnan, math.isinf: np.isinf, math.isfinite: np.isfinite}
# Python's round(x) of a float: half to even, as np.rint, and a Python int like math.floor's
_INT = {math.floor: np.floor, math.ceil: np.ceil, math.trunc: np.trunc, round: np.rint}
NAMES = frozenset(function.__name__ for function in (*_FLOAT, *_BOOL, *_INT))


def truncated(context, value):
    """int(x) of a traced float: x truncated toward zero, a traced Python int. Where Python's
    would raise (nan, inf) or be past int64 (a bigger int), the call reruns eagerly: Python's
    answer (a histogram's `k = int((v - lo) / width)` was a graph break per element)."""
    k = backend()
    x = cast(np.reshape(value, ()).tensor, "float64")
    bound = context.constant(2.0 ** 63, np.dtype(np.float64))
    fits = k.logical_and(k.less(k.abs(x), bound), k.isfinite(x))
    rerun_where(context, k.logical_not(fits),
                "int() of a float that is not finite or past int64's range", "int")
    return _python_int(context, x)


def _int64_holds(value):
    """A traced bool or integer that int64 holds (uint64 may not)."""
    return isinstance(value, TracedArray) and (
        value.dtype.kind in "bi" or value.dtype.kind == "u" and value.dtype.itemsize < 8)


def _python_int(context, tensor):
    number = TracedArray(context, cast(tensor, "int64"))
    number._scalar, number._weak = True, int
    return number


def _real(value):
    if isinstance(value, TracedArray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    return type(value) in (bool, int, float) or isinstance(value, (np.integer, np.floating))


def math_call(capture, function, args):
    """function(*args), traced where an argument is a traced real number (in a loop being
    captured or not; capture: the LoopCapture) and a failing check can rerun the call;
    Python's otherwise."""
    ufunc = _FLOAT.get(function) or _BOOL.get(function) or _INT.get(function)
    context = capture.context
    if (ufunc is None or ufunc.nin != len(args)
            or not any(isinstance(a, TracedArray) for a in args)
            or not all(map(_real, args)) or rerun_note(context) is None):
        return function(*args)
    if function in _INT and not all(isinstance(a, TracedArray) and a.dtype.kind == "f"
                                    for a in args):
        if len(args) == 1 and _int64_holds(args[0]):  # of an integer: the int itself
            return _python_int(context, to_tensor(context, args[0]))
        return function(*args)
    xs = [TracedArray(context, cast(to_tensor(context, a), "float64")) for a in args]
    result = ufunc(*xs)
    if function in _INT:  # a Python int: the check reruns where it is not finite or past int64
        return truncated(context, result)
    if function in _FLOAT:
        finite = functools.reduce(np.logical_and, [np.isfinite(x) for x in xs])
        unordered = functools.reduce(np.logical_or, [np.isnan(x) for x in xs])
        raises = np.logical_or(np.logical_and(np.isnan(result), np.logical_not(unordered)),
                               np.logical_and(np.isinf(result), finite))
        rerun_where(context, cast(raises.tensor, "bool"),
                    f"math.{function.__name__} raises Python's error here (a domain error or "
                    "an overflow)", "math")
    number = TracedArray(context, result.tensor)
    number._scalar, number._weak = True, float if function in _FLOAT else bool
    return number
