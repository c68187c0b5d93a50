"""A NumPy array the function made from data kiln cannot trace (a random draw) and then writes in
place, in a loop's body or a branch's side that kiln traces: the trace runs a loop's body once
and both sides of a branch, so NumPy's own writes into the real array (`cash *= 0.5`) were made
once for every iteration, or on both sides, or once more before the Python loop ran the
iteration again (a Longstaff-Schwartz pricer was 1.3% off from its third call). Such arrays are
read-only while traced: the write raises, and the loop or branch runs as Python."""
import numpy as np

import kiln


def discounted(x, n):
    cash = np.random.default_rng(0).random(4)
    total = x.sum()
    for _ in range(n):
        cash *= 0.5
        total = total + cash.sum()
    return cash, total


def discounted_then_masked(S, n):
    paths = np.random.default_rng(0).random((S.shape[0], n))
    cash = paths[:, -1].copy()
    for t in range(n - 2, -1, -1):
        cash *= 0.5
        itm = paths[:, t] > 0.5
        cash[itm] = paths[itm, t] + S[itm]
    return cash.sum()


def written_through_out(x, n):
    cash = np.random.default_rng(1).random(4)
    total = x.sum()
    for t in range(n):
        np.multiply(cash, 0.5, out=cash)
        total = total + t
    return cash, total


def written_through_a_view(x, n):
    cash = np.random.default_rng(2).random(4)
    tail = cash[1:]
    total = x.sum()
    for t in range(n):
        tail *= 0.5
        total = total + t
    return cash, total


def written_on_one_side(x):
    cash = np.random.default_rng(3).random(4)
    if x.sum() > 0:
        cash[0] = 5.0
    else:
        cash[1] = 7.0
    return cash


def check(function, *arguments):
    """Four calls (the first ones may run eagerly, timed): each is NumPy's."""
    compiled = kiln.compile(function)
    expected = function(*arguments)
    for _ in range(4):
        got = compiled(*arguments)
        for a, b in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                        np.atleast_1d(expected) if not isinstance(expected, tuple) else expected):
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=function.__name__)


def test_a_loop_writing_a_drawn_array_in_place_writes_it_every_iteration():
    check(discounted, np.ones(3), 3)
    check(written_through_out, np.ones(3), 4)
    check(written_through_a_view, np.ones(3), 3)


def test_a_loop_that_gives_up_its_capture_writes_a_drawn_array_once_per_iteration():
    check(discounted_then_masked, np.zeros(20), 4)
    check(discounted_then_masked, np.linspace(0, 1, 40), 5)


def test_a_branch_writes_a_drawn_array_on_the_side_taken_only():
    check(written_on_one_side, np.ones(3))
    check(written_on_one_side, -np.ones(3))
