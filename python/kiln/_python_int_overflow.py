"""Python's ints do not overflow; a traced Python int (a loop's carried counter or product, a
dynamic int argument) is an int64 in the graph, which wraps: `f = 1; for i in range(1, 31):
f *= i` gave -8764578968847253504 for 30!. Python's +, -, *, **, << and unary - of such ints
check, where the graph runs, that the result is well inside int64's range (its magnitude below
2**62, computed in float64: a bound with room for the float's rounding), and the call reruns
eagerly where it is not: Python's answer. Results of known range (a loop index's i + 1, i * n:
kiln._numpy_api._index_range) need no check."""
import numpy as np

from ._loop_types import rerun_note, rerun_where
from ._tracer import TracedArray, backend, cast

_CHECKED = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply",
            np.power: "power", np.left_shift: "left_shift", np.negative: "negative"}
_BOUND = 2.0 ** 62


def _python_int(value):
    if isinstance(value, TracedArray):
        return value._weak is int
    return type(value) is int


def _magnitude(ufunc, operands, context):
    """|result| of `ufunc` on the operands, in float64 (inf where it is past float64's)."""
    k = backend()
    floats = [cast(value.tensor, "float64") if isinstance(value, TracedArray)
              else context.constant(float(value), np.dtype(np.float64)) for value in operands]
    if ufunc is np.negative:
        return k.abs(floats[0])
    if ufunc is np.left_shift:
        return k.abs(k.multiply(floats[0], k.exp2(floats[1])))
    operation = {np.add: k.add, np.subtract: k.subtract, np.multiply: k.multiply,
                 np.power: k.power}[ufunc]
    return k.abs(operation(*floats))


def checked(ufunc, result, *operands):
    """`result` of Python's operator `ufunc` on `operands`, with the check where they are
    Python ints and one is traced (kiln._tracer_operators)."""
    if (ufunc not in _CHECKED or not isinstance(result, TracedArray) or result._weak is not int
            or not all(map(_python_int, operands))):
        return result
    known = result._range
    if known is not None and max(abs(known[0]), abs(known[1])) < _BOUND:
        return result
    context = result._context
    if rerun_note(context) is None:  # no call reruns (kiln.wrap_numpy's): NumPy's int64
        return result
    k = backend()
    large = k.greater_equal(_magnitude(ufunc, operands, context),
                            context.constant(_BOUND, np.dtype(np.float64)))
    if tuple(large.shape):
        return result
    rerun_where(context, large, f"a Python int's {_CHECKED[ufunc]} past int64's range "
                "(Python's ints do not overflow)", _CHECKED[ufunc])
    return result
