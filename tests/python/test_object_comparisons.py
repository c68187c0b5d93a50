"""Operators of a traced array with objects that are not numbers: None, strings, bytes,
Ellipsis, a sentinel object(), a user's object, lists of them (kiln._object_operands).

`x == None` was Python's identity answer (False) where NumPy compares element by element (an
all-False array of x's shape); `x == "a"` too (NumPy 2: all False; NumPy 1.x: a Python bool
with a FutureWarning); `x == ["a", "b", "c"]` raised. A user's class that NumPy defers to
(__array_priority__, __array_ufunc__ = None) or whose __array_ufunc__ NumPy calls got kiln's
tracer where NumPy hands it the ndarray. Each case runs the same function uncompiled and
compiled, on whichever NumPy is installed."""
import operator
import warnings

import numpy as np
import pytest

import kiln


class Plain:
    """No methods of its own: Python compares it by identity."""


class Equal:
    """An __eq__ that looks at the number: NumPy calls it for each element."""
    def __eq__(self, other):
        return other == 1.0

    __hash__ = object.__hash__


class Units:
    """Arithmetic of its own: NumPy's object loop calls __rmul__ for each element."""
    def __init__(self, value):
        self.value = value

    def __rmul__(self, other):
        return ("rmul", type(other), other * self.value)


class Deferring:
    """NumPy's operators give way to it (its __array_priority__): its methods get the array."""
    __array_priority__ = 15

    def __rmul__(self, other):
        return ("rmul", type(other))

    def __eq__(self, other):
        return ("eq", type(other))

    __hash__ = object.__hash__


class NoUfuncs:
    """__array_ufunc__ = None: NumPy's operators give way to it, its ufuncs raise."""
    __array_ufunc__ = None

    def __rmul__(self, other):
        return ("rmul", type(other))

    def __eq__(self, other):
        return ("eq", type(other))

    __hash__ = object.__hash__


class OwnUfuncs:
    """An __array_ufunc__ of its own: NumPy's ufuncs call it with the arrays."""
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return (ufunc.__name__, tuple(type(value) for value in inputs))


_OPERANDS = {
    "none": None, "string": "a", "bytes": b"a", "ellipsis": ..., "sentinel": object(),
    "plain_object": Plain(), "object_with_eq": Equal(), "numpy_str": np.str_("a"),
    "list_of_numbers": [0.0, 1.0, 5.0], "tuple_of_numbers": (0, 1, 2),
    "list_of_strings": ["a", "b", "c"], "array_of_strings": np.array(["a", "b", "c"]),
    "short_list_of_strings": ["a", "b"],  # NumPy 2: a broadcast error; 1.x: False
    "list_of_nones": [None, None, None], "list_with_none": [None, 1.0, 2.0],
    "date": np.datetime64("2020-01-01"), "time_delta": np.timedelta64(1),
    "slice": slice(1),  # a built-in's own __eq__ that leaves numbers to Python's default
}

_SUBJECTS = {  # what the traced function compares: x is a (2, 3) float64 array
    "array": lambda x: x,
    "int_array": lambda x: x.astype(np.int32),
    "bool_array": lambda x: x > 2,
    "zero_d_array": lambda x: x.reshape(-1)[1:2].reshape(()),
    "empty_rows": lambda x: x[:0],
    "numpy_scalar": lambda x: x[0, 1],
    "float32_scalar": lambda x: x.astype(np.float32)[0, 1],
}


def _run(function, *arguments):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy 1.x's FutureWarning for `x == "a"`
        try:
            return function(*arguments)
        except Exception as error:  # noqa: BLE001 - the class is what is compared
            return type(error)


def _assert_same(result, expected):
    assert type(result) is type(expected), (result, expected)
    if isinstance(expected, (tuple, list)):
        assert len(result) == len(expected)
        for got, want in zip(result, expected):
            _assert_same(got, want)
    elif isinstance(expected, np.ndarray):
        assert result.dtype == expected.dtype and result.shape == expected.shape
        assert [type(v) for v in result.ravel()] == [type(v) for v in expected.ravel()]
        assert result.tolist() == expected.tolist()
    else:
        assert result == expected, (result, expected)


def _assert_like_numpy(function, *arguments):
    compiled = kiln.compile(function)
    for x in (np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) * 2 - 1):
        _assert_same(_run(compiled, x, *arguments), _run(function, x, *arguments))


@pytest.mark.parametrize("subject", list(_SUBJECTS))
@pytest.mark.parametrize("operand", list(_OPERANDS))
def test_equality_with_objects_is_numpys(operand, subject):
    value, part = _OPERANDS[operand], _SUBJECTS[subject]
    _assert_like_numpy(lambda x: (part(x) == value, part(x) != value,
                                  value == part(x), value != part(x)))


_ERRING = ["none", "string", "bytes", "ellipsis", "plain_object", "list_of_strings",
           "list_of_nones", "slice"]
_OPERATORS = {"lt": operator.lt, "ge": operator.ge, "add": operator.add,
              "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
              "pow": operator.pow}


