"""Names a loop's body binds first (unbound before the loop) that are read after it
(kiln._loop_first_bindings): Python's value is the last one bound, and the name is unbound
(UnboundLocalError at the read) where no iteration bound it. Power iteration with `lam_new = v @ w`
first bound in a body that breaks was unrolled over its 1000 iterations ("bound on one side of
the branch only"); a loop over a range(n) whose n changes between calls (a dynamic number) or a
while loop with a traced test gave zeros where n was 0 instead of Python's error."""
import numpy as np
import pytest

import kiln


def _same(result, expected):
    if isinstance(expected, tuple):
        assert type(result) is tuple and len(result) == len(expected)
        for value, want in zip(result, expected):
            _same(value, want)
        return
    assert type(result) is type(expected)
    # a float32 reduction (v @ w) may round its sum in another order: a few ulp of float32
    rtol = 1e-6 if np.asarray(expected).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result, expected, rtol=rtol)


def _outcome(function, args):
    try:
        return function(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args]), None
    except Exception as error:  # NumPy's own error, which kiln must raise too
        return None, type(error)


def _agrees(function, *calls):
    """kiln's results of `function` on each argument tuple of `calls`, twice each, are Python's
    (its value and type; its error where it raises). Returns the compiled function."""
    compiled = kiln.compile(function)
    for args in calls:
        expected, error = _outcome(function, args)
        for _ in range(2):
            result, compiled_error = _outcome(compiled, args)
            assert compiled_error is error
            if error is None:
                _same(result, expected)
    return compiled


def _kinds(function, *args):
    return [loop.kind for loop in kiln.explain(function)(*args).loops if loop.kind != "select"]


# ---- a name bound before the first jump of a body that breaks or continues ----

def power_iteration(A):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    for _ in range(1000):
        w = A @ v
        lam_new = v @ w
        v = w / np.linalg.norm(w)
        if abs(lam_new - lam) < 1e-10:
            break
        lam = lam_new
    return lam_new, v


def power_iteration_float32(A):  # the name keeps NumPy's scalar type
    v = np.ones(A.shape[0], np.float32)
    for _ in range(200):
        w = A @ v
        lam_new = v @ w / (v @ v)
        v = w / np.linalg.norm(w)
        if lam_new > 1e4:
            break
    return lam_new


def doubled_until(x, limit):
    s = 0.0
    for i in range(x.shape[0]):
        t = x[i] * 2
        if t > limit:
            break
        s = s + t
    return s, t


def skipped_negatives(x):
    s = 0.0
    for i in range(x.shape[0]):
        t = x[i] * 2
        if t < 0:
            continue
        s = s + t
    return s, t


def bound_after_a_jump_the_first_iteration_never_takes(x):
    # `found` is False in the first iteration: it reaches `t = ...` before any break
    found = False
    for i in range(x.shape[0]):
        if found:
            break
        t = x[i] * 3
        found = t > 7
    return t


def bound_on_both_sides_then_breaks(x):
    for i in range(x.shape[0]):
        if x[i] > 0:
            t = x[i]
        else:
            t = -x[i]
        if t > 3:
            break
    return t, float(t)


def inner_break_in_an_outer_loop(M):
    out = np.zeros(M.shape[0])
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            t = M[r, c] * 2
            if t > 5:
                break
        out[r] = t
    return out


SYMMETRIC = np.random.default_rng(0).random((12, 12))
SYMMETRIC = SYMMETRIC + SYMMETRIC.T
X = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.5, -2.0, 1.5])


@pytest.mark.parametrize("function, args", [
    (power_iteration, (SYMMETRIC,)),
    (power_iteration_float32, (SYMMETRIC.astype(np.float32),)),
    (doubled_until, (X, 7.0)),
    (doubled_until, (X, 100.0)),
    (skipped_negatives, (X,)),
    (bound_after_a_jump_the_first_iteration_never_takes, (X,)),
    (bound_on_both_sides_then_breaks, (-X,)),
    (inner_break_in_an_outer_loop, (np.arange(24.0).reshape(4, 6) % 7,)),
])
def test_a_name_bound_before_the_first_jump_is_carried(function, args):
    _agrees(function, args)
    assert set(_kinds(function, *args)) == {"loop"}


def bisection(coefficients, lo=0.0, hi=2.0, steps=60):
    # `mid` is a Python float in the first trace (lo and hi still numbers): the loop was
    # unrolled, 60 iterations of selects ("the loop changes the Python value of `mid`")
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if np.polyval(coefficients, mid) > 0:
            hi = mid
        else:
            lo = mid
    return mid


