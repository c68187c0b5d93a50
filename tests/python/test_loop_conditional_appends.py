"""`items.append(value)` under a traced condition in a for loop's body (kiln._conditional_appends):
in an `if` of the body, or after a `break`'s test. The loop is one loop node carrying the rows
and their count; after it the list holds the rows appended, as NumPy's code would see them.
Each of these loops was unrolled (a graph break per iteration)."""
import numpy as np
import pytest

import kiln


def residual_history(A, b, n=30):
    """Conjugate gradient keeping the residual norm every third iteration."""
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    history = []
    for k in range(n):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        if k % 3 == 0:
            history.append(np.sqrt(rs_new))
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, history


def accepted_steps(y0, tol, n=50):
    """An adaptive stepper keeping the accepted steps only (RKF45's `ts`, `ys`)."""
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
    return ts, ys


def perceptron(X, y):
    """One pass of the perceptron, keeping the samples it got wrong."""
    w = np.zeros(X.shape[1])
    mistakes = []
    for i in range(X.shape[0]):
        if y[i] * (w @ X[i]) <= 0:
            w += y[i] * X[i]
            mistakes.append(i)
    return w, mistakes


def until_converged(x, tol, n=40):
    """A history kept until a test breaks the loop."""
    history = []
    for i in range(n):
        x = 0.5 * x
        r = np.abs(x).max()
        history.append(r)
        if r < tol:
            break
    return x, history


