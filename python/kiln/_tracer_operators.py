"""TracedArray's ndarray methods and Python operators: each forwards to the NumPy function or
ufunc NumPy's own ndarray uses, so the tracer's ufunc and function tables handle them."""
import operator
import sys

import numpy as np

from . import (_assumed_numbers, _numpy_api, _numpy_functions, _object_operands,
               _python_int_overflow)
from ._graph_breaks import callee_instruction, instructions, is_internal, is_kiln_code
from ._loop_peeling import watch_result
from ._memory_layout import base_of, flags_of, strides_of
from ._tracer import (TracedArray, backend, call_eagerly, converted, graph_break, materialize,
                      to_tensor, user_location, weak_type)


def _method(function_name):
    def method(self, *args, **kwargs):
        return getattr(np, function_name)(self, *args, **kwargs)
    method.__name__ = function_name
    return method


# -- values the trace cannot know: print(x), f"{x:.3f}" and hash(s) show eager NumPy's value on
# every call (a graph break: the function is traced, and so prints, again on each call) --

def _printable(self, reason="printing or formatting a traced value"):
    """The value the user's code would hold: an ndarray, a NumPy scalar or a Python number."""
    value = materialize(self, reason)
    if self._weak is not None:  # a Python number: repr(0.5), not np.float64(0.5)
        return self._weak(value[()])
    return value[()] if self._scalar else value


def _hash(self):
    if not self._scalar:
        raise TypeError("unhashable type: 'numpy.ndarray'")
    return hash(_printable(self))   # a NumPy or Python scalar: by its value


def _repr(self):
    """repr() from the user's code (print of a tuple or list of arrays, f"{x!r}", a logger's
    %r) is NumPy's value's, as str() is; kiln's own messages keep the tracer's description."""
    if is_kiln_code(sys._getframe(1).f_code.co_filename):
        return TracedArray.traced_repr(self)
    return repr(_printable(self))


TracedArray.__str__ = lambda self: str(_printable(self))
TracedArray.__repr__ = _repr
TracedArray.__format__ = lambda self, spec: format(_printable(self), spec)
TracedArray.__hash__ = _hash
# pickle.dumps(x), a multiprocessing queue's put: the bytes of the value (a PicklingError
# naming no line before)
TracedArray.__reduce_ex__ = lambda self, protocol: _printable(
    self, "pickling a traced value").__reduce_ex__(protocol)


# -- methods that take NumPy's function's arguments another way --

def _reshape(self, *shape, order="C", copy=None):
    if len(shape) == 1 and (isinstance(shape[0], (tuple, list))
                            or getattr(shape[0], "ndim", None) == 1):  # x.reshape(shape_array)
        shape = tuple(shape[0])
    return np.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return np.transpose(self, axes if axes else None)


TracedArray.reshape, TracedArray.transpose = _reshape, _transpose
TracedArray.flatten = lambda self, order="C": np.ravel(self, order=order).copy()
TracedArray.__copy__ = lambda self: self.copy()
TracedArray.__deepcopy__ = lambda self, memo: self.copy()


# -- in-place methods: the function's result assigned to the array --

def _sort(self, axis=-1, kind=None, order=None):
    """In place, as ndarray.sort: np.sort's result assigned (_numpy_sorting.py)."""
    self._assign(to_tensor(self._context, np.sort(self, axis=axis, kind=kind, order=order),
                           self.dtype, "sort"))


def _partition(self, kth, axis=-1, kind="introselect", order=None):
    self._assign(to_tensor(self._context, np.partition(self, kth, axis, kind, order),
                           self.dtype, "partition"))


def _put(self, indices, values, mode="raise"):
    np.put(self, indices, values, mode)


def _compress(self, condition, axis=None, out=None):
    return np.compress(condition, self, axis, out)


# ndarray members without a traced form. The memory of a traced value is kiln's (NumPy's
# depends on how each intermediate was made, and a pointer to it reaches no array of the
# caller's): x.ctypes, x.data, x.__array_interface__ and x.setflags run the call eagerly (a graph
# break: NumPy's objects, writes through them reaching the arrays), as do the flags and base
# of an array whose NumPy layout kiln does not follow (kiln._memory_layout). Methods run eagerly
# on the value, an in-place one's change written back (call_eagerly).
# Its strides are NumPy's where kiln knows its layout (kiln._memory_layout); reading them
# where it does not is a graph break, as the flags are.
_LAYOUT = frozenset(["flags", "ctypes", "data", "setflags"])
# Members NumPy's C code looks up on any object it converts (np.asarray(x) probes them, then
# takes __array__): missing unless the user's own code reads them.
_INTERFACES = frozenset(["__array_interface__", "__array_struct__"])


