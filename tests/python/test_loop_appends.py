"""`items.append(value)` in the body of a captured for loop (kiln._loop_appends): the values
are stacked as an array the loop carries and the list gets its rows after the loop, so a
training loop that keeps its losses is one loop node; it was unrolled (a graph break per
iteration with float()). Also the scheduler fix found with it: a value read from a loop's
results before a later loop ran no longer joins a kernel placed before that loop."""
import numpy as np
import pytest

import kiln


def logistic_regression(X, y, epochs=60, lr=0.5):
    w = np.zeros(X.shape[1])
    losses = []
    for epoch in range(epochs):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - lr * X.T @ (p - y) / len(y)
        losses.append(float(np.mean((p - y) ** 2)))
    return w, losses


def strided(x, n=20):
    out = [np.zeros(3)]
    for i in range(2, n, 3):
        x = np.sin(x) + i
        out.append(x.mean())  # NumPy scalars stay NumPy scalars
    return out


def history(x, n=6):
    rows = []
    for i in range(n):
        x = x * 0.5 + i
        rows.append(x.copy())
    return np.stack(rows), rows[-1]


def counters(x, n=7):
    seen = []
    for i in range(n):
        seen.append(i * 2)  # the loop's index: Python ints
        x = x + 1
    return x, seen


def nested(x, n=4):
    table = []
    for i in range(n):
        row = []
        for j in range(3):
            row.append(float(x[j] * i))
        table.append(row)
    return table


def used_in_the_body(x, n=6):
    out = []
    for i in range(n):
        x = x + 1
        out.append(x.sum())
        if len(out) > 3:
            x = x * 2
    return out


def into_the_callers(x, items, n=5):
    for i in range(n):
        x = x + 1
        items.append(x.sum())
    return x


def same(a, b):
    assert type(a) is type(b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            same(u, v)
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    else:
        assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("function, captured", [
    (logistic_regression, True), (strided, True), (history, True), (counters, True),
    (nested, False), (used_in_the_body, False)])
def test_appends_in_loop_bodies(function, captured):
    rng = np.random.default_rng(0)
    if function is logistic_regression:
        args = (rng.standard_normal((200, 5)), (rng.random(200) > 0.5).astype(float))
    else:
        args = (rng.random(3),)
    compiled = kiln.compile(function)
    for _ in range(2):
        same(compiled(*args), function(*args))
    report = kiln.explain(function)(*args)
    if captured:
        assert [loop.kind for loop in report.loops] == ["loop"]
        assert not report.break_reasons and len(report.graphs) == 1
    else:  # the inner loop of `nested` appends in a captured outer one: it runs as Python
        assert "unrolled" in [loop.kind for loop in report.loops]


def test_appends_to_the_callers_list_reach_it():
    mine, theirs = [], []
    compiled = kiln.compile(into_the_callers)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(np.ones(2), mine), into_the_callers(np.ones(2), theirs))
    same(mine, theirs)


def test_a_loop_count_that_changes_appends_as_python():
    def grow(x, n):
        out = []
        for i in range(n):
            x = x + 1
            out.append(x.sum())
        return out
    compiled = kiln.compile(grow)
    for n in (4, 5, 0, 6):
        same(compiled(np.ones(2), n), grow(np.ones(2), n))


def test_results_of_a_loop_read_before_the_next_loop():
    # Loop 2's results were read in a kernel placed before loop 2 ran: its initial zeros.
    def two_loops(x):
        a = np.zeros(3)
        for j in range(3):
            a[j] = x[j]
        firsts = [a[0], a[1], a[2]]
        b = np.zeros(3)
        for j in range(3):
            b[j] = x[j] * 2
        return firsts, [b[0], b[1], b[2]]
    x = np.arange(3.0) + 1
    same(kiln.compile(two_loops)(x), two_loops(x))
