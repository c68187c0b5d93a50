"""np.errstate / np.seterr asking NumPy to raise, call a handler or log on floating-point
errors: kiln's kernels do not check, so such calls run as eager NumPy, which does (kiln
returned inf or nan where NumPy raised FloatingPointError). So do calls where NumPy warns and a
warnings filter makes the RuntimeWarning an error (`-W error`, pytest's filterwarnings = error,
`warnings.simplefilter("error")`). States that ignore or warn keep the compiled code."""
import threading
import warnings

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


def falls_back_on_warning(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return np.log(x)
        except RuntimeWarning:
            return np.full_like(x, -1.0)


def test_a_warnings_filter_of_error_raises_numpys_warning():
    # kiln returned [1, inf, -1] under `-W error`, where NumPy raises RuntimeWarning
    compiled = kiln.compile(reciprocal)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(compiled(X), [1.0, np.inf, -1.0])  # compiled, cached
    for category in (RuntimeWarning, Warning):
        with warnings.catch_warnings():
            warnings.simplefilter("error", category)
            with pytest.raises(RuntimeWarning, match="divide by zero"):
                compiled(X)
            with np.errstate(divide="ignore"):  # NumPy does not warn: nothing to raise
                np.testing.assert_array_equal(compiled(X), [1.0, np.inf, -1.0])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "divide by zero", RuntimeWarning)
        with pytest.raises(RuntimeWarning):
            kiln.compile(reciprocal)(X)  # before any trace


def test_a_warnings_filter_of_error_set_inside_the_function_is_caught_there():
    # its `except RuntimeWarning` never ran: kiln gave [-inf, 0] for NumPy's [-1, -1]
    x = np.array([0.0, 1.0])
    np.testing.assert_array_equal(kiln.compile(falls_back_on_warning)(x), [-1.0, -1.0])



def records_warnings(x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = np.log(x) + np.mean(x[:0])
    return y, [str(warning.message) for warning in caught]


def error_action_caught(x):
    with warnings.catch_warnings(action="error"):
        try:
            return np.log(x)
        except RuntimeWarning:
            return np.full_like(x, -1.0)


def test_warnings_recorded_or_made_errors_inside_the_function_are_numpys():
    """catch_warnings(record=True) inside the function gave an empty list (kiln's kernels
    emit no RuntimeWarning), catch_warnings(action="error") never raised: such calls run
    eagerly, as a simplefilter("error") inside does."""
    x = np.array([0.0, 1.0])
    got, expected = kiln.compile(records_warnings)(x), records_warnings(x)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1] and len(expected[1]) == 3
    np.testing.assert_array_equal(kiln.compile(error_action_caught)(x), [-1.0, -1.0])


def long_trace(x):
    for _ in range(200):
        x = np.sin(x) * 1.0001 + 0.001
    return x


def test_another_thread_setting_a_raising_state_during_a_trace_is_not_refused():
    # The wrappers a trace installs in numpy and warnings raised kiln's GraphBreakSignal into
    # any thread that asked for a raising state meanwhile.
    failures, stop = [], threading.Event()

    def other():
        while not stop.is_set():
            try:
                with np.errstate(divide="raise"), warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)
            except BaseException as error:  # noqa: BLE001 - counted
                failures.append(error)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        with kiln.config.patch(capture_loops=False):  # a long trace: 600 ops
            for n in range(2):
                np.testing.assert_allclose(kiln.compile(long_trace)(np.ones(4 + n)),
                                           long_trace(np.ones(4 + n)))
    finally:
        stop.set()
        thread.join()
    assert not failures, failures[:1]
