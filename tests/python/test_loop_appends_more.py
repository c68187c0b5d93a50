"""More forms of `items.append(value)` in a captured loop (kiln._loop_appends,
kiln._conditional_appends): lists appended to under a condition read after the loop in one
graph break, two appends an iteration, while loops' histories. Each is compared with NumPy's
run: values, the list's length, each item's type (np.float64 or float)."""
import numpy as np
import pytest

import kiln


def _same(got, want):
    """Equal values of the same Python types, lists and tuples item by item."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _check(function, *args, kind="loop", breaks=0):
    """NumPy's answer, twice (traced, then cached); the loops' kinds; the graph breaks."""
    want = function(*args)
    report = kiln.explain(function)(*args)
    assert [loop.kind for loop in report.loops if loop.kind != "select"] == [kind], report.loops
    assert report.graph_break_count == breaks, report
    compiled = kiln.compile(function)
    for _ in range(2):
        _same(compiled(*args), want)


def accepted_steps(y0, tol, n=60):
    """An adaptive stepper keeping the accepted times and states (RKF45's `ts`, `ys`)."""
    t, y, h = 0.0, y0, 0.1
    ts, ys = [], []
    for i in range(n):
        y_new = y + h * np.cos(y)
        err = np.abs(np.sin(y * (i + 1))).max()
        if err < tol:
            t = t + h
            y = y_new
            ts.append(t)
            ys.append(y)
    if not ts:
        return 0, ts, ys
    return len(ts), np.array(ys), ts[-1], ys[-1], np.mean(ts)


@pytest.mark.parametrize("tol", [-1.0, 0.5, 2.0])
def test_two_conditional_lists_are_read_in_one_break(tol):
    # each list's length was its own graph break, and the graph after one ran the loop again
    # for the stacks nothing held: the loop ran three times
    _check(accepted_steps, np.linspace(0, 1, 4), tol, breaks=1)


def two_histories(x, n=40):
    """An iteration keeping two histories: the norm and the state."""
    norms, states = [], []
    for i in range(n):
        x = np.cos(x)
        norms.append(np.linalg.norm(x))
        states.append(x.copy())
    return x, norms, states, np.array(states).mean(axis=0)


def test_two_lists_appended_each_iteration():
    _check(two_histories, np.linspace(0.2, 1.4, 5))
