"""np.arange whose bounds follow a captured loop's index (kiln/_window_ranges.py): a window of
an arange of the largest length the loop's bounds give, so the loop is one loop node where
it was unrolled (an American option's tree, `np.arange(i, -1, -1)` per level, compiled for
4-12 s). A carried array that shrinks meets such windows, and moving slices, in the body's
first trace before its own window is known (kiln/_loop_capture.py probes it). Results are
checked against NumPy; lengths that are not affine run unrolled, with NumPy's result."""
import numpy as np
import pytest

import kiln


def loop_kinds(function, *args):
    return [loop.kind for loop in kiln.explain(kiln.compile(function))(*args).loops
            if loop.kind != "select"]


def check(function, *args, kinds=("loop",)):
    expected, got = function(*args), kiln.compile(function)(*args)
    pairs = zip(got, expected) if isinstance(expected, tuple) else [(got, expected)]
    for value, want in pairs:
        assert type(value) is type(want)
        assert np.shape(value) == np.shape(want)
        assert np.asarray(value).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(value, want, rtol=1e-12)
    assert loop_kinds(function, *args) == list(kinds)


def american(S0, K, r, sigma, T, N):   # as usually written: each level's prices again
    dt = T / N
    u = np.exp(sigma * np.sqrt(dt))
    d = 1 / u
    p = (np.exp(r * dt) - d) / (u - d)
    disc = np.exp(-r * dt)
    S = S0 * d ** np.arange(N, -1, -1) * u ** np.arange(0, N + 1)
    V = np.maximum(K - S, 0)
    for i in range(N - 1, -1, -1):
        S = S0 * d ** np.arange(i, -1, -1) * u ** np.arange(0, i + 1)
        V = disc * (p * V[1:] + (1 - p) * V[:-1])
        V = np.maximum(V, K - S)
    return V[0], V


def test_an_american_option_tree_is_one_loop():
    check(american, 100.0, 100.0, 0.05, 0.2, 1.0, 60)
    check(american, 100.0, 110.0, 0.03, 0.3, 0.5, 7)


def test_a_shrinking_array_meets_a_moving_slice():
    S = np.linspace(50.0, 150.0, 41)

    def level_values(V, S, n):
        for i in range(n - 1, -1, -1):
            V = np.maximum(0.5 * (V[1:] + V[:-1]), S[:i + 1] - 100.0)
        return V
    check(level_values, np.linspace(0.0, 50.0, 41), S, 40)


def sums(x, n):
    s = 0
    for i in range(1, n):
        s += (np.arange(i) * x[i]).sum() + np.arange(i, 0, -1).max() + (
            x[i] ** np.arange(0, 2 * i, 2)).sum()
    return s


def from_the_index(x, n):
    t = np.zeros(3)
    for i in range(n):
        t = t + np.array([np.arange(i, n).sum(), np.arange(i, n).min(), x[i]])
    return t


def fixed_length(x, n):
    s = 0.0
    for i in range(n):
        s = s + (x[i:i + 3] * np.arange(i, i + 3)).sum()
    return s


@pytest.mark.parametrize("function", [sums, from_the_index, fixed_length])
def test_aranges_of_the_loops_index(function):
    check(function, np.linspace(0.5, 1.5, 12), 9)


def past_empty(x):   # its length would go below zero: NumPy's stays empty
    s = 0
    for i in range(10):
        s += np.arange(5 - i).sum()
    return s + x.sum()


def outlives(x):     # the arange is read after the loop
    for i in range(6):
        a = np.arange(i + 1) * x[i]
    return a


@pytest.mark.parametrize("function", [past_empty, outlives])
def test_aranges_that_are_no_windows_run_unrolled_with_numpys_result(function):
    check(function, np.linspace(0.5, 1.5, 12), kinds=("unrolled",))
