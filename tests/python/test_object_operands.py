"""Values NumPy computes with as Python objects: a Python int past int64 (np.full(3, 2**70) is
an object array) and operands of no NumPy type (Fraction, Decimal, a user's class),
which NumPy's operators hand to Python element by element. kiln runs such a call eagerly (a
graph break that says why), with NumPy's result or NumPy's error; it raised TypeErrors of its
own ("unknown dtype 'object'", "unsupported operand type(s) for *: 'TracedArray' ...")."""
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import kiln


class _Scaled:
    """A user's class NumPy knows nothing of: ndarray * it calls its __rmul__ per element."""
    def __rmul__(self, other):
        return ("rmul", type(other).__name__)


_CASES = {
    "full_of_a_big_int": (lambda x: np.full(3, 2**70), ()),
    "full_of_a_big_int_argument": (lambda x, n: np.full(3, n), (2**70,)),
    "full_of_a_big_negative_int": (lambda x: np.full(2, -2**70) + x[0], ()),
    "times_a_fraction": (lambda x: np.sin(x) * Fraction(1, 3), ()),
    "fraction_times": (lambda x: Fraction(1, 3) * x, ()),
    "fraction_argument": (lambda x, f: x * f, (Fraction(2, 3),)),
    "power_of_a_fraction": (lambda x: x ** Fraction(1, 2), ()),
    "less_than_a_fraction": (lambda x: x < Fraction(3, 2), ()),
    "fraction_result_used_further": (lambda x: (x * Fraction(1, 3)).sum() + 1, ()),
    "numpy_int_scalar_times_a_fraction": (lambda x: x.astype(int).sum() * Fraction(1, 3), ()),
    "python_int_argument_times_a_fraction": (lambda x, n: n * Fraction(1, 3), (3,)),
    "python_float_argument_plus_a_fraction": (lambda x, n: n + Fraction(1, 3), (2.5,)),
    "times_a_users_object": (lambda x: x * _Scaled(), ()),
    "equal_to_a_fraction": (lambda x: x == Fraction(2, 1), ()),
}


def _run(function, arguments):
    try:
        return function(np.arange(1.0, 4.0), *arguments)
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return type(error)


@pytest.mark.parametrize("name", list(_CASES))
def test_object_operands_give_numpys_result(name):
    function, arguments = _CASES[name]
    expected = _run(function, arguments)
    compiled = kiln.compile(function)
    for _ in range(2):  # the trace and a later call
        result = _run(compiled, arguments)
        assert type(result) is type(expected)
        if isinstance(expected, np.ndarray):
            assert result.dtype == expected.dtype and result.shape == expected.shape
            assert [type(item) for item in result.ravel()] == [
                type(item) for item in expected.ravel()]
            assert result.tolist() == expected.tolist()
        else:
            assert result == expected


@pytest.mark.parametrize("function, arguments", [
    (lambda x: x + Decimal("1.5"), ()),        # float + Decimal: Python's TypeError
    (lambda x, d: d * x, (Decimal("2"),)),
    (lambda x: x.__imul__(Fraction(1, 3)), ()),  # an object result cast into float64
])
def test_object_operands_raise_numpys_error(function, arguments):
    expected = _run(function, arguments)
    assert isinstance(expected, type) and issubclass(expected, Exception)
    assert _run(kiln.compile(function), arguments) is expected


def test_a_python_int_past_an_arrays_integers_is_what_this_numpy_makes_of_it():
    """int64 + 2**70: NumPy 2's OverflowError (NEP 50), NumPy 1.x's object array."""
    function = lambda x: x.astype(int) + 2**70  # noqa: E731
    expected, got = _run(function, ()), _run(kiln.compile(function), ())
    if isinstance(expected, type):
        assert got is expected is OverflowError
    else:
        assert got.dtype == expected.dtype == object and got.tolist() == expected.tolist()


def test_the_graph_break_says_why():
    report = str(kiln.explain(lambda x: np.sin(x) * Fraction(1, 3))(np.ones(3)))
    assert "mul operator with a Fraction" in report
    report = str(kiln.explain(lambda x, n: np.full(3, n) + x)(np.ones(3), 2**70))
    assert "dtype object" in report
