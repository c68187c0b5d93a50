"""`assert` in a loop body or branch side (kiln._body_statements): a test on traced data is a
check, not a graph break an iteration, and where it fails as the graph runs the call runs again
eagerly, so that NumPy's AssertionError, its message and the arrays as NumPy left them are what
the caller sees; a test on Python values is Python's `assert`.

PYTEST_DONT_REWRITE: pytest's rewrite of this module's asserts would make the functions' code
differ from their source, and kiln then leaves their loops as written."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs import check_call


def normalize_rows(X):
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        s = X[i].sum()
        assert s > 0, "row sums must be positive"
        out[i] = X[i] / s
    return out


def doubled_until(X, limit):
    for i in range(len(X)):
        X[i] = X[i] * 2
        assert X[i].sum() < limit, f"row {i} too big"
    return X


def checked_walk(x, n, floor):
    t = 0.0
    for k in range(n):
        t += x[k % len(x)]
        if t < 0:
            assert t > floor, "fell through the floor"
    return t


def static_assert(x, n):
    total = 0.0
    for k in range(len(x)):
        assert n > 0, "n must be positive"
        total += x[k] * n
    return total


def ambiguous_assert(X):
    for i in range(len(X)):
        assert X[i]
    return X


def loop_kinds(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops], report.graph_break_count


def outcome(function, arguments):
    """(result or the exception's type and message, the arguments after the call)."""
    arguments = copy.deepcopy(arguments)
    try:
        result = function(*arguments)
    except Exception as error:  # noqa: BLE001 (the outcome compared is any exception)
        result = (type(error), str(error))
    return result, arguments


def assert_same_outcome(function, arguments, message=True):
    """The same result, or exception (its message too unless not `message`), and arguments."""
    (got, got_arguments), (want, want_arguments) = (
        outcome(kiln.compile(function), arguments), outcome(function, arguments))
    if isinstance(want, tuple):
        assert got == want if message else got[0] is want[0], (got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for a, b in zip(got_arguments, want_arguments):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_an_assert_on_a_row_is_captured_with_the_loop():
    # bool() of the row's sum was a graph break an iteration: 4,000 rows made 61 graphs and
    # 5 s of compiling, then ran eagerly
    X = np.random.default_rng(0).random((4000, 8)) + 0.1
    assert loop_kinds(normalize_rows, X) == (["loop"], 0)
    check_call(kiln.compile(normalize_rows), normalize_rows, (X,))


def test_a_failed_assert_raises_numpys_error_with_the_arrays_numpy_left():
    X = np.random.default_rng(1).random((50, 4)) + 0.1
    X[17] = -1.0
    assert_same_outcome(normalize_rows, (X,))
    for limit in (1e9, 40.0):  # row 5 of arange(12) doubled is past 40, rows 0-4 written
        assert_same_outcome(doubled_until, (np.arange(12.0).reshape(6, 2), limit))


@pytest.mark.parametrize("floor", [-10.0, -5.0, -2.0])
def test_an_assert_in_a_branch_of_a_loop(floor):
    assert_same_outcome(checked_walk, (np.array([1.0, -3.0, 0.5]), 10, floor))


def test_asserts_of_python_values_and_of_whole_arrays_are_pythons():
    x = np.arange(5.0)
    for n in (3, 0):
        assert_same_outcome(static_assert, (x, n))
    # NumPy's ValueError (kiln's message names the line as well)
    assert_same_outcome(ambiguous_assert, (np.ones((3, 2)),), message=False)