def _read_by_user(name):
    """Whether the user's code reads the member `name` itself (x.__array_interface__,
    getattr(x, name), hasattr(x, name)), not NumPy's C code probing an object it converts."""
    frame = sys._getframe(2)  # the caller of __getattr__
    if is_internal(frame.f_code.co_filename):
        return False
    listing = instructions(frame.f_code)
    at = max((instruction for instruction in listing if instruction.offset <= frame.f_lasti),
             key=lambda instruction: instruction.offset, default=None)
    if at is not None and at.opname in ("LOAD_ATTR", "LOAD_METHOD") and at.argval == name:
        return True
    callee = callee_instruction(frame.f_code, frame.f_lasti)
    return callee is not None and callee.argval in ("getattr", "hasattr")


def _missing_member(self, name):
    if name == "strides":
        strides = strides_of(self)
        if strides is None:
            graph_break("x.strides of an array whose NumPy layout kiln does not follow: the "
                        "call runs eagerly")
        return tuple(int(s) * self.itemsize for s in strides)
    if name == "base":
        return base_of(self)
    flags = flags_of(self) if name == "flags" else None
    if flags is not None:
        return flags
    if name in _LAYOUT or name in _INTERFACES and _read_by_user(name):
        graph_break(f"x.{name} describes the memory of an array, which kiln's trace does not "
                    "hold: the call runs eagerly")
    if name == "resize":
        raise TypeError(f"kiln: x.resize at {user_location()} changes the shape of an array in "
                        "place, which a traced array cannot: use np.resize(x, shape)")
    if name.startswith("_") or not callable(getattr(np.ndarray, name, None)):
        raise AttributeError(f"'TracedArray' object has no attribute '{name}'")

    def method(*args, **kwargs):
        return _numpy_api.call_eagerly(lambda array, *a, **k: getattr(array, name)(*a, **k),
                                       (self,) + args, kwargs, f"ndarray.{name}")
    return method


class _FlatView:
    """x.flat of a tracer: indexing the flattened array, writes going through to x."""

    def __init__(self, array):
        self._array = array

    def __len__(self):
        return self._array.size

    def _flat(self):  # a view whatever the layout: x.flat indexes x's own elements
        return _numpy_functions.reshape_view(self._array, [self._array.size])

    def __iter__(self):
        return iter(self._flat())

    def __getitem__(self, key):
        return self._flat()[key]

    def __setitem__(self, key, value):
        self._flat()[key] = value   # written back to the array


TracedArray.sort, TracedArray.partition = _sort, _partition
TracedArray.put, TracedArray.compress = _put, _compress
TracedArray.__getattr__ = _missing_member
TracedArray.flat = property(_FlatView)
TracedArray.device = property(lambda self: "cpu")  # NumPy's: the host, whatever kiln runs on

for _name in ["sum", "prod", "max", "min", "mean", "std", "var", "argmax", "argmin", "any",
              "all", "cumsum", "cumprod", "clip", "round", "dot", "trace", "diagonal", "repeat",
              "squeeze", "swapaxes", "ravel", "take", "conj", "conjugate", "argsort",
              "argpartition", "searchsorted", "choose"]:
    setattr(TracedArray, _name, _method(_name))


# -- operators: each is the ufunc NumPy's ndarray maps it to --

def _is_python_bool(value):
    return type(value) is bool or isinstance(value, TracedArray) and value._weak is bool


def _is_python_number(value):
    kind = weak_type(value)  # (dtype('float64') == float: `is`)
    return kind is int or kind is float or kind is complex or _is_python_bool(value)


