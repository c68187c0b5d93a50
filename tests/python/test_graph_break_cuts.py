"""A graph break cuts the trace (kiln._retrace._TraceContext.graph_break,
src/python/graph_segments.h): the segment that computes the value the break needs also computes
every value the tracer still holds, and what follows reads those as inputs. A loop with a break
in its body (a progress print, a Python-side check) compiles a few graphs, not one per iteration
(each holding every iteration before it); results, in-place updates of inputs and views across
the cuts are eager NumPy's."""
import io
import contextlib

import numpy as np
import pytest

import kiln


def logistic_regression(X, y, lr, epochs):
    w = np.zeros(X.shape[1])
    for epoch in range(epochs):
        p = 1 / (1 + np.exp(-X @ w))
        w -= lr * (X.T @ (p - y)) / len(y)
        if epoch % 10 == 0:  # a progress print: a graph break every ten iterations
            loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
            print(f"epoch {epoch}: loss {loss:.6f}")
    return w


def scale_input_in_place(x):
    for i in range(7):
        x *= 1.5
        if i % 2 == 0:
            print(float(x.sum()))
        x[0] += 1.0
    return x.sum()


def through_a_view(x):
    a = x * 2.0
    view = a[1:]
    for i in range(5):
        view += 1.0  # writes through to `a`, across each cut
        print(float(a.sum()))
    return a, view


def outputs_of(function, *args):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = function(*args)
    return result, printed.getvalue()


@pytest.mark.parametrize("epochs", [35, 90])
def test_a_break_every_few_iterations_compiles_a_few_graphs(epochs):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = (X[:, 0] > 0).astype(float)
    expected, expected_printed = outputs_of(logistic_regression, X, y, 0.5, epochs)
    report = kiln.explain(logistic_regression)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        result = report(X, y, 0.5, epochs)
    np.testing.assert_allclose(result.result, expected, rtol=1e-12, atol=1e-15)
    assert printed.getvalue() == expected_printed
    # the first segment, the one between two prints (the same each time), the last one
    assert result.graph_count <= 4, str(result)
    compiled = kiln.compile(logistic_regression)
    for scale in (1.0, 3.0):
        got, got_printed = outputs_of(compiled, X * scale, y, 0.5, epochs)
        want, want_printed = outputs_of(logistic_regression, X * scale, y, 0.5, epochs)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert got_printed == want_printed


def test_inputs_updated_in_place_across_cuts_are_written_back():
    compiled = kiln.compile(scale_input_in_place)
    for start in (np.arange(4.0), np.linspace(-1, 1, 4)):
        x, y = start.copy(), start.copy()
        got, got_printed = outputs_of(compiled, x)
        want, want_printed = outputs_of(scale_input_in_place, y)
        assert got == pytest.approx(want, rel=1e-12) and got_printed == want_printed
        np.testing.assert_array_equal(x, y)


def test_views_write_through_across_cuts():
    compiled = kiln.compile(through_a_view)
    x = np.arange(5.0)
    (a, view), printed = outputs_of(compiled, x)
    (want_a, want_view), want_printed = outputs_of(through_a_view, x)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(view, want_view)
    assert printed == want_printed


def test_retraced_calls_are_timed_against_eager_ones_and_stay_right():
    """A function traced again on every call is timed against eager calls (RetraceTimes); the
    faster way runs from then on, per kind of arguments. Either way the results are NumPy's."""
    compiled = kiln.compile(scale_input_in_place)
    runs = 2 * kiln._retrace.RetraceTimes.CALLS + 3
    for k in range(runs):
        x, y = np.arange(4.0) + k, np.arange(4.0) + k
        got, got_printed = outputs_of(compiled, x)
        want, want_printed = outputs_of(scale_input_in_place, y)
        assert got == pytest.approx(want, rel=1e-12) and got_printed == want_printed
        np.testing.assert_array_equal(x, y)
    (times,) = compiled._kiln_function.retrace_times.values()
    # (a traced call over SLOWER times the fastest eager one settles it before CALLS of them)
    assert times.choice in ("eager", "traced") and 1 <= len(times.eager) <= times.CALLS
    for _ in range(2):  # another shape (compiled on its first call): measured on its own
        outputs_of(compiled, np.arange(5.0))
    assert len(compiled._kiln_function.retrace_times) == 2


def positions(m):
    return np.argwhere(m)  # a function kiln lacks: a break, then eager NumPy


def test_a_function_settled_on_eager_calls_it_directly(monkeypatch, eager_time_bounds):
    """Once its retraced calls run eagerly, a call is the function's own after the guards: the
    arguments are no longer flattened nor their signature built (30-60 us a call where NumPy
    takes 2). A new kind of arguments is measured on its own again. (kiln's bound on compiles
    by eager time settles it: no compile fits in 50 calls of a few microseconds.)"""
    compiled = kiln.compile(positions)
    m = np.arange(39).reshape(3, 13) % 3 == 0
    function = compiled._kiln_function
    runs = 2 * kiln._retrace.RetraceTimes.CALLS + 2
    for _ in range(runs):
        np.testing.assert_array_equal(compiled(m), positions(m))
    (times,) = function.retrace_times.values()
    assert times.choice == "eager"
    flattened = []
    original = kiln._pytree.flatten_call
    monkeypatch.setattr(kiln._pytree, "flatten_call",
                        lambda *a, **k: flattened.append(1) or original(*a, **k))
    for _ in range(3):
        np.testing.assert_array_equal(compiled(m), positions(m))
    assert not flattened
    m2 = np.ones((2, 5), bool)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(m2), positions(m2))
    assert len(function.retrace_times) == 2 and flattened


def test_a_break_in_a_function_that_returns_nothing_prints_once():
    """The trace ran the function, its print included: a call whose graph computes nothing
    returns that result rather than running the function again."""
    def report(x):
        print(f"{float((x * 2).sum()):.3f}")

    compiled = kiln.compile(report)
    for x in (np.arange(3.0), np.ones(3), np.arange(3.0)):
        assert outputs_of(compiled, x) == outputs_of(report, x)
