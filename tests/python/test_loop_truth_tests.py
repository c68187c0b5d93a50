"""np.array_equal, np.array_equiv and np.allclose as a loop's test (kiln._numpy_math._truth):
NumPy's versions return Python's bool() of a traced value, a graph break that left the loop
uncaptured (a Game of Life run until stable: 3 graphs, no loop node, NumPy's speed). In a
loop's body and a while loop's test they stay traced, as bool(x) there does, so the loop is
one loop node; shapes that differ are False at the trace, and elsewhere the result is
Python's bool, as before."""
import numpy as np
import pytest

import kiln


def report(f, *args):
    return kiln.explain(f)(*args)


def life_until_stable(g, maxit):  # the finding's program
    it = 0
    while it < maxit:
        n = sum(np.roll(np.roll(g, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1)
                if (i, j) != (0, 0))
        new = ((n == 3) | ((g == 1) & (n == 2))).astype(g.dtype)
        if np.array_equal(new, g):
            break
        g = new
        it += 1
    return g, it


def test_array_equal_as_a_while_loops_break_test_is_one_loop():
    rng = np.random.default_rng(0)
    for density, maxit in ((0.3, 60), (0.0, 5), (0.5, 3)):
        g = (rng.random((16, 16)) < density).astype(np.int8)
        result = report(life_until_stable, g, maxit)
        assert result.graph_break_count == 0, str(result)
        kinds = [loop.kind for loop in result.loops]
        assert kinds.count("loop") == 1 and "unrolled" not in kinds, result.loops
        got, expected = kiln.compile(life_until_stable)(g, maxit), life_until_stable(g, maxit)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1]


def sort_by_swaps(x):  # the test itself: `while not np.array_equal(...)`
    y = x.copy()
    target = np.sort(x)
    steps = 0
    while not np.array_equal(y, target):
        i = steps % (x.shape[0] - 1)
        low, high = np.minimum(y[i], y[i + 1]), np.maximum(y[i], y[i + 1])
        y[i], y[i + 1] = low, high
        steps += 1
    return y, steps


def jacobi(a, b, tol):  # np.allclose as a for loop's convergence test
    x = np.zeros_like(b)
    d = np.diag(a).copy()
    rest = a - np.diag(d)
    for _ in range(500):
        new = (b - rest @ x) / d
        if np.allclose(new, x, rtol=0, atol=tol):
            break
        x = new
    return x


def nan_runs(x):  # equal_nan and array_equiv's broadcasting, in a for loop's body
    same = np.zeros(x.shape[0] - 1, dtype=np.int64)
    for i in range(1, x.shape[0]):
        if np.array_equal(x[i], x[i - 1], equal_nan=True):
            same[i - 1] += 1
        if np.array_equal(x[i], x[i - 1]):
            same[i - 1] += 10
        if np.array_equiv(x[i], x[i - 1, :1]):   # (3,) against (1,): broadcast
            same[i - 1] += 100
        if np.array_equal(x[i], x[i - 1, :2]) or np.array_equiv(x[i], x[i - 1, :2]):
            same[i - 1] += 1000                   # shapes differ: False at the trace
    return same


CASES = [
    (sort_by_swaps, (np.array([5.0, 3, 9, 1, 7, 8, 2]),)),
    (sort_by_swaps, (np.arange(4.0),)),   # no iteration
    (jacobi, (np.eye(6) * 4 + np.ones((6, 6)) * 0.3, np.arange(6.0), 1e-10)),
    (nan_runs, (np.array([[1.0, np.nan, 2], [1, np.nan, 2], [1, np.nan, 2.5], [2, 2, 2],
                          [2, 2, 2], [np.nan] * 3, [np.nan] * 3]),)),
    (nan_runs, (np.array([[1, 1, 1], [1, 1, 1], [1, 2, 1], [2, 2, 2]], dtype=np.int16),)),
]


@pytest.mark.parametrize("function, args", CASES,
                         ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)])
def test_equality_tests_in_loops_are_captured_and_agree_with_numpy(function, args):
    result = report(function, *args)
    assert result.graph_break_count == 0, str(result)
    kinds = [loop.kind for loop in result.loops]
    assert kinds.count("loop") == 1 and "unrolled" not in kinds, result.loops
    got, expected = kiln.compile(function)(*args), function(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def outside_loops(x, y):
    return np.array_equal(x, y), np.array_equiv(x, y[:1]), np.allclose(x, y), \
        np.array_equal(x, y[:1])


def test_outside_loops_the_results_are_pythons_bools():
    x = np.arange(6.0).reshape(2, 3)
    for y in (x.copy(), x + 1):
        got, expected = kiln.compile(outside_loops)(x, y), outside_loops(x, y)
        assert got == expected and all(type(v) is bool for v in got), got


def equal_neighbours(x):
    count, same = 0, False
    for i in range(1, x.shape[0]):
        count = count + same                              # the iteration before's, carried
        same = np.array_equal(x[i], x[i - 1])
        count += same + np.array_equiv(x[i], x[i - 1])   # Python's bools add as ints
    return count, same


def test_results_in_a_loop_are_pythons_bools_after_it():
    for x in (np.array([[1, 2], [1, 2], [3, 4], [3, 4], [3, 5]]), np.ones((4, 2))):
        result = report(equal_neighbours, x)
        assert [loop.kind for loop in result.loops] == ["loop"], result.loops
        got, expected = kiln.compile(equal_neighbours)(x), equal_neighbours(x)
        assert got == expected and [type(v) for v in got] == [int, bool], got
