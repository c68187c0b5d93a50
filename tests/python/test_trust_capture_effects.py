"""Python state changed by captured loops and branches, as NumPy's Python changes it.

A captured loop body is traced once for all its iterations, a branch on array data traces both
of its sides: a change of Python state there (a list's append, `d[k] = v`, `c[0] += 1`, a
helper's append, a random draw, a call that raises on data) happened once, or on both sides,
without an error. Each case gave a wrong result (or raised where NumPy does not); kiln now
captures it correctly or runs it as Python.
"""
import numpy as np
import pytest

import kiln


def _assert_same(result, expected):
    if isinstance(expected, (list, tuple)):
        assert type(result) is type(expected) and len(result) == len(expected)
        for value, want in zip(result, expected):
            _assert_same(value, want)
    elif isinstance(expected, dict):
        assert result.keys() == expected.keys()
        for key in expected:
            _assert_same(result[key], expected[key])
    elif isinstance(expected, str):
        assert result == expected
    else:
        np.testing.assert_allclose(np.asarray(result, dtype=float),
                                   np.asarray(expected, dtype=float), rtol=1e-12)


def _run(function, args):
    try:
        return function(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args]), None
    except Exception as error:  # NumPy's own error, which kiln must raise too
        return None, type(error)


def _same(function, *calls):
    """kiln's results of `function` on each of `calls` (argument tuples), twice each (traced,
    then from the cache), are NumPy's; where NumPy raises, kiln raises the same error."""
    compiled = kiln.compile(function)
    for args in calls:
        expected, error = _run(function, args)
        for _ in range(2):
            result, compiled_error = _run(compiled, args)
            assert compiled_error is error
            if error is None:
                _assert_same(result, expected)


X = np.array([1.0, -2.0, 3.0, -4.0, 5.0])
Y = np.array([-1.0, 2.0, -3.0, 4.0, 6.0, -7.0, 8.0])


# ---- 1. effects on Python state inside a branch on array data (both sides traced) ----

def _append_in_branch(x):
    res = []
    if x.sum() > 0:
        res.append(1)
    return len(res)


def _dict_store_in_branch(x):
    d = {}
    if x.max() > 4:
        d["big"] = x.max()
    else:
        d["small"] = x.min()
    return sorted(d)


def _set_add_in_branch(x):
    seen = set()
    if x[0] > 0:
        seen.add("first")
    return len(seen)


def _filtered(x):
    res = []
    for v in x:
        if v > 0:
            res.append(v)
    return np.array(res)


def _split(x):
    pos, neg = [], []
    for v in x:
        if v > 0:
            pos.append(v)
        else:
            neg.append(v)
    return len(pos), len(neg)


@pytest.mark.parametrize("function", [_append_in_branch, _dict_store_in_branch,
                                      _set_add_in_branch, _filtered, _split])
def test_python_effects_in_a_branch_happen_on_the_side_taken(function):
    _same(function, (-X,), (X,), (Y,))


# ---- 2. Python state changed in a captured loop body: once per iteration ----

def _counter(x):
    c = [0]
    for i in range(len(x)):
        c[0] = c[0] + 1
    return c[0]


def _counter_in_branch(x):
    c = [0]
    for i in range(len(x)):
        if x[i] > 0:
            c[0] = c[0] + 1
    return c[0]


def _add_to(items, value):
    items.append(value)


def _helper_appends(x):
    res = []
    for i in range(len(x)):
        _add_to(res, x[i])
    return len(res)


LOG = []


def _counted(value):
    LOG.append(1)
    return value


def _helper_appends_to_its_global(x):
    del LOG[:]
    total = 0.0
    for i in range(len(x)):
        total = total + _counted(x[i])
    return total, len(LOG)


def _distinct_positive(x):
    seen = set()
    for i in range(len(x)):
        if x[i] > 0:
            seen.add(i)
    return len(seen)


@pytest.mark.parametrize("function", [_counter, _counter_in_branch, _helper_appends,
                                      _helper_appends_to_its_global, _distinct_positive])
def test_python_state_changes_once_per_iteration(function):
    _same(function, (X,), (Y,))


# ---- 3. appends in a body that breaks or continues ----