def _python_bools(ufunc, operands):
    """The operands of Python's operator on Python numbers: traced Python bools (bool(x) and
    np.array_equal in a loop, comparisons of Python numbers) as the ints Python computes with
    (True + True is 2, -True is -1, where NumPy's bools give True and refuse negation); & | ^
    of two bools and comparisons keep them. With a NumPy operand, NumPy's operation as it is."""
    if not any(isinstance(v, TracedArray) and v._weak is bool for v in operands) or not all(
            map(_is_python_number, operands)):
        return operands
    if ufunc in _COMPARISONS or ufunc in _BITWISE and all(map(_is_python_bool, operands)):
        return operands
    return tuple(_as_python_int(v) if _is_python_bool(v) else v for v in operands)


def _as_python_int(value):
    if not isinstance(value, TracedArray):
        return int(value)
    number = value.astype(np.int64)
    number._scalar, number._weak = True, int
    return number


def _python_arithmetic(result, *operands):
    """`result` of an operator: Python's operators on Python numbers (traced ones: a dynamic
    float, a loop's counter, float(x) in a loop) give Python numbers, weak in later promotion;
    NumPy's functions called on them (np.sqrt(lr)) give strong NumPy scalars."""
    if isinstance(result, TracedArray) and all(map(_is_python_number, operands)):
        result._weak = {"i": int, "f": float, "c": complex, "b": bool}.get(result.dtype.kind)
        watch_result(result, operands)
    return result


_checked = _python_int_overflow.checked
_COMPLEX_ARITHMETIC = (np.add, np.subtract, np.multiply, np.true_divide, np.power)


def _complex_of_float(ufunc, result, left, right):
    """`1j * x[0]`, `z + x[i]` of a Python complex z: np.float64 is a Python float, which
    Python's complex takes before NumPy's reflected operator is asked, so the result is a
    Python complex (weak: `w * np.complex64(1)` stays complex64), not NumPy's complex128."""
    if (ufunc in _COMPLEX_ARITHMETIC and weak_type(left) is complex and (
            type(right) is np.float64 or isinstance(right, TracedArray) and right._scalar
            and right._weak is None and right.dtype == np.float64)
            and isinstance(result, TracedArray) and result.ndim == 0):
        result._scalar, result._weak = True, complex
    return result


def _python_int_power(base, exponent):
    """Python's int ** int is a float for a negative exponent, where NumPy's raises: with an
    exponent that may be negative (not a loop's index) Python computes it from the values (a
    graph break; in a loop, the loop runs as Python). None where NumPy's power is Python's."""
    if not (weak_type(base) is int and weak_type(exponent) is int):
        return None
    if not isinstance(exponent, TracedArray):
        return None if exponent >= 0 else int(base) ** exponent
    if exponent._range is not None and exponent._range[0] >= 0:
        return None
    return int(base) ** int(exponent)


_PYTHON_NUMBERS = (int, float, complex)
_COMPARISONS = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor)
_DIVISIONS = (np.true_divide, np.floor_divide, np.remainder)


def _check_python_divisor(ufunc, numerator, divisor):
    """Python's / // % of Python numbers raise ZeroDivisionError for a zero divisor, where
    NumPy's ufuncs give inf, nan or 0 (a dynamic int `n` made `1 // n` 0 for n == 0): a
    traced Python number as the divisor is checked when the graph runs, a zero one raises."""
    if ufunc not in _DIVISIONS or not all(  # (dtype('float64') == float: `is`)
            any(weak_type(value) is kind for kind in _PYTHON_NUMBERS)
            for value in (numerator, divisor)):
        return
    if not isinstance(divisor, TracedArray):
        if divisor == 0:
            raise ZeroDivisionError("division by zero")
        return
    low, high = divisor._range or (0, 0)
    if low > 0 or high < 0:  # a loop's counter that is never zero
        return
    context = divisor._context
    backend().check_flag(np.equal(divisor, 0).tensor,
                         context.lift(np.zeros(0, np.int64)).tensor, "division by zero", "",
                         ufunc.__name__, error="ZeroDivisionError")


def _resolve(ufunc):
    """NumPy's loop of an operator's ufunc for operand types (weak_type()s)."""
    return lambda types: _numpy_api._resolve(ufunc, types, None, "same_kind")


def _eager_operator(python_operator, self, other, reflected=False):
    """`python_operator` of the concrete value and `other`, run by NumPy/Python (a graph
    break): `other`'s own code (its __eq__, __rmul__, __array_ufunc__, a Fraction's) gets what
    NumPy gives it, an ndarray or each element as a Python number."""
    name = python_operator.__name__.strip("_")
    value = _printable(self, f"the {name} operator with a {type(other).__name__} "
                             "(NumPy hands it to the object's own Python code)")
    return python_operator(other, value) if reflected else python_operator(value, other)


