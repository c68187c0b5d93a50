"""Loops whose carried arrays shrink or grow every iteration (kiln/_loop_extents.py,
kiln/_window_joins.py) and windows that meet at different positions (kiln/_windows.py): one
loop node, where tracing unrolled them (a 1,000-step binomial tree took 13.5 s to compile).
Every result is checked against NumPy, and every loop that cannot be captured still runs
unrolled, with NumPy's result."""
import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(41)


def loop_kinds(function, *args):
    return [loop.kind for loop in kiln.explain(kiln.compile(function))(*args).loops
            if loop.kind != "select"]


def check(function, *args, kinds=("loop",), rtol=1e-10):
    """Compiled on copies of the arguments == NumPy (values, shapes, dtypes, and what the
    function writes into its arguments); the loops as `kinds` says."""
    copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    expected = function(*copies)
    compiled_args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    got = kiln.compile(function)(*compiled_args)
    pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
    for value, want in pairs:
        assert np.shape(value) == np.shape(want)
        assert np.asarray(value).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(value, want, rtol=rtol, atol=1e-12)
    for value, want in zip(compiled_args, copies):
        np.testing.assert_array_equal(value, want)
    assert loop_kinds(function, *args) == list(kinds)


def binomial(S0, K, r, sigma, T, n):
    dt = T / n
    u = np.exp(sigma * np.sqrt(dt))
    d = 1 / u
    p = (np.exp(r * dt) - d) / (u - d)
    v = np.maximum(S0 * u ** np.arange(n, -1, -1) * d ** np.arange(0, n + 1) - K, 0.0)
    for i in range(n):
        v = np.exp(-r * dt) * (p * v[:-1] + (1 - p) * v[1:])
    return v[0]


def differences(x, m):
    for _ in range(m):
        x = x[1:] - x[:-1]
    return x


def test_a_binomial_tree_is_one_loop(rng):
    check(binomial, np.array(100.0), 100.0, 0.05, 0.2, 1.0, 200)  # traced: computed at run time
    check(binomial, 100.0, 100.0, 0.05, 0.2, 1.0, 200)  # static arguments: one graph still


def american_tree(S, K, r, sigma, T, n):
    """A CRR American put whose arrays shrink by slices at the loop's index, not [:-1]."""
    dt = T / n
    u = np.exp(sigma * np.sqrt(dt))
    d, disc = 1 / u, np.exp(-r * dt)
    p = (np.exp(r * dt) - d) / (u - d)
    prices = S * u ** np.arange(n, -1, -1) * d ** np.arange(n + 1)
    values = np.maximum(K - prices, 0)
    for i in range(n - 1, -1, -1):
        prices = prices[:i + 1] * d
        values = np.maximum(disc * (p * values[:i + 1] + (1 - p) * values[1:i + 2]), K - prices)
    return values[0], prices


def differences_by_index(x, m):
    n = x.shape[0] - 1
    for i in range(m):
        x = x[1:n - i + 1] - x[:n - i]
    return x


def test_arrays_rebound_to_slices_at_the_loops_index_shrink_in_one_loop(rng):
    # `prices = prices[:i + 1] * d` kept its window past the iteration: the loop was unrolled
    # (a 500-step tree: 29 s to compile, 10 ms a call; captured: 1.3 s, 0.3 ms; NumPy 11 ms)
    check(american_tree, 100.0, 100.0, 0.05, 0.2, 1.0, 200)
    check(american_tree, np.array(90.0), 100.0, 0.03, 0.3, 0.5, 60)
    x = rng.random(30)
    check(differences_by_index, x, 12)
    np.testing.assert_allclose(kiln.compile(differences_by_index)(x, 5), np.diff(x, 5))


def test_repeated_differences_agree_with_np_diff(rng):
    x = rng.standard_normal(50)
    check(differences, x, 30)
    np.testing.assert_allclose(kiln.compile(differences)(x, 30), np.diff(x, n=30), rtol=1e-9)
    check(differences, np.arange(40), 10)  # integers stay exact


def reads_each_iteration(x):
    total, first, last = 0.0, 0.0, 0.0
    for i in range(8):
        x = 0.5 * x[1:] + x[:-1]
        total = total + x.sum() + x[1:-1].max() + np.mean(x[2:])
        first = first + x[0] + x[i] * 0.0
        last = last + x[-1] + x[-i - 1] * 0.0
    return x, total, first, last


def test_reductions_and_elements_of_a_shrinking_array(rng):
    check(reads_each_iteration, rng.standard_normal(20))


def backwards_with_step(x):
    for i in range(x.shape[0] - 1, 4, -1):
        x = x[:-1] * i + x[1:]
    return x


def promoted(x):
    for i in range(6):
        x = x[1:] * 0.5 + x[:-1]   # int64 -> float64 in the first iteration
    return x


def two_arrays(x, y):
    for i in range(10):
        x = x[1:] + y[:-2]    # windows of arrays of different lengths
        y = y[1:] * 0.5 + x[:-1].sum()
    return x, y


def test_steps_dtypes_and_several_shrinking_arrays(rng):
    check(backwards_with_step, rng.standard_normal(20))
    check(promoted, np.arange(20))
    check(two_arrays, rng.standard_normal(30), rng.standard_normal(31))


def determinant(A):   # Gaussian elimination as Schur complements: both axes shrink
    d = 1.0
    for k in range(A.shape[0]):
        d = d * A[0, 0]
        A = A[1:, 1:] - np.outer(A[1:, 0], A[0, 1:]) / A[0, 0]
    return d


def smoothing_pyramid(a):   # rows shrink, columns stay
    for i in range(5):
        a = 0.5 * (a[1:] + a[:-1])
    return a


