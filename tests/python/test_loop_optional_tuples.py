"""An optional value whose payload is a tuple (`best = None`, then `best = (i, x[i])` in the
loop; kiln._loop_optional_values, then kiln._loop_tuple_names splits the payload): one loop
node, where the tuple refused the loop ("`best` is bound on one side of the branch only") and it
unrolled. Checked against NumPy on several inputs, twice each, found and not found (None)."""
import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(29)


def loop_kinds(function, *args):
    return [loop.kind for loop in kiln.explain(kiln.compile(function))(*args).loops
            if loop.kind != "select"]


def check(function, calls, kinds=("loop",)):
    compiled = kiln.compile(function)
    for args in calls:
        expected = function(*args)
        for _ in range(2):
            got = compiled(*args)
            if expected is None:
                assert got is None
                continue
            assert type(got) is tuple and len(got) == len(expected)
            for value, want in zip(got, expected):
                assert type(value) is type(want)
                np.testing.assert_allclose(value, want, rtol=1e-12)
    assert loop_kinds(function, *calls[0]) == list(kinds)


def last_above(x, t):
    best = None
    for i in range(x.shape[0]):
        if x[i] > t:
            best = (i, x[i])
    return best


def largest_gap(x):
    best = None
    for i in range(1, x.shape[0]):
        gap = x[i] - x[i - 1]
        if best is None or gap > best[1]:
            best = (i, gap, x[i - 1])
    return best


def first_pair_sum(x, target):
    pair = None
    for i in range(x.shape[0] - 1):
        if pair is None and x[i] + x[i + 1] > target:
            pair = (x[i], x[i + 1])
    return None if pair is None else pair[0] + pair[1]


def test_a_tuple_payload_set_in_the_loop(rng):
    x = rng.standard_normal(40)
    check(last_above, [(x, 0.5), (x, -5.0), (x, 10.0), (rng.standard_normal(40), 1.0)])


def test_a_running_best_kept_as_a_tuple_read_in_the_loop(rng):
    check(largest_gap, [(rng.standard_normal(30),), (np.cumsum(rng.random(30)),)])


def test_a_tuple_payload_read_where_it_is_present(rng):
    x = rng.standard_normal(25)
    compiled = kiln.compile(first_pair_sum)
    for target in (0.5, 1.5, 100.0):
        for _ in range(2):
            assert compiled(x, target) == first_pair_sum(x, target)
    assert loop_kinds(first_pair_sum, x, 0.5) == ["loop"]


def test_a_returned_tuple_payload_is_no_graph_break(rng):
    """`return best`: the trace returns the tuple, and a call where it is None runs again
    eagerly (it was a graph break, and every call then ran eagerly: NumPy's time)."""
    x = rng.standard_normal(50)
    assert kiln.explain(kiln.compile(last_above))(x, 0.5).graph_break_count == 0
    assert kiln.explain(kiln.compile(largest_gap))(x).graph_break_count == 0