def _object_operand(self, other, ufunc, python_operator, reflected=False):
    """An operator with an operand NumPy takes no numbers from (kiln._object_operands): NumPy's
    answer where types and shapes decide it, else run eagerly; Python's own operators where
    `self` stands for a Python number and `other` is a list or tuple."""
    if self._weak is not None and isinstance(other, (list, tuple)):
        return NotImplemented  # `[0] * n` repeats the list (Python then needs n's value)
    if _object_operands.is_value_free(self, other, ufunc):
        result = _object_operands.value_free(self, lambda stand_in: (
            python_operator(other, stand_in) if reflected else python_operator(stand_in, other)))
        if result is not _object_operands.NOT_VALUE_FREE:
            return result
    return _eager_operator(python_operator, self, other, reflected)


def _rebinds(self):
    """Whether `self op= other` rebinds the name instead of writing an array: `s += 1` of a
    NumPy scalar or a Python number (a loop's carried `s = 0.0` too), whose aliases keep the
    old value and which takes the result's type."""
    return _assumed_numbers.is_open(self) or (
        (self._scalar or self._weak is not None) and len(self.tensor.shape) == 0)


def _binary_operator(ufunc, operator_name):
    python_operator = getattr(operator, f"__{operator_name}__")

    def forward(self, other):
        if not _is_operand(self, other) or _object_operands.takes_no_numbers(self, other):
            return _object_operand(self, other, ufunc, python_operator)
        self, other = _python_bools(ufunc, (self, converted(other)))
        settled = _assumed_numbers.operator(ufunc, (self, other), forward, _resolve(ufunc))
        if settled is not None:
            return settled
        _check_python_divisor(ufunc, self, other)
        if ufunc is np.power:
            python = _python_int_power(self, other)
            if python is not None:
                return python
        if ufunc is np.power and type(other) is int and other == 2:
            # NumPy's fast path: bool ** 2 is int8, np.power gives int64
            return _checked(ufunc, _python_arithmetic(np.square(self), self, other), self, other)
        if ufunc is np.power and _numpy_api.is_square_root(self, other):
            return _python_arithmetic(np.sqrt(self), self, other)  # its fast path for ** 0.5
        return _checked(ufunc, _complex_of_float(
            ufunc, _python_arithmetic(ufunc(self, other), self, other), self, other), self, other)

    def reflected(self, other):
        if (not _is_operand(self, other) or _object_operands.takes_no_numbers(self, other)
                or _object_operands.has_own_array_ufunc(other)):
            # (NumPy's ufunc hands an ndarray to the __array_ufunc__ of an object on the left)
            return _object_operand(self, other, ufunc, python_operator, reflected=True)
        other, self = _python_bools(ufunc, (converted(other), self))
        settled = _assumed_numbers.operator(ufunc, (other, self),
                                            lambda a, b: reflected(b, a), _resolve(ufunc))
        if settled is not None:
            return settled
        _check_python_divisor(ufunc, other, self)
        if ufunc is np.power:
            python = _python_int_power(other, self)
            if python is not None:
                return python
        return _checked(ufunc, _complex_of_float(
            ufunc, _python_arithmetic(ufunc(other, self), other, self), other, self), other, self)

    def inplace(self, other):
        if not _is_operand(self, other):
            if _rebinds(self) or _object_operands.defers_in_place(other):
                return NotImplemented  # Python's `x = x op other`, by the operators above
            # NumPy's ufunc(x, other, out=x), run eagerly
            return call_eagerly(ufunc, (self, other), {"out": (self,)},
                                f"{ufunc.__name__} in place with a {type(other).__name__}")
        other = converted(other)
        if _rebinds(self):
            return forward(self, other)
        return ufunc(self, other, out=(self,))
    return forward, reflected, inplace