def test_two_dimensional_shrinking(rng):
    A = rng.standard_normal((25, 25)) + 25 * np.eye(25)
    check(determinant, A)
    np.testing.assert_allclose(kiln.compile(determinant)(A), np.linalg.det(A), rtol=1e-9)
    check(smoothing_pyramid, rng.standard_normal((12, 7)))


def rows_differenced(X, k):
    out = np.zeros((X.shape[0], X.shape[1] - k))
    for j in range(X.shape[0]):
        y = X[j]          # a view, rebound by the inner loop: carried by value
        for i in range(k):
            y = y[1:] - y[:-1]
        out[j] = y
    return out


def test_a_shrinking_loop_inside_a_loop(rng):
    check(rows_differenced, rng.standard_normal((6, 30)), 4, kinds=["loop", "loop"])


def moving_copy(a):
    out = np.zeros_like(a)
    n = a.shape[0]
    for i in range(n):
        out[:n - i] += a[i:]        # windows of one extent at different positions
    return out


def shifted_assignments(a):
    out = np.zeros_like(a)
    n = a.shape[0]
    for i in range(n):
        out[i:] = a[:n - i] * 0.5 + out[i:]
    for i in range(n - 1):
        a[1:n - i] = a[:n - i - 1] + 1.0     # overlapping: NumPy reads before it writes
    return out, a


def lagged_products(x, y, M):
    n = x.shape[0]
    s, r = 0.0, np.zeros(M.shape[0])
    for i in range(n):
        s = s + x[i:] @ y[:n - i]            # y longer than x: moved, then cut to x's length
        r = r + M[:, i:] @ x[:n - i]
    return s, r


def elimination(A, b):
    n = A.shape[0]
    for k in range(n - 1):
        f = A[k + 1:, k] / A[k, k]
        A[k + 1:, k:] -= f[:, None] * A[k, k:]   # a window's column, broadcast
        b[k + 1:] -= f * b[k]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x


def test_windows_at_different_positions_and_indexed_windows(rng):
    check(moving_copy, rng.standard_normal(40))
    check(shifted_assignments, rng.standard_normal(30), kinds=["loop", "loop"])
    check(lagged_products, rng.standard_normal(30), rng.standard_normal(45),
          rng.standard_normal((5, 30)))
    A = rng.standard_normal((20, 20)) + 20 * np.eye(20)
    b = rng.standard_normal(20)
    got = kiln.compile(elimination)(A.copy(), b.copy())
    np.testing.assert_allclose(got, np.linalg.solve(A, b), rtol=1e-9)
    assert loop_kinds(elimination, A.copy(), b.copy()) == ["loop", "loop"]


def appended(x, n):
    out = np.zeros(0)
    path = x[:1]                              # a view, rebound: carried by value
    for i in range(n):
        out = np.append(out, x[i] * 2.0)
        path = np.append(path, path[-1] * 0.5 + x[i])
    return out, path, path.sum()


def joined(x, X, n):
    y, z, rows = x[:5].copy(), np.arange(3), X[:1]
    for i in range(n):
        y = np.concatenate([y, y[-2:] * 0.5])
        z = np.hstack([z, x[i:i + 1]])        # int64 joined with float64: float64 from then on
        rows = np.vstack([rows, rows[-1] + X[i]])
    return y, z, rows


def test_growing_arrays_are_one_loop(rng):
    x = rng.standard_normal(40)
    check(appended, x, 30)
    check(joined, x, rng.standard_normal((25, 4)), 20)


def step_of_two(x):
    for i in range(0, 20, 2):
        x = x[1:] + x[:-1]
    return x


def past_empty(x):
    for i in range(8):
        x = x[1:] - x[:-1]
    return x


def shrinks_by_a_step(x):
    for i in range(4):
        x = x[::2] + 1.0
    return x


def writes_before_it_shrinks(v):
    for i in range(5):
        v[0] = 1.0          # NumPy writes into the argument (then into views of it)
        v = v[1:] * 2
    return v


def writes_a_view(X):
    y = X[0]
    for i in range(5):
        y[0] = 7.0          # reaches X
        y = y * 2
    return X, y


def grows_while(x):
    while x.sum() < 100.0:
        x = np.append(x, 7.0)               # a trip count unknown at the trace
    return x


def reads_the_shape(x):
    for i in range(5):
        x = x[1:] + x.shape[0]
    return x


@pytest.mark.parametrize("function, argument", [
    (step_of_two, np.arange(40.0)), (past_empty, np.arange(5.0)),
    (shrinks_by_a_step, np.arange(64.0)), (writes_before_it_shrinks, np.arange(10.0)),
    (writes_a_view, np.arange(12.0).reshape(3, 4)), (reads_the_shape, np.arange(10.0)),
    (grows_while, np.arange(3.0)),
], ids=["step_of_two", "past_empty", "halving", "writes_before", "writes_a_view", "shape",
        "grows_while"])
def test_loops_that_cannot_be_captured_run_unrolled_with_numpys_result(function, argument):
    check(function, argument, kinds=["unrolled"])


def test_methods_of_windows_keep_their_window(rng):
    # astype and copy of a window are its whole axes with the same window (astype's was the
    # whole axes: a sum of it added the positions outside the window)
    def methods(x):
        s = 0.0
        for i in range(6):
            x = x[1:] * 0.5 + x[:-1]
            y = x.copy()
            y += 1.0
            s = s + x.astype(np.float32).sum() + y.sum()
        return x, s
    check(methods, rng.standard_normal(16), rtol=1e-6)  # float32 sums


def test_astype_of_a_masked_selection_keeps_the_mask(rng):
    x = rng.standard_normal(30)
    np.testing.assert_allclose(
        kiln.compile(lambda x: x[x > 0].astype(np.float32).sum())(x),
        x[x > 0].astype(np.float32).sum(), rtol=1e-6)