def _history_until_converged(X, y):
    w = np.zeros(X.shape[1])
    hist = []
    for epoch in range(30):
        g = X.T @ (X @ w - y) / len(y)
        w = w - 0.5 * g
        hist.append(float(np.mean((X @ w - y) ** 2)))
        if np.linalg.norm(g) < 1e-2:
            break
    return w, hist


def _keep_nonnegative(x):
    res = []
    for i in range(len(x)):
        if x[i] < 0:
            continue
        res.append(x[i] * 2)
    return np.array(res)


def test_appends_in_a_body_that_breaks_stop_with_it():
    rng = np.random.default_rng(0)
    A = rng.random((20, 3))
    _same(_history_until_converged, (A, A @ np.array([0.1, 0.2, 0.3])),  # 10 epochs, then 4
          (A, A @ np.array([0.05, -0.1, 0.025])))


def test_appends_skipped_by_continue_are_skipped():
    _same(_keep_nonnegative, (X,), (Y,))


# ---- 4. accumulating into a dict entry or a list element ----

def _dict_accumulated(x):
    d = {"pos": 0.0}
    for v in x:
        d["pos"] += v
    return d["pos"]


def _list_accumulated(x):
    acc = [0.0, 0.0]
    for v in x:
        if v > 0:
            acc[0] += v
        else:
            acc[1] += v
    return acc


@pytest.mark.parametrize("function", [_dict_accumulated, _list_accumulated])
def test_accumulating_into_containers(function):
    _same(function, (X,), (Y,))


# ---- 5. a generator the function makes itself, drawn in a loop or branch ----

def _walk(n, seed):
    r = np.random.default_rng(seed)
    x = np.zeros(n)
    for i in range(1, n):
        x[i] = x[i - 1] + r.standard_normal()
    return x


def _bound_draws(n, seed):
    draw = np.random.default_rng(seed).random
    x = np.zeros(n)
    for i in range(n):
        x[i] = draw()
    return x


def _draw_in_branch(x, seed):
    r = np.random.default_rng(seed)
    if x.sum() > 0:
        v = r.random()
    else:
        v = -1.0
    return v + r.random()


def test_a_generator_made_in_the_function_draws_every_iteration():
    _same(_walk, (6, 1), (9, 2))
    _same(_bound_draws, (5, 3), (8, 4))


def test_a_generator_made_in_the_function_draws_on_the_side_taken():
    _same(_draw_in_branch, (X, 1), (-X, 1))


# ---- 6. a call that raises on data, guarded by a branch ----

def _guarded_solve(A, b):
    if abs(np.linalg.det(A)) > 1e-12:
        x = np.linalg.solve(A, b)
    else:
        x = np.zeros_like(b)
    return x


def _guarded_inverse(A):
    if abs(np.linalg.det(A)) > 1e-12:
        return np.linalg.inv(A)
    return np.full_like(A, np.nan)


def _guarded_by_choice(A, b):
    return np.linalg.solve(A, b) if abs(np.linalg.det(A)) > 1e-12 else np.zeros_like(b)


def _solved(A, b):
    return np.linalg.solve(A, b)


def _guarded_through_a_helper(A, b):  # what raises is found as it is traced, not by its name
    x = np.zeros_like(b)
    if abs(np.linalg.det(A)) > 1e-12:
        x = _solved(A, b) * 2
    return x


def _guarded_in_a_loop(A, b, n):
    out = np.zeros((n, 2))
    for i in range(n):
        M = A * (i % 2)
        if abs(np.linalg.det(M)) > 1e-12:
            out[i] = np.linalg.solve(M, b)
    return out


SINGULAR, REGULAR = np.ones((2, 2)), np.array([[2.0, 1.0], [1.0, 3.0]])


def test_a_guarded_solve_does_not_raise_on_the_side_not_taken():
    b = np.array([1.0, 2.0])
    _same(_guarded_solve, (SINGULAR, b), (REGULAR, b), (SINGULAR, b))
    _same(_guarded_inverse, (SINGULAR,), (REGULAR,))
    _same(_guarded_by_choice, (SINGULAR, b), (REGULAR, b))
    _same(_guarded_through_a_helper, (SINGULAR, b), (REGULAR, b))
    _same(_guarded_in_a_loop, (REGULAR, b, 5), (REGULAR, b, 6))



