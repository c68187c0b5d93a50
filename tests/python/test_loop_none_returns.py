"""A function that returns None on one path and an array on another (`for i in range(n): if
np.any(x[i] < 0): return None`, then `return x * 2`): the loop is one loop node and the call's
graph returns the array, rerunning the call eagerly where the None path is taken, so the caller
gets NumPy's None (kiln._loop_returns starts the merged result at None, kiln._branch_capture's
_returned_or_none). The loop was unrolled ("`__kiln_result` is bound on one side of the branch
only") with a graph break an iteration, and every call ran eagerly."""
import copy

import numpy as np

import kiln
from test_loop_list_items import check


def doubled_unless_negative(x):
    for i in range(len(x)):
        if np.any(x[i] < 0):
            return None
    return x * 2


def normalised_unless_flat(x):
    if x.max() - x.min() < 1e-12:
        return None
    return (x - x.min()) / (x.max() - x.min())


def first_row_scaled(x, limit):
    total = 0.0
    for i in range(len(x)):
        total += x[i].sum()
        if total > limit:
            return None
    return x[0] * total


def explained(function, *arguments):
    return kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))


def test_a_check_in_a_loop_that_gives_up():
    rng = np.random.default_rng(0)
    positive = np.abs(rng.standard_normal((40, 5)))
    negative_late, negative_first = positive.copy(), positive.copy()
    negative_late[33, 2] = -1.0
    negative_first[0, 0] = -1.0
    compiled = kiln.compile(doubled_unless_negative)
    for x in (positive, negative_late, negative_first, positive[:0], positive[:1], positive):
        got = compiled(x.copy())
        expected = doubled_unless_negative(x.copy())
        if expected is None:
            assert got is None
        else:
            check(doubled_unless_negative, x)
    report = explained(doubled_unless_negative, positive)
    assert "loop" in [loop.kind for loop in report.loops] and report.graph_break_count == 0


def test_a_guard_clause_returning_none():
    x = np.linspace(0.0, 3.0, 7)
    for value in (x, np.full(4, 2.0), x[::-1]):
        check(normalised_unless_flat, value, calls=3)
    assert explained(normalised_unless_flat, x).graph_break_count == 0


def test_a_running_total_that_gives_up():
    x = np.arange(12.0).reshape(6, 2)
    for limit in (-1.0, 5.0, 40.0, 1e9):
        check(first_row_scaled, x, limit, calls=2)
    report = explained(first_row_scaled, x, 1e9)
    assert "loop" in [loop.kind for loop in report.loops] and report.graph_break_count == 0
