"""Operators of a traced array with an operand NumPy takes no numbers from: None, a string,
Ellipsis, a sentinel object(), a user's object, a list of strings. NumPy's answer is one of:

- independent of the array's values, decided by types and shapes alone: `x == None` and
  `x == "a"` (NumPy 2) are all-False arrays of x's shape, `x != None` all-True, `x == "a"` on
  NumPy 1.x a Python bool (with its FutureWarning), `x + None` and `x < Plain()` Python's
  TypeError. kiln asks NumPy itself, on a stand-in of x's type, dtype and shape whose values
  do not matter (value_free): a constant in the graph, or the error.
- computed by the operand's own Python code (its __eq__, __rmul__, __array_ufunc__, a
  Fraction, a Decimal; what NumPy hands an ndarray to, or each element as a Python number):
  run eagerly on x's value (a graph break naming it), so that that code gets what NumPy gives
  it and the answer is NumPy's (kiln._tracer_operators' _eager_operator).

Python's comparison of such an object with kiln's tracer (before: `x == None` was Python's
identity answer, False) never decides it."""
import functools
import sys
import warnings

import numpy as np

from ._graph_breaks import is_internal
from ._tracer import TracedArray

# Members by which a class takes part in NumPy's conversion or dispatch (an array-like, a
# sequence NumPy reads the elements of, an object NumPy defers to)
_PROTOCOLS = ("__array_ufunc__", "__array_function__", "__array__", "__array_priority__",
              "__array_interface__", "__array_struct__", "__len__", "__getitem__", "__iter__")

_COMPARISONS = (np.equal, np.not_equal)
_ORDERINGS = (np.less, np.less_equal, np.greater, np.greater_equal)


def _python_methods(ufunc):
    """The methods of Python's operator for `ufunc` on two objects, forward and reflected."""
    if ufunc in _COMPARISONS:
        return ("__eq__", "__ne__")
    if ufunc in _ORDERINGS:
        return ("__lt__", "__le__", "__gt__", "__ge__")
    name = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "truediv",
            np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow",
            np.bitwise_and: "and", np.bitwise_or: "or", np.bitwise_xor: "xor",
            np.left_shift: "lshift", np.right_shift: "rshift"}.get(ufunc)
    return None if name is None else (f"__{name}__", f"__r{name}__")


def _inert(value, methods):
    """Whether Python's operator of a number and `value` is Python's default whatever the
    number: `value`'s class has no method of its own for it (None, Ellipsis, object(), a user's
    class without __eq__: == is identity's False, + a TypeError) and takes no part in NumPy's
    conversion (an ndarray of it is 0-d, of dtype object)."""
    kind = type(value)
    return (not isinstance(value, (int, float, complex, np.generic, TracedArray))
            and not any(hasattr(kind, name) for name in _PROTOCOLS)
            and all(_default_method(value, name) for name in methods))


def _default_method(value, name):
    """Whether `value`'s method `name` is object's, or a built-in type's that leaves every
    number to the other operand: Python 3.12's NoneType has an __eq__ of its own (it answers
    NotImplemented for anything but None), which is Python's default all the same."""
    kind = type(value)
    method = getattr(kind, name, None)
    if method is getattr(object, name, None):
        return True
    if kind.__module__ != "builtins" or type(method) is not type(object.__eq__):
        return False  # a user's method may do anything; built-in slots have no side effects
    return all(method(value, number) is NotImplemented for number in (0, 0.0, np.float64(0)))