def constant_step(x, n=10):
    for i in range(n):
        step = np.float32(0.5)  # the same NumPy number each iteration, read after the loop
        x = x + step
    return x, step


def test_a_number_first_bound_in_the_body_is_carried():
    _agrees(bisection, (np.array([1.0, 0.0, -2.0]),), (np.array([1.0, -1.0]),))
    _agrees(constant_step, (X,), (X.astype(np.float32),))
    assert _kinds(bisection, np.array([1.0, 0.0, -2.0])) == ["loop"]
    assert _kinds(constant_step, X) == ["loop"]


def bound_after_a_break(x):
    # the first iteration may break before `t` is bound: Python's t may be unbound
    for i in range(x.shape[0]):
        if x[i] > 3:
            break
        t = x[i] * 2
    return t


def read_before_bound(x):
    s = 0.0
    for i in range(x.shape[0]):
        if i > 0:
            s = s + (x[i] - previous)
        previous = x[i]
    return s, previous


def bound_after_a_continue(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        t = x[i] * 2
    return t


def test_a_name_a_first_iteration_may_leave_unbound_stays_pythons():
    _agrees(bound_after_a_break, (X,), (X + 10,))
    _agrees(bound_after_a_continue, (X,), (-X,))
    assert _kinds(bound_after_a_break, X) == _kinds(bound_after_a_continue, X) == ["unrolled"]
    _agrees(read_before_bound, (X,))


# ---- loops that may run no iteration ----

def last_doubled(x, n):
    s = 0.0
    for i in range(n):
        t = x[i] * 2
        s = s + t
    return s, t


def last_doubled_until(x, n):
    for i in range(n):
        t = x[i] * 2
        if t > 7:
            break
    return t


def last_index(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i]
    return s, i


def halved_while_big(x):
    s = x.sum()
    while s > 1:
        t = s / 2
        s = t
    return s, t


@pytest.mark.parametrize("function", [last_doubled, last_doubled_until, last_index])
def test_a_name_after_a_loop_over_a_changing_range_is_unbound_where_it_runs_none(function):
    # n changes between calls: a dynamic number from its second value on
    _agrees(function, *[(X, n) for n in (5, 6, 0, 3, 0, 7)])


def test_a_name_after_a_loop_over_a_traced_range_is_unbound_where_it_runs_none():
    def over_argmax(x):
        for i in range(np.argmax(x)):
            t = x[i] * 2
        return t
    _agrees(over_argmax, (X,), (X[4:].copy(),))  # the largest first: no iteration


def test_a_name_after_a_while_loop_with_a_traced_test_is_unbound_where_it_runs_none():
    _agrees(halved_while_big, (X,), (X / 100,), (X * 3,))
    assert _kinds(halved_while_big, X) == ["loop"]


def read_where_it_ran(x, n):
    for i in range(n):
        t = x[i] * 2
    return t if n > 0 else -1.0


def halved_then_a_graph_break(x, log):
    s = x.sum()
    while s > 1:
        t = s / 2
        s = t
    if x.sum() > 100:  # Python's `if` (the append): a graph break after the loop
        log.append("big")
    return s, t


def with_a_handler(x, n):
    try:
        for i in range(n):
            t = x[i] * 2
        return t
    except NameError:
        return -1.0


def test_where_a_loop_runs_no_iteration_the_call_is_pythons():
    # the loop is captured as one that runs: where it runs none, the call runs eagerly
    _agrees(read_where_it_ran, *[(X, n) for n in (5, 6, 0, 3)])
    _agrees(with_a_handler, *[(X, n) for n in (5, 6, 0, 3)])
    log = []
    _agrees(halved_then_a_graph_break, (X, log), (X / 100, log), (X * 30, log), (X / 100, log))


def inner_while_in_a_loop(M):
    out = np.zeros(M.shape[0])
    for r in range(M.shape[0]):
        s = M[r].sum()
        while s > 1:
            t = s / 2
            s = t
        out[r] = t
    return out


def test_a_loop_in_a_body_that_may_run_no_iteration_leaves_the_body_pythons():
    # a row that sums to at most 1 keeps t from the row before (the first: unbound)
    M = np.array([[2.0, 2.0], [0.1, 0.1], [3.0, 3.0]])
    _agrees(inner_while_in_a_loop, (M,), (M[1:].copy(),), (M[::-1].copy(),))
    assert "read after the loop, which may run no iteration" in " ".join(
        loop.reason for loop in kiln.explain(inner_while_in_a_loop)(M).loops)
