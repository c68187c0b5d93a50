"""np.errstate / np.seterr asking NumPy to raise, call a handler or log on floating-point
errors: kiln's kernels do not check, so such calls run as eager NumPy, which does (kiln
returned inf or nan where NumPy raised FloatingPointError). States that ignore or warn keep
the compiled code."""
import numpy as np
import pytest

import kiln
from numpy import errstate


def reciprocal(x):
    return 1.0 / x


def raises_inside(x):
    with np.errstate(divide="raise"):
        y = 1.0 / x
    return y + 1.0


def imported_name_raises(x):
    with errstate(invalid="raise"):
        return np.sqrt(x)


def sets_raise(x):
    np.seterr(over="raise")
    return np.exp(x)


def ignores(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


X = np.array([1.0, 0.0, -1.0])


@pytest.fixture(autouse=True)
def numpy_error_state():
    saved = np.geterr()
    yield
    np.seterr(**saved)


@pytest.mark.parametrize("state", [{"divide": "raise"}, {"all": "raise"}, {"all": "call"}])
def test_a_call_under_a_raising_state_raises_as_numpy(state):
    compiled = kiln.compile(reciprocal)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(compiled(X), [1.0, np.inf, -1.0])  # compiled, cached
    handled = []
    with np.errstate(**state, call=lambda kind, flag: handled.append(kind)):
        if "call" in state.values():
            compiled(X)
            assert handled == ["divide by zero"]
        else:
            with pytest.raises(FloatingPointError, match="divide by zero"):
                compiled(X)
    np.seterr(divide="raise")
    with pytest.raises(FloatingPointError):
        kiln.compile(reciprocal)(X)  # before any trace
    np.seterr(divide="ignore")
    np.testing.assert_array_equal(compiled(X), [1.0, np.inf, -1.0])


@pytest.mark.parametrize("function, argument", [
    (raises_inside, X), (imported_name_raises, X), (sets_raise, np.array([1000.0]))])
def test_a_raising_state_set_inside_the_function_raises_as_numpy(function, argument):
    with pytest.raises(FloatingPointError):
        function(argument)
    np.seterr(over="warn")
    compiled = kiln.compile(function)
    with pytest.raises(FloatingPointError):
        compiled(argument)
    np.seterr(over="warn")
    report = kiln.explain(function)(np.ones(3))
    assert report.break_reasons and "raise, call or log" in report.break_reasons[0].reason


def test_states_that_ignore_or_warn_stay_compiled():
    report = kiln.explain(ignores)(X)
    assert not report.break_reasons and len(report.graphs) == 1
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(report.result, ignores(X))