def _is_operand(self, value):
    """Whether an operator of `self` takes `value` as NumPy's would. A traced Python number
    (a dynamic int, a loop's counter) leaves lists and tuples to Python, as an int does:
    `[0] * n` repeats the list (Python then needs n's value), `[1] + n` is a TypeError."""
    if isinstance(value, (list, tuple)):
        return self._weak is None
    if isinstance(value, (TracedArray, bool, int, float, complex, np.ndarray, np.generic)):
        return True
    # An object with its own __array_ufunc__: ndarray's operator calls the ufunc, which hands
    # it to that __array_ufunc__ (None: the operator defers to the object's reflected one).
    # An array-like that does not take part in NumPy's dispatch: ndarray's operator calls the
    # ufunc, which converts it by its __array__ (to_tensor's `converted`).
    kind = type(value)
    if hasattr(kind, "__array_ufunc__"):
        return kind.__array_ufunc__ is not None
    return hasattr(kind, "__array__") and not hasattr(kind, "__array_priority__")


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                      ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)]:
    _forward, _reflected, _inplace = _binary_operator(_ufunc, _name)
    setattr(TracedArray, f"__{_name}__", _forward)
    setattr(TracedArray, f"__r{_name}__", _reflected)
    setattr(TracedArray, f"__i{_name}__", _inplace)

for _name, _ufunc in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    setattr(TracedArray, f"__{_name}__", _binary_operator(_ufunc, _name)[0])

def _unary_operator(ufunc):
    def operator(self):
        if _assumed_numbers.is_open(self) and self._python is bool:
            _assumed_numbers.commit(self)  # -True is -1, ~True -2: NumPy's bool's differ
        operand, = _python_bools(ufunc, (self,))
        return _checked(ufunc, _python_arithmetic(ufunc(operand), operand), operand)
    return operator


for _name, _ufunc in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                      ("invert", np.invert)]:
    setattr(TracedArray, f"__{_name}__", _unary_operator(_ufunc))


def _divmod(self, other):
    # through // and %, NumPy's divmod's halves: a traced Python number (a dynamic int) keeps
    # Python's types there (divmod(n, m) of two ints is two ints, not np.int64s)
    if not _is_operand(self, other):
        return _object_operand(self, other, np.divmod, divmod)
    return self // other, self % other


def _rdivmod(self, other):
    if not _is_operand(self, other):
        return _object_operand(self, other, np.divmod, divmod, reflected=True)
    return other // self, other % self


TracedArray.__divmod__ = _divmod
TracedArray.__rdivmod__ = _rdivmod


# ---- members NumPy lets code assign ----

def _set_shape(self, value):
    """x.shape = ...: NumPy's in-place reshape, the same elements under a new shape (views of x
    keep reading them). An argument's shape is its caller's, which kiln cannot set."""
    self._check_plain("setting the shape")
    if self._argument:
        raise TypeError(f"kiln: x.shape = ... at {user_location()} would change the shape of "
                        "an argument (its caller's array) in place, which a compiled function "
                        "cannot: use x = x.reshape(...)")
    old_shape = list(self.tensor.shape)
    reshaped = self.reshape(value)   # NumPy's errors (sizes, several -1)
    if reshaped._maybe_copy:
        graph_break("x.shape = ... of an array whose memory layout kiln does not know (NumPy "
                    "refuses where a reshape would copy)")
    if reshaped._root is not self and reshaped._root is not self._root:  # a copy: NumPy's
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                             "to make a copy with the desired shape.")
    tensor = reshaped.tensor
    self._strides = reshaped._strides if self._root is not None else self._strides
    k = backend()
    if self._root is not None:
        forward, backward = self._forward, self._backward
        new_shape = list(tensor.shape)
        self._forward = lambda root: k.reshape(forward(root), new_shape)
        self._backward = lambda root, value: backward(root, k.reshape(value, old_shape))
    else:
        self._version += 1   # views of it read it again, through _root_tensor
    self._tensor = tensor


def _set_real(self, value):
    np.real(self)[...] = value   # a view: the write reaches self


def _set_imag(self, value):
    if self.dtype.kind != "c":
        raise TypeError("array does not have imaginary part to set")
    np.imag(self)[...] = value


TracedArray.shape = property(TracedArray.shape.fget, _set_shape)
TracedArray.real = property(TracedArray.real.fget, _set_real, doc=TracedArray.real.__doc__)
TracedArray.imag = property(TracedArray.imag.fget, _set_imag, doc=TracedArray.imag.__doc__)