@pytest.mark.parametrize("subject", ["array", "numpy_scalar", "empty_rows"])
@pytest.mark.parametrize("name", list(_OPERATORS))
@pytest.mark.parametrize("operand", _ERRING)
def test_other_operators_with_objects_are_numpys(operand, name, subject):
    """NumPy's TypeError (UFuncTypeError for strings on NumPy 2), or what NumPy makes of
    an empty array (an empty object array: run eagerly)."""
    value, part, python_operator = _OPERANDS[operand], _SUBJECTS[subject], _OPERATORS[name]
    _assert_like_numpy(lambda x: python_operator(part(x), value))
    _assert_like_numpy(lambda x: python_operator(value, part(x)))


def test_a_python_number_argument_compares_as_python():
    """A Python number that changes between calls is traced (kiln._dynamic_numbers): Python's
    comparisons of it, NumPy's of it with an array of strings."""
    def function(x, s):
        return (s * x, s == None, s != "a", None != s, s == Plain(),  # noqa: E711
                s == np.array(["a", "b"]), s != np.str_("a"), s < 3)
    compiled, x = kiln.compile(function), np.ones(3)
    for s in (2.5, 3.5, 4.5, 1.5):
        _assert_same(_run(compiled, x, s), _run(function, x, s))
    _assert_like_numpy(lambda x, s: s < None, 2.5)
    _assert_like_numpy(lambda x, n: (n * "ab", n * ["a"], n == ["a"]), 2)


@pytest.mark.parametrize("value", [None, ..., Plain(), "a", [None, None, None]])
def test_numpy_equal_and_not_equal_are_numpys(value):
    _assert_like_numpy(lambda x: np.equal(x, value))
    _assert_like_numpy(lambda x: np.not_equal(value, x[0]))


def test_comparisons_numpy_decides_by_types_stay_in_the_graph():
    def function(x):
        # slice's own __eq__ answers NotImplemented for numbers, as NoneType's does on
        # Python 3.12 (which ran `x == None` eagerly there, a graph break in every loop)
        return (x == None, x != "a", None != x,  # noqa: E711
                np.equal(x, ...), x[0] == ["a", "b", "c"], x == slice(1), slice(1) != x)
    report = kiln.explain(function)(np.arange(6.0).reshape(2, 3))
    assert report.graph_break_count == 0, str(report)
    _assert_like_numpy(function)


def test_an_objects_own_eq_runs_eagerly_and_says_why():
    _assert_like_numpy(lambda x: (x == Equal(), x != Equal()))
    report = kiln.explain(lambda x: x == Equal())(np.arange(3.0))
    assert "eq operator with a Equal" in str(report)


def counts_in_a_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        row = x[i]
        total = total + np.count_nonzero(row != None) + np.sum(row == "a") + row[0]  # noqa: E711
    return total


def branch_in_a_loop(x):
    out = np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        row = x[i]
        if np.count_nonzero(row != None) > row[0]:  # noqa: E711
            out = out + row
        else:
            out = out - row
    return out


def branch(x):
    if np.sum(x[1] != None) > x[1, 0]:  # noqa: E711
        return x * 2
    return x - 1


@pytest.mark.parametrize("function, kinds", [(counts_in_a_loop, ["loop"]),
                                             (branch_in_a_loop, ["select", "loop"]),
                                             (branch, ["select"])])
def test_comparisons_with_none_in_captured_loops_and_branches(function, kinds):
    # five rows: a loop whose first iteration runs on its own (it makes `total` NumPy's) is a
    # loop node past it
    x = np.array([[0.5, 1, 2], [2.5, 3, 4], [5, 6, 7], [8, 0, 1], [3, 2, 5]])
    report = kiln.explain(function)(x)
    assert report.graph_break_count == 0, str(report)
    assert sorted(loop.kind for loop in report.loops) == sorted(kinds), report.loops
    for data in (x, x[::-1].copy(), x - 3):
        np.testing.assert_array_equal(kiln.compile(function)(data), function(data))


@pytest.mark.parametrize("function", [
    lambda x: x * Units(3),                    # NumPy's object loop: __rmul__ per element
    lambda x: x * Deferring(),                 # NumPy defers: __rmul__ gets the array
    lambda x: (x == Deferring(), x != Deferring()),
    lambda x: x * NoUfuncs(),
    lambda x: (x == NoUfuncs(), x != NoUfuncs()),
    lambda x: OwnUfuncs() * x,                 # its __array_ufunc__ gets the array
    lambda x: x * OwnUfuncs(),
    lambda x: np.sin(x) * Deferring(),
    lambda x: divmod(x, Plain()),
], ids=["units", "deferring", "deferring_eq", "no_ufuncs", "no_ufuncs_eq", "own_ufuncs_left",
        "own_ufuncs_right", "deferring_of_a_result", "divmod"])
def test_users_objects_get_what_numpy_gives_them(function):
    _assert_like_numpy(function)


def _times_in_place(value):
    def function(x):
        y = x.copy()
        y *= value
        return y
    return function


@pytest.mark.parametrize("value", [Deferring(), NoUfuncs(), None, "a"],
                         ids=["deferring", "no_ufuncs", "none", "string"])
def test_in_place_operators_with_objects_are_numpys(value):
    _assert_like_numpy(_times_in_place(value))


def test_numpys_warnings_come_at_the_users_line():
    """NumPy 1.x's FutureWarning for `x == "a"` (NumPy 2 gives none), when kiln traces."""
    def function(x):
        return x == "a", x != b"a"

    def warnings_of(f):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f(np.ones(3))
        return [(w.category, w.filename, w.lineno) for w in caught]
    assert warnings_of(kiln.compile(function)) == warnings_of(function)
