"""Arguments that share memory follow NumPy's sequential semantics: a write through one is seen
by reads through the other, and the caller's arrays end as NumPy leaves them. So do arguments
whose own elements share memory (as_strided with a zero or short stride)."""
import numpy as np
from numpy.lib.stride_tricks import as_strided
import pytest

import kiln


def both(function, make):
    """Compiled and eager on fresh copies of the same memory: (results, final memories)."""
    memories = [np.arange(12.0), np.arange(12.0)]
    results = []
    for runner, memory in zip((kiln.compile(function), function), memories):
        try:
            results.append(runner(*make(memory)))
        except Exception as error:  # noqa: BLE001 - the class is compared
            results.append(type(error))
    return results, memories


def assert_same(function, make):
    (compiled, eager), (mine, theirs) = both(function, make)
    if isinstance(eager, type):
        assert compiled is eager
    else:
        np.testing.assert_allclose(compiled, eager)
    np.testing.assert_array_equal(mine, theirs)


def increment_both(x, y):
    x += 1
    y += 1
    return x.sum() + y.sum()


def write_then_read(x, y):
    x *= 2
    return y + 0.5


def read_then_write(x, y):
    total = y.sum()
    x[:] = 7
    return y * total


def assign_shifted(x, y):
    x[:] = y + 1
    return x


def fancy_write(x, y):
    x[np.array([0, 2])] = -5
    return y.copy()


CASES = [
    (increment_both, lambda a: (a, a)),
    (increment_both, lambda a: (a[:6], a[:6])),
    (write_then_read, lambda a: (a, a[::2])),
    (write_then_read, lambda a: (a[::2], a)),
    (read_then_write, lambda a: (a, a[1::3])),
    (assign_shifted, lambda a: (a[1:], a[:-1])),
    (assign_shifted, lambda a: (a[:-1], a[1:])),
    (assign_shifted, lambda a: (a[::-1], a)),
    (write_then_read, lambda a: (a.reshape(3, 4), a.reshape(3, 4).T)),
    (fancy_write, lambda a: (a[2:], a[:5])),
    (write_then_read, lambda a: (a[:6], a[6:])),  # adjacent, not overlapping
]


@pytest.mark.parametrize("function, make", CASES)
def test_aliased_arguments_match_numpy(function, make):
    assert_same(function, make)


def test_views_of_another_dtype_run_eagerly_and_correctly():
    assert_same(write_then_read, lambda a: (a[:4], a.view(np.int64)[:4]))


def test_read_only_aliasing_is_compiled_and_correct():
    compiled = kiln.compile(lambda x, y: x * 2 + y[::-1])
    a = np.arange(8.0)
    np.testing.assert_allclose(compiled(a, a), a * 2 + a[::-1])


def test_a_global_aliasing_an_argument():
    namespace = {"np": np}
    exec("W = np.arange(6.0)\n"
         "def scale(x):\n"
         "    x *= 3\n"
         "    return W + 1\n", namespace)
    compiled = kiln.compile(namespace["scale"])
    result = compiled(namespace["W"])  # x is W itself
    np.testing.assert_array_equal(namespace["W"], np.arange(6.0) * 3)
    np.testing.assert_array_equal(result, np.arange(6.0) * 3 + 1)


def test_the_guard_switches_between_aliased_and_independent_calls():
    compiled = kiln.compile(increment_both)
    for aliased in (False, True, False, True, True, False):
        a, b = np.arange(4.0), np.arange(4.0) + 10
        expected_a, expected_b = a.copy(), b.copy()
        if aliased:
            result = compiled(a, a)
            expected = increment_both(expected_a, expected_a)
            np.testing.assert_array_equal(a, expected_a)
        else:
            result = compiled(a, b)
            expected = increment_both(expected_a, expected_b)
            np.testing.assert_array_equal((a, b), (expected_a, expected_b))
        assert result == expected
    assert len(compiled._kiln_function.cache) == 2


def increment_then_sum(x, y):
    x += y
    return x.sum()


def assign_scaled(x, y):
    x[...] = y * 2
    return x


def double_then_read(x):
    x *= 2
    return x + 0


# (function, arguments over the memory): the written argument's elements share memory.
OVERLAPPING_ITSELF = [
    (increment_then_sum, lambda a: (as_strided(a, (5,), (0,)), np.arange(5.0))),
    (increment_then_sum, lambda a: (as_strided(a, (4, 3), (0, 8)), np.ones((4, 3)))),
    (assign_scaled, lambda a: (as_strided(a, (3, 3), (16, 8)), np.arange(9.0).reshape(3, 3))),
    (double_then_read, lambda a: (as_strided(a[1:], (3, 4), (8, 8)),)),
    (increment_both, lambda a: (as_strided(a, (4,), (0,)), a[:3])),
]


@pytest.mark.parametrize("function, make", OVERLAPPING_ITSELF)
def test_an_argument_whose_elements_share_memory_is_written_as_numpy_writes_it(function, make):
    # The graph saw its elements as independent: x.sum() after `x += y` on a zero-stride x
    # summed the values computed, not the one address's last value (10.0 for NumPy's 20.0).
    assert_same(function, make)


def test_a_global_and_an_attribute_whose_elements_share_memory_are_written_as_numpy_writes_them():
    namespace = {"np": np}
    exec("def add(y):\n"
         "    G[...] += y\n"
         "    return G.sum()\n", namespace)

    class Model:
        def __init__(self):
            self.w = as_strided(np.zeros(5), (3, 3), (8, 8))

        def step(self, y):
            self.w += y
            return self.w.sum()

    y = np.arange(9.0).reshape(3, 3)
    memories = []
    for runner in (lambda f: f, kiln.compile):
        memory = np.zeros(5)
        namespace["G"] = as_strided(memory, (3, 3), (8, 8))
        model = Model()
        assert runner(namespace["add"])(y) == runner(model.step)(y) == 46.0  # not 36.0
        memories.append((memory, model.w.copy()))
    np.testing.assert_array_equal(memories[0][0], memories[1][0])
    np.testing.assert_array_equal(memories[0][1], memories[1][1])


def test_an_argument_whose_elements_share_memory_is_compiled_while_only_read():
    a = np.arange(12.0)
    windows = as_strided(a, (10, 3), (8, 8))  # writeable, as as_strided makes it
    report = kiln.explain(lambda w: w.sum(1))(windows)
    np.testing.assert_array_equal(report.result, windows.sum(1))
    assert not report.break_reasons and report.kernels


def test_a_written_argument_whose_elements_share_memory_is_a_graph_break_under_fullgraph():
    with pytest.raises(kiln.GraphBreak, match="share memory"):
        kiln.compile(increment_then_sum, fullgraph=True)(
            as_strided(np.zeros(1), (5,), (0,)), np.arange(5.0))
