"""np.may_share_memory and np.shares_memory of traced arrays answer as NumPy's run does, where a
traced array is the ndarray it stands for (kiln._numpy_memory). NumPy's own code relies on them:
Generator.permutation copies x only when np.asarray(x) shares x's memory, and it shuffled a
computed array in place when the graph break's ndarray was taken for new memory."""
import numpy as np
import pytest

import kiln

OUTSIDE = np.arange(6.0)


def check(function, *arguments, calls=3):
    """Compiled and NumPy's results (and the arguments afterwards) are equal, over calls with
    new data."""
    compiled = kiln.compile(function)
    for call in range(calls):
        fresh = [np.array(a) * (call + 1) if isinstance(a, np.ndarray) else a
                 for a in arguments]
        mine = [a.copy() if isinstance(a, np.ndarray) else a for a in fresh]
        expected = function(*fresh)
        got = compiled(*mine)
        for e, g in zip(expected, got):
            assert type(e) is type(g)
            np.testing.assert_array_equal(g, e)
        for e, g in zip(fresh, mine):
            np.testing.assert_array_equal(g, e)


def permute_computed(x):
    rng = np.random.default_rng(3)
    y = x + 0
    return y, rng.permutation(y)


def permute_argument(x):
    rng = np.random.default_rng(5)
    return rng.permutation(x), x * 1


def permute_legacy(x):
    rng = np.random.RandomState(7)
    y = np.sqrt(np.abs(x))
    return y, rng.permutation(y)


def permute_rows(x):
    rng = np.random.default_rng(9)
    y = x * 2
    return y, rng.permutation(y, axis=1), rng.permuted(y, axis=0)


def permutation_test(a, b):
    """A permutation test's p-value, as statistics code writes it."""
    rng = np.random.default_rng(11)
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    count = 0
    for _ in range(20):
        shuffled = rng.permutation(pooled)
        count += abs(shuffled[:len(a)].mean() - shuffled[len(a):].mean()) >= observed
    return (count + 1) / 21, pooled


@pytest.mark.parametrize("function, shape", [
    (permute_computed, (9,)), (permute_argument, (9,)), (permute_legacy, (9,)),
    (permute_rows, (4, 5))], ids=lambda v: getattr(v, "__name__", str(v)))
def test_permutation_leaves_its_argument(function, shape):
    check(function, np.arange(float(np.prod(shape))).reshape(shape) - 3)


def test_permutation_test_of_a_computed_pool():
    check(permutation_test, np.linspace(0, 1, 7), np.linspace(0.3, 1.4, 6))


def views(x):
    y = x * 2
    return (np.may_share_memory(y, y[1:]), np.may_share_memory(y[:3], y[3:]),
            np.shares_memory(y[::2], y[1::2]), np.may_share_memory(y[::2], y[1::2]),
            np.shares_memory(y, y.reshape(2, -1).T), np.may_share_memory(x, y),
            np.shares_memory(y[2:5], y[4:]), np.may_share_memory(y[:0], y), y)


def arguments(a, b, c):
    return (np.may_share_memory(a, b), np.shares_memory(a, c), np.may_share_memory(a, a.T),
            np.may_share_memory(a, OUTSIDE), np.shares_memory(b, [1.0, 2.0]), a + b)


def handed_out(x):
    y = x + 1
    if y.sum() > -1e9:  # a graph break: NumPy's answers then hold for its ndarray
        pass
    z = np.asarray(y)
    return (np.may_share_memory(z, y), np.shares_memory(y, z), np.may_share_memory(z, x),
            z * 1)


def test_views_of_a_computed_array():
    check(views, np.arange(6.0))


def test_arguments():
    a = np.arange(6.0)
    check(arguments, a, a + 1, a * 2)


def test_the_same_argument_twice_and_overlapping_arguments():
    def overlapping(a, b):
        return np.may_share_memory(a, b), np.shares_memory(a, b), a + b[0]
    compiled = kiln.compile(overlapping)
    memory = np.arange(8.0)
    for a, b in [(memory, memory), (memory[:5], memory[3:]), (memory[::2], memory[1::2]),
                 (memory[:4], memory[4:])]:
        got, expected = compiled(a, b), overlapping(a, b)
        assert got[:2] == expected[:2]
        np.testing.assert_array_equal(got[2], expected[2])


def test_a_global_array_that_is_the_argument():
    def read_global(x):
        return np.may_share_memory(x, OUTSIDE), np.shares_memory(OUTSIDE, x[1:]), x + 1
    compiled = kiln.compile(read_global)
    for argument in (OUTSIDE, OUTSIDE.copy(), OUTSIDE[::-1]):
        got, expected = compiled(argument), read_global(argument)
        assert got[:2] == expected[:2]
        np.testing.assert_array_equal(got[2], expected[2])


def test_the_ndarray_a_graph_break_hands_out():
    check(handed_out, np.arange(5.0))


def test_compiles_in_one_graph():
    """Answered from the trace: no graph break, so fullgraph=True compiles."""
    def decide(x):
        y = x * 3
        return y + np.may_share_memory(y, y.T) + np.shares_memory(x, y)
    x = np.arange(4.0)
    np.testing.assert_array_equal(kiln.compile(decide, fullgraph=True)(x), decide(x))
