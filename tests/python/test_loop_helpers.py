"""Loops and branches in the user's helper functions that a compiled function calls are
captured as the function's own are (kiln._loop_helpers): Numba's laplace2d relaxes in a helper
with element loops and `max(error, ...)`, which ran as Python on traced values, a graph break
per element."""
import numpy as np

import kiln


def relax(A, Anew):
    error = 0.0
    for j in range(1, A.shape[0] - 1):
        for i in range(1, A.shape[1] - 1):
            Anew[j, i] = 0.25 * (A[j, i + 1] + A[j, i - 1] + A[j - 1, i] + A[j + 1, i])
            error = max(error, abs(Anew[j, i] - A[j, i]))
    return error


def sweep(A, Anew):
    return relax(A, Anew) + relax(Anew, A)  # no loop of its own: the helper's are captured


def clipped(x):
    return np.where(x > 1, 1.0, x) if x.ndim else x


def nested_helpers(x):
    def scaled(v):  # a closure cell holding a helper that calls a global helper
        return clipped(v) * 2
    out = x.copy()
    for i in range(x.shape[0]):
        out[i] = scaled(x[i])
    return out


COUNT = 0


def counts(x):
    global COUNT
    COUNT += 1  # rebinds a global: left as written, so the module sees it
    for i in range(3):
        x = x + 1
    return x


def uses_counting_helper(x):
    return counts(x) * 2


def factorial(n, x):
    return x if n <= 1 else n * factorial(n - 1, x)  # recursion: one stand-in


def test_a_helpers_loops_and_max_are_captured():
    rng = np.random.default_rng(0)
    A, Anew = rng.random((8, 9)), np.zeros((8, 9))
    expected_A, expected_Anew = A.copy(), Anew.copy()
    expected = sweep(expected_A, expected_Anew)
    report = kiln.explain(kiln.compile(sweep))(A.copy(), Anew.copy())
    assert report.graph_break_count == 0, str(report)
    assert [loop for loop in report.loops if loop.kind == "loop"], str(report)
    compiled = kiln.compile(sweep)
    for _ in range(2):
        mine_A, mine_Anew = A.copy(), Anew.copy()
        np.testing.assert_allclose(compiled(mine_A, mine_Anew), expected, rtol=1e-12)
        np.testing.assert_allclose(mine_A, expected_A, rtol=1e-12)
        np.testing.assert_allclose(mine_Anew, expected_Anew, rtol=1e-12)


def test_helpers_through_closures_and_globals_agree_with_numpy():
    x = np.linspace(0, 2, 7)
    compiled = kiln.compile(nested_helpers)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x), nested_helpers(x))
    assert kiln.explain(kiln.compile(nested_helpers))(x).graph_break_count == 0


def test_a_helper_that_rebinds_globals_is_left_as_written():
    global COUNT
    COUNT = 0
    x = np.arange(3.0)
    np.testing.assert_allclose(kiln.compile(uses_counting_helper)(x), (x + 3) * 2)
    assert COUNT >= 1


def test_a_recursive_helper_agrees_with_numpy():
    x = np.arange(4.0)
    np.testing.assert_allclose(kiln.compile(lambda x: factorial(4, x))(x), factorial(4, x))
