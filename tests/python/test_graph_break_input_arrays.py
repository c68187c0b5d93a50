"""A graph break hands code the tracer cannot follow (np.random's C code) the array of a value
that is already an input of the graph so far (an argument, or a value an earlier break
computed) as that array itself, as NumPy's asarray does. Generator.permutation of a computed
array asks np.may_share_memory whether it holds the array's memory before it shuffles; a fresh
copy answered no, so it shuffled the array the trace went on with (a permutation test's p-value
came out 50/51 where NumPy's was 51/51)."""
import numpy as np
import pytest

import kiln
from kiln import _retrace


@pytest.fixture(autouse=True)
def compile_graph_breaks(monkeypatch):
    monkeypatch.setattr(_retrace, "COMPILE_EAGER_CALLS", None, raising=False)


def permutation_of_computed(x):
    rng = np.random.default_rng(3)
    y = x + 0
    return y, rng.permutation(y)


def permutation_then_read(x):
    rng = np.random.default_rng(3)
    y = x * 2
    p = rng.permutation(y)
    return p.sum() + y[0] + y[-1]


def shuffle_argument(x):
    rng = np.random.default_rng(5)
    rng.shuffle(x)
    return x * 1.0


def permutation_test(a, b, rounds=20):
    rng = np.random.default_rng(0)
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    count = 0
    for _ in range(rounds):
        shuffled = rng.permutation(pooled)
        count += abs(shuffled[:a.size].mean() - shuffled[a.size:].mean()) >= observed
    return (count + 1) / (rounds + 1), pooled


@pytest.mark.parametrize("function", [permutation_of_computed, permutation_then_read,
                                      shuffle_argument])
def test_random_c_code_sees_the_arrays_numpy_gives_it(function):
    compiled = kiln.compile(function)
    for size in (6, 9):
        x = np.arange(float(size))
        expected_x, actual_x = x.copy(), x.copy()
        expected, actual = function(expected_x), compiled(actual_x)
        for got, want in zip(np.atleast_1d(actual) if not isinstance(actual, tuple) else actual,
                             np.atleast_1d(expected) if not isinstance(expected, tuple) else expected):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(actual_x, expected_x)


def test_a_permutation_test_counts_as_numpy():
    data = np.random.default_rng(1)
    a, b = data.standard_normal(8), data.standard_normal(9) + 0.1
    expected = permutation_test(a, b)
    actual = kiln.compile(permutation_test)(a, b)
    assert actual[0] == expected[0]
    np.testing.assert_array_equal(actual[1], expected[1])
