"""More forms of `items.append(value)` in a captured loop (kiln._loop_appends,
kiln._conditional_appends): lists appended to under a condition read after the loop in one
graph break, two appends an iteration, while loops' histories. Each is compared with NumPy's
run: values, the list's length, each item's type (np.float64 or float)."""
import numpy as np
import pytest

import kiln
from test_loop_conditional_appends import _same


def _check(function, *args, kinds=("loop",), breaks=0):
    """NumPy's answer, twice (traced, then cached); the loops' kinds; the graph breaks (None:
    not checked)."""
    want = function(*args)
    report = kiln.explain(function)(*args)
    assert tuple(loop.kind for loop in report.loops if loop.kind != "select") == kinds, (
        report.loops)
    assert breaks is None or report.graph_break_count == breaks, report
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


def predictor_corrector(x, n=30):
    """A trajectory recording the predictor and the corrector of each step (Heun's method)."""
    traj = []
    for i in range(n):
        pred = x + 0.1 * np.sin(x)
        traj.append(pred.sum())
        x = x + 0.05 * (np.sin(x) + np.sin(pred))
        traj.append(x.sum())
    return x, traj, np.array(traj)[::2], len(traj)


def two_conditions(x, n=25):
    """Two tests of an iteration, each keeping a value: zero, one or two appends."""
    kept = []
    for i in range(n):
        x = np.cos(x) + 0.01 * i
        if x.sum() > 1.0:
            kept.append(x.sum())
        if x.max() > 0.7:
            kept.append(x.max())
    return x, kept


def twice_on_a_side(x, n=20):
    """A branch whose one side appends twice and the other none."""
    events = []
    for i in range(n):
        x = np.cos(x) + 0.02 * i
        if x[0] > 0.8:
            events.append(x[:2].copy())
            events.append(x[1:].copy())
    return events


def sweeps(x, n=12, m=5):
    """An outer iteration with short inner sweeps, keeping every inner residual."""
    res = []
    for i in range(n):
        for j in range(m):
            x = 0.5 * (x + np.cos(x))
            res.append(np.abs(x - np.cos(x)).max())
    return x, res


def sides_differ(x, n=20):
    kept = []
    for i in range(n):
        x = np.cos(x) + 0.02 * i
        if x[0] > 0.8:
            kept.append(x.sum())
            kept.append(x.max())
        else:
            kept.append(x.min())
    return kept


@pytest.mark.parametrize("function", [predictor_corrector, two_conditions, twice_on_a_side,
                                      sweeps, sides_differ])
def test_appends_twice_an_iteration(function):
    # each was unrolled (a list appended to more than once in an iteration); the sweeps'
    # inner loop (a short static one) unrolls into the outer loop's body: five appends in it
    x = np.linspace(0.2, 1.4, 3)
    kinds = ("unrolled", "loop") if function is sweeps else ("loop",)
    _check(function, x, kinds=kinds, breaks=0 if function in (predictor_corrector, sweeps) else 1)


def nested_sides(x, n=20):
    """Appends in nested branches: one, two or three rows an iteration."""
    kept = []
    for i in range(n):
        x = np.cos(x) + 0.03 * i
        if x[0] > 0.7:
            kept.append(x[0])
            if x[1] > 0.6:
                kept.append(x[1])
                kept.append(x[2])
        else:
            kept.append(-x[0])
    return x, kept


@pytest.mark.parametrize("n", [0, 1, 20])
def test_nested_branches_appending(n):
    _check(nested_sides, np.linspace(0.2, 1.4, 3), n, breaks=1 if n > 2 else None,
           kinds=("loop",) if n > 2 else ())


def reads_its_last(x, n=20):
    kept = [0.0]
    for i in range(n):
        x = np.cos(x)
        kept.append(x.sum())
        kept.append(kept[-1] + kept[-2])
    return kept


def mixed_types(x, n=20):
    traj = []
    for i in range(n):
        x = np.cos(x)
        traj.append(x.sum())
        traj.append(float(x.max()))  # a Python float after a np.float64: kept as NumPy's
    return traj


@pytest.mark.parametrize("function", [reads_its_last, mixed_types])
def test_forms_left_as_python_give_numpys_answer(function):
    x = np.linspace(0.2, 1.4, 3)
    _check(function, x, kinds=("unrolled",), breaks=None)


def newton_sqrt(a, tol=1e-12, maxit=50):
    """Newton's iteration for sqrt(a), keeping the error of each step (np.float64 items)."""
    x = a.copy()
    err = np.abs(x * x - a).max()
    k = 0
    hist = []
    while err > tol and k < maxit:
        x = 0.5 * (x + a / x)
        err = np.abs(x * x - a).max()
        hist.append(err)
        k += 1
    return x, k, hist, len(hist), np.array(hist)


def bisection(lo, hi, tol=1e-10, maxit=100):
    """Bisection on cos(x) = x, keeping the widths (Python floats), counted from 1."""
    widths = []
    k = 1
    while maxit >= k and (hi - lo).max() > tol:
        mid = 0.5 * (lo + hi)
        left = np.cos(mid) - mid > 0
        lo = np.where(left, mid, lo)
        hi = np.where(left, hi, mid)
        widths.append(float((hi - lo).max()))
        k = k + 1
    return lo, widths, widths[-1] if widths else None


@pytest.mark.parametrize("tol, maxit", [(1e-12, 50), (0.0, 7), (1e9, 50)])
def test_while_loop_histories(tol, maxit):
    # unrolled: the appends were a call whose effects would happen once
    _check(newton_sqrt, np.linspace(1.0, 100.0, 8), tol, maxit, breaks=1)
    _check(bisection, np.zeros(8), np.full(8, 2.0), tol, maxit, breaks=1)


def with_a_break(x, maxit):
    """A fixed-point iteration that breaks on convergence, its counter a NumPy int bound."""
    hist, k = [], 0
    while k < maxit:
        x = np.cos(x)
        r = np.abs(x - np.cos(x)).max()
        hist.append(r)
        if r < 1e-3:
            break
        k += 1
    return x, hist, k


def test_a_numpy_int_bound():
    _check(newton_sqrt, np.linspace(1.0, 100.0, 8), 1e-12, np.int64(30), breaks=1)


def unbounded(x, tol):
    hist = []
    while np.abs(x).max() > tol:
        x = 0.5 * x
        hist.append(np.abs(x).max())
    return hist


def skips_the_counter(x, maxit=10):
    hist, k = [], 0
    while k < maxit and x.max() < 100.0:
        x = x * 1.5
        if x.max() > 5.0:
            continue
        hist.append(x.max())
        k += 1
    return hist, k


@pytest.mark.parametrize("function", [unbounded, skips_the_counter, with_a_break])
def test_while_loops_without_a_bound_give_numpys_answer(function):
    # (with_a_break: its counter steps under the break's flag, a traced value when the loop
    # is captured: no bound known)
    args = {unbounded: (np.linspace(0.2, 1.4, 3), 0.01), skips_the_counter: (np.ones(3),),
            with_a_break: (np.linspace(0.2, 1.4, 3), 5)}[function]
    want = function(*args)
    report = kiln.explain(function)(*args)
    loops = [loop for loop in report.loops if loop.kind != "select"]
    assert [loop.kind for loop in loops] == ["unrolled"], loops
    assert "bounds no counter" in loops[0].reason or function is skips_the_counter
    _same(kiln.compile(function)(*args), want)