# What a branch traces for a select and then gives up (sides that alias, of different dtypes, a
# name bound on one side only) runs as Python's `if`: nothing traced for it may raise either.
# `ok` is an array: the condition is data (a Python or NumPy scalar argument would be static).

def _solve_if_ok(A, b, ok):
    return np.linalg.solve(A, b) if ok[0] > 0 else b


def _inverse_if_ok(A, ok):
    return np.linalg.inv(A) if ok[0] > 0 else A


def _solve_if_ok_statement(A, b, ok):
    if ok[0] > 0:
        x = np.linalg.solve(A, b)
    else:
        x = b
    return x


def _solve_if_ok_aliased(A, b, ok):  # x is b: the branch is not captured (Python's `if`)
    x = b
    if ok[0] > 0:
        x = np.linalg.solve(A, b)
    return x


def _solve_if_ok_or_integers(A, b, ok):  # sides of different dtypes: Python's `if` too
    return np.linalg.solve(A, b) if ok[0] > 0 else np.arange(2)


def _solve_if_ok_in_a_loop(A, b, oks):
    out = np.zeros((oks.shape[0], 2))
    for i in range(oks.shape[0]):
        M = A * (i % 2)  # singular where i is even, where oks says no
        out[i] = np.linalg.solve(M, b) if oks[i] > 0 else b
    return out


def _solve_if_ok_statement_in_a_loop(A, b, oks):
    out = np.zeros((oks.shape[0], 2))
    for i in range(oks.shape[0]):
        M = A * (i % 2)
        if oks[i] > 0:
            out[i] = np.linalg.solve(M, b)
        else:
            out[i] = b
    return out


def _element_if_ok(x, k, ok):  # t is read after the branch: bound on one side only
    if ok[0] > 0:
        t = x[k[0]]
    return t * 2 if ok[0] > 0 else 0.0


OK, NOT_OK = np.array([1.0]), np.array([-1.0])
OKS = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])


@pytest.mark.parametrize("function", [_solve_if_ok, _solve_if_ok_statement,
                                      _solve_if_ok_aliased, _solve_if_ok_or_integers])
def test_a_solve_on_the_side_not_taken_never_raises(function):
    b = np.array([1.0, 2.0])
    _same(function, (SINGULAR, b, NOT_OK), (REGULAR, b, OK), (SINGULAR, b, OK),
          (SINGULAR, b, NOT_OK))
    _same(_inverse_if_ok, (SINGULAR, NOT_OK), (REGULAR, OK), (SINGULAR, OK))


def test_a_choice_over_a_solve_is_captured():
    # it stayed Python's by the callee's name (a graph break) lest its select run the solve
    b = np.array([1.0, 2.0])
    for function, args in ((_solve_if_ok, (REGULAR, b, OK)), (_inverse_if_ok, (REGULAR, OK))):
        assert [loop.kind for loop in kiln.explain(function)(*args).loops] == ["branch"]


@pytest.mark.parametrize("function", [_solve_if_ok_in_a_loop, _solve_if_ok_statement_in_a_loop])
def test_a_solve_on_the_side_not_taken_in_a_loop_never_raises(function):
    b = np.array([1.0, 2.0])
    _same(function, (REGULAR, b, OKS), (REGULAR, b, -OKS))
    assert "loop" in {loop.kind for loop in kiln.explain(function)(REGULAR, b, OKS).loops}


def test_an_index_on_the_side_not_taken_never_raises():
    x = np.arange(4.0)
    _same(_element_if_ok, (x, np.array([9]), NOT_OK), (x, np.array([2]), OK),
          (x, np.array([9]), OK))

# ---- 7. the index of a loop that ran no iteration ----

def _last_index(x, n):
    for i in range(n):
        x[i] += 1
    return i


def test_the_index_after_a_loop_that_ran_no_iteration_is_unbound():
    _same(_last_index, (np.arange(5.0), 3), (np.arange(5.0), 4), (np.arange(5.0), 0))