def _array_of(value):
    """NumPy's array of a list, tuple, ndarray or NumPy scalar operand; None for others, or
    where NumPy cannot make one (its operator then raises its own error)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    if not isinstance(value, (list, tuple)) or _holds_tracers(value):
        return None
    try:
        return np.asarray(value)
    except Exception:  # noqa: BLE001 - a ragged list: NumPy's operator raises it again
        return None


def _holds_tracers(value):
    return any(isinstance(item, TracedArray)
               or isinstance(item, (list, tuple)) and _holds_tracers(item) for item in value)


def is_value_free(self, other, ufunc):
    """Whether NumPy's answer for `self OP other` depends on types and shapes alone: `other`
    (or each element NumPy makes of it) is inert for the operator, or strings, which NumPy's
    ufuncs have no loop with a number for (== and !=: NumPy 2's all False or all True, 1.x's
    Python bool; others: NumPy's TypeError). A NumPy or Python integer's * repeats a string
    (np.int64(2) * "ab" is "abab"): strings with a scalar, only == and !=."""
    methods = _python_methods(ufunc)
    if methods is None:  # matmul: NumPy's dot products of objects
        return False
    array = _array_of(other)
    if array is None and isinstance(other, (str, bytes)):
        array = np.asarray(other)
    if array is None:
        return _inert(other, methods)
    array = np.asarray(array)
    if array.dtype.kind in "SU":
        return ufunc in _COMPARISONS or not (self._scalar or self._weak is not None)
    if array.dtype.kind in "Mm":  # dates: where NumPy has no loop with x's numbers
        return (ufunc in _COMPARISONS or not (self._scalar or self._weak is not None)) and (
            not _has_loop(ufunc, self.dtype, array.dtype))
    return array.dtype.kind == "O" and all(_inert(item, methods) for item in array.flat)


def _has_loop(ufunc, first, second):
    try:
        ufunc.resolve_dtypes((first, second, None))
    except Exception:  # noqa: BLE001 - NumPy's no-loop and promotion errors
        return False
    return True


def takes_no_numbers(self, other):
    """A list, tuple or array operand of strings, dates or Python objects (`x == ["a", "b"]`,
    `x + [None, 1]`), which kiln's operators would take as an array of numbers: NumPy's answer
    where types decide it, else eager NumPy's (a NumPy integer's * repeats a list of them).
    A Python number leaves lists and tuples to Python (kiln._tracer_operators' _is_operand)."""
    if not isinstance(other, (np.ndarray, np.generic)) and not (
            isinstance(other, (list, tuple)) and self._weak is None):
        return False
    array = _array_of(other)
    return array is not None and np.asarray(array).dtype.kind in "SUOMm"


def _stand_in(self):
    """A value of the type, dtype and shape eager NumPy's has, its values zeros."""
    if self._weak is not None:  # a Python number
        return self._weak(0)
    zero = np.zeros((), self.dtype)
    return zero[()] if self._scalar else np.broadcast_to(zero, self.shape)


NOT_VALUE_FREE = object()


def value_free(self, run):
    """NumPy's answer `run(a stand-in for self)` where is_value_free(): its error, its Python
    or NumPy scalar, or its bool array as a constant the trace knows the value of (Python
    control flow on it needs no graph break). NOT_VALUE_FREE where NumPy's answer is another
    array after all (the empty object array of zeros(0) + None)."""
    result = _warning_at_users_line(run, _stand_in(self))
    if not isinstance(result, np.ndarray):
        return result
    if result.dtype != np.bool_ or result.size and result.any() != result.all():
        return NOT_VALUE_FREE
    fill = bool(result.size and result.flat[0])
    context = self._context
    constant = TracedArray(context, context.constant(fill, np.dtype(bool), result.shape))
    context.known[constant.tensor.id] = functools.partial(np.full, result.shape, fill)
    return constant


def _warning_at_users_line(run, stand_in):
    """run(stand_in), NumPy's warnings (NumPy 1.x's FutureWarning for `x == "a"`) given at the
    line of the user's code, as eager NumPy's are, not at kiln's."""
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = run(stand_in)
        except Exception as raised:  # noqa: BLE001 - NumPy's error, after its warnings
            error = raised
    frame = sys._getframe(1)
    while frame.f_back is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, frame.f_code.co_filename,
                               frame.f_lineno)
    if error is not None:
        raise error
    return result


def ufunc_call(ufunc, inputs):
    """np.equal(x, None), np.add(x, "a"): a ufunc of one traced array and an operand NumPy
    takes no numbers from, NumPy's answer where types and shapes decide it; NOT_VALUE_FREE
    otherwise."""
    traced = [x for x in inputs if isinstance(x, TracedArray)]
    if len(inputs) != 2 or len(traced) != 1:
        return NOT_VALUE_FREE
    self = traced[0]
    other = inputs[1] if inputs[0] is self else inputs[0]
    if not is_value_free(self, other, ufunc):
        return NOT_VALUE_FREE
    return value_free(self, lambda stand_in: ufunc(
        *(stand_in if x is self else x for x in inputs)))


def has_own_array_ufunc(value):
    """An operand with an __array_ufunc__ of its own (not an ndarray's or a tracer's): NumPy's
    ufunc hands it the ndarray."""
    method = getattr(type(value), "__array_ufunc__", None)
    return (method is not None and not isinstance(value, (np.ndarray, np.generic, TracedArray))
            and method is not np.ndarray.__array_ufunc__)


def defers_in_place(value):
    """Whether ndarray's in-place operator gives way to `value` (NumPy's binop_should_defer):
    an object without __array_ufunc__ of a higher __array_priority__ than an ndarray's 0.
    (With __array_ufunc__ = None it does not in place: the ufunc raises NumPy's TypeError.)"""
    kind = type(value)
    if hasattr(kind, "__array_ufunc__"):
        return False
    try:
        return float(getattr(value, "__array_priority__", -1e6)) > 0.0
    except (TypeError, ValueError):
        return False