def _same(got, want):
    """Equal values of the same Python types, lists and tuples item by item."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b)
    elif want is not None:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


_rng = np.random.default_rng(3)
_M = _rng.standard_normal((6, 6))
_X = _rng.standard_normal((20, 3))
_LABELS = np.sign(_X @ np.array([1.0, -2.0, 0.5]))
CASES = {  # (function, arguments, how many appends NumPy's run makes)
    "history": (residual_history, (_M @ _M.T + 6 * np.eye(6), _rng.standard_normal(6)), 10),
    "some_accepted": (accepted_steps, (np.linspace(0, 1, 4), 0.5), 3),
    "all_accepted": (accepted_steps, (np.linspace(0, 1, 4), 2.0), 50),
    "none_accepted": (accepted_steps, (np.linspace(0, 1, 4), -1.0), 0),
    "mistakes": (perceptron, (_X, _LABELS), 4),
    "all_mistakes": (perceptron, (_X, np.zeros(20)), 20),  # (0 <= 0)
    "breaks": (until_converged, (np.ones(3), 1e-3), 10),
    "breaks_at_once": (until_converged, (np.ones(3), 10.0), 1),
    "never_breaks": (until_converged, (np.ones(3), 0.0), 40),
}


@pytest.mark.parametrize("case", CASES)
def test_conditional_appends_are_one_loop(case):
    function, args, appends = CASES[case]
    want = function(*args)
    assert len(want[-1]) == appends
    report = kiln.explain(function)(*args)
    kinds = [loop.kind for loop in report.loops]
    assert "loop" in kinds and "unrolled" not in kinds, report.loops
    compiled = kiln.compile(function)
    for _ in range(2):  # traced, then from the cache
        _same(compiled(*args), want)


def uses_after_the_loop(y0, tol):
    ts, ys = accepted_steps(y0, tol, 20)
    if not ys:
        return len(ts), 0.0, np.zeros((0, 4))
    return len(ts), sum(ts), np.array(ys), ys[-1], ts[-1], np.mean(ys[0])


@pytest.mark.parametrize("tol", [-1.0, 0.5, 2.0])
def test_the_list_after_the_loop(tol):
    args = (np.linspace(0, 1, 4), tol)
    _same(kiln.compile(uses_after_the_loop)(*args), uses_after_the_loop(*args))


def both_sides(x, n=12):
    out = []
    for i in range(n):
        x = np.cos(x)
        if x.sum() > 2.0:
            out.append(x.sum())
        else:
            out.append(-x.sum())
    return out


def after_continue(x, n=12):
    kept = []
    for i in range(n):
        x = np.sin(x) + 0.3
        if x.max() > 0.8:
            continue
        kept.append(x.copy())
    return x, kept


def nested_conditions(x, n=15):
    kept = []
    for i in range(n):
        x = 0.9 * x + 0.1 * i
        if x[0] > 1.0:
            if x[1] < 3.0:
                kept.append(float(x[1]))
    return kept


@pytest.mark.parametrize("function", [both_sides, after_continue, nested_conditions])
def test_other_conditional_forms(function):
    x = np.linspace(0.2, 1.4, 3)
    want = function(x)
    report = kiln.explain(function)(x)
    assert "unrolled" not in [loop.kind for loop in report.loops], report.loops
    _same(kiln.compile(function)(x), want)


def read_in_the_loop(x, n=10):
    kept = [0.0]
    for i in range(n):
        x = np.cos(x)
        if x.sum() > 1.0:
            kept.append(float(x.sum()) + kept[-1])
    return kept


def appends_twice(x, n=10):
    kept = []
    for i in range(n):
        x = np.cos(x)
        if x.sum() > 1.0:
            kept.append(x.sum())
        if x.sum() > 0.5:
            kept.append(x.max())
    return kept


def appends_in_a_nested_loop(x, n=4):
    kept = []
    for i in range(n):
        for j in range(3):
            if x[j] * i > 1.0:
                kept.append(x[j] * i)
    return kept


@pytest.mark.parametrize("function", [read_in_the_loop, appends_twice,
                                      appends_in_a_nested_loop])
def test_forms_left_as_python_give_numpys_answer(function):
    x = np.linspace(0.2, 1.4, 3)
    _same(kiln.compile(function)(x), function(x))


def after_items_from_before(x, n):
    kept = [1.0]
    for i in range(n):
        x = np.cos(x)
        if x.sum() > 1.5:
            kept.append(float(x.sum()))
    return kept, x


@pytest.mark.parametrize("n", [0, 1, 9])
def test_items_from_before_the_loop_and_short_ranges(n):
    x = np.linspace(0.2, 1.4, 3)
    _same(kiln.compile(after_items_from_before)(x, n), after_items_from_before(x, n))
    _same(kiln.compile(until_converged)(x, 0.3, n), until_converged(x, 0.3, n))


def test_fullgraph_names_the_lists_length():
    # the list's length is Python's to know: read from the graph after the loop (a break)
    compiled = kiln.compile(after_items_from_before, fullgraph=True)
    with pytest.raises(kiln.GraphBreak, match="length of a list a loop appends to"):
        compiled(np.linspace(0.2, 1.4, 3), 9)


def breaks_then_appends_in_a_loop(x):
    acc, vals = 0.0, []
    for i in range(8):
        if acc > 1.458:
            break
        for j in range(3):
            vals.append(x[i] + j)
            acc = acc + 0.3
    return acc, vals


def appends_in_a_loop_under_an_if(x):
    vals = [1.0]
    for i in range(6):
        if x[i] > 3.0:
            for j in range(2):
                vals.append(x[j] * i)
    return vals


def appends_in_loops_on_both_sides(x):
    vals = []
    for i in range(8):
        if x[i] > 3.0:
            for j in range(2):
                vals.append(x[i] + j)
        else:
            for j in range(3):
                vals.append(-x[i])
    return vals


def while_appends_in_a_loop_after_a_break(x, k):
    acc, vals, i = 0.0, [], 0
    while i < 8 and acc < 7.0:
        if acc > 1.458:
            break
        for j in range(3):
            if acc > 0.719:
                vals.append(k[(i + 1) % 8] * 0.5)
            acc = acc * 0.5 + np.sin(x[7 - i])
        i += 1
    return acc, sum(vals), len(vals)


@pytest.mark.parametrize("function", [breaks_then_appends_in_a_loop, appends_in_a_loop_under_an_if,
                                      appends_in_loops_on_both_sides],
                         ids=lambda f: f.__name__)
def test_appends_in_a_loop_under_a_traced_condition_count_where_it_ran(function):
    """A loop nested in the side of a branch on a traced value (an `if`, or what follows a
    break's test) appends only where the side is taken: the branch merges the list like the
    names it binds (kiln._loop_transform._appended_in_loops). The list got every iteration's
    rows before, the side taken or not."""
    compiled = kiln.compile(function)
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(0, 6, 8)
        np.testing.assert_allclose(_flat(compiled(x.copy())), _flat(function(x)), rtol=1e-12)


def test_a_while_loop_appending_in_a_nested_loop_after_a_break():
    """The nested-loop fuzzer's program (seed 86, number 60) reduced: the list's length and sum
    after the loop are NumPy's (CaptureFailed escaped to the caller, or the sum was off)."""
    compiled = kiln.compile(while_appends_in_a_loop_after_a_break)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x, k = rng.standard_normal(8), rng.integers(-3, 4, 8)
        np.testing.assert_allclose(compiled(x, k), while_appends_in_a_loop_after_a_break(x, k),
                                   rtol=1e-12)


def _flat(result):
    """The numbers of a result of floats, arrays and lists of them, in order."""
    if isinstance(result, (tuple, list)):
        return [v for item in result for v in _flat(item)] + [len(result)]
    return [float(result)]
