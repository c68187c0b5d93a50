"""`a and b`, `a or b` on traced values evaluate `b` only where Python would
(kiln._loop_short_circuit): `b` is a branch side taken where `a` does not decide.

They were selects that always evaluated `b`: a random draw or a list's append in `b` happened
where Python skips it (a Metropolis sweep flipped the wrong spins), and `b`'s runtime checks
fired where Python never reads it (`while j < n and a[j] < key`: IndexError at a[n]). The
guarded loops stay captured, one loop node each.
"""
import numpy as np
import pytest

import kiln


def _run(function, args):
    copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    try:
        return function(*copies), None, copies
    except Exception as error:  # NumPy's own error, which kiln must raise too
        return None, type(error), copies


def _assert_same(result, expected):
    if isinstance(expected, (tuple, list)):
        assert type(result) is type(expected) and len(result) == len(expected)
        for value, want in zip(result, expected):
            _assert_same(value, want)
        return
    assert type(result) is type(expected), (result, expected)
    np.testing.assert_array_equal(result, expected)


def _same(function, *calls):
    """kiln's results (values, types) and errors of `function` on each argument tuple, traced
    and then cached, are NumPy's; so are the arrays it writes into."""
    compiled = kiln.compile(function)
    for args in calls:
        expected, error, written = _run(function, args)
        for _ in range(2):
            result, compiled_error, compiled_written = _run(compiled, args)
            assert compiled_error is error, (args, compiled_error, error)
            if error is None:
                _assert_same(result, expected)
                for value, want in zip(compiled_written, written):
                    np.testing.assert_array_equal(value, want)


def _kinds(function, *args):
    report = kiln.explain(function)(*[np.copy(a) if isinstance(a, np.ndarray) else a
                                      for a in args])
    return report.graph_break_count, [loop.kind for loop in report.loops]


# ---- 1. effects of the later operand happen only where Python evaluates it ----

def _accept(x, seed):
    rng = np.random.default_rng(seed)
    if x[0] > 0 or rng.random() < 0.5:  # Python draws only where x[0] <= 0
        x[1] = 1.0
    return rng.random()  # where the stream is


def _both(x, seed):
    rng = np.random.default_rng(seed)
    flag = x[0] > 0 and rng.random() < 0.5
    return flag, rng.random()


def _note_nonpositive(x):
    log = []
    ok = x[0] > 0 or log.append("non-positive")
    return len(log), ok


def _record(log, value):
    log.append(value)
    return True


def _note_through_a_helper(x):
    log = []
    if x[0] < 0 and _record(log, "negative"):
        x[1] = 2.0
    return len(log)


def _note_in_a_choice(x):
    log = []
    v = log.append(1) if x[0] < 0 else 0
    return len(log), v


def _ising(spins, beta, seed):  # textbook single-spin Metropolis, one sweep
    rng = np.random.default_rng(seed)
    n = spins.shape[0]
    for _ in range(n * n):
        i, j = rng.integers(n), rng.integers(n)
        nb = spins[(i + 1) % n, j] + spins[i - 1, j] + spins[i, (j + 1) % n] + spins[i, j - 1]
        dE = 2 * spins[i, j] * nb
        if dE <= 0 or rng.random() < np.exp(-beta * dE):
            spins[i, j] = -spins[i, j]
    return spins


POSITIVE, NEGATIVE = np.array([1.0, 0.0]), np.array([-1.0, 0.0])


@pytest.mark.parametrize("function", [_accept, _both])
def test_a_draw_in_the_later_operand_happens_where_python_draws(function):
    _same(function, (POSITIVE, 1), (NEGATIVE, 1))


@pytest.mark.parametrize("function", [_note_nonpositive, _note_through_a_helper,
                                      _note_in_a_choice])
def test_a_list_changed_by_the_later_operand_changes_where_python_evaluates_it(function):
    _same(function, (POSITIVE,), (NEGATIVE,))


def test_a_metropolis_sweep_draws_as_numpy():
    spins = np.random.default_rng(1).choice([-1, 1], (3, 3)).astype(np.int64)
    _same(_ising, (spins, 0.4, 7))


# ---- 2. checks of the later operand apply only where Python evaluates it ----

def _scan(a, key):  # first j with a[j] >= key
    j = 0
    while j < len(a) and a[j] < key:
        j += 1
    return j


def _count_runs(x):
    runs, i, n = 0, 0, len(x)
    while i < n:
        j = i
        while j < n and x[j] == x[i]:
            j += 1
        runs += 1
        i = j
    return runs


def _merge(a, b):  # textbook merge of two sorted arrays
    out = np.empty(len(a) + len(b))
    i = j = k = 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and a[i] <= b[j]):
            out[k] = a[i]
            i += 1
        else:
            out[k] = b[j]
            j += 1
        k += 1
    return out


def _insertion_sort(a):
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def _pow_guard(a, e):
    c = 0
    for i in range(len(a)):
        if e[i] >= 0 and a[i] ** e[i] > 10:
            c += 1
    return c


def _not_guard(a, e):
    c = 0
    for i in range(len(a)):
        if not (e[i] < 0 or a[i] ** e[i] <= 10):
            c += 1
    return c


def _nan_guard(x):
    c = 0
    for i in range(len(x)):
        if not np.isnan(x[i]) and int(x[i]) > 2:
            c += 1
    return c


def _solve_guard(A, b):
    return abs(np.linalg.det(A)) > 1e-12 and np.linalg.solve(A, b)[0] > 0


def _element_or_default(x, i):  # a guarded read as a value
    return i < len(x) and x[i]


@pytest.mark.parametrize("function, calls", [
    (_scan, [(np.array([1.0, 2, 3]), 10.0), (np.array([1.0, 2, 3, 4]), 2.5)]),
    (_count_runs, [(np.array([1, 1, 2, 2, 2, 3, 1]),), (np.array([4, 4, 4]),)]),
    (_merge, [(np.array([1.0, 4, 6]), np.array([2.0, 3, 7, 8])),
              (np.array([5.0, 9]), np.array([1.0, 2]))]),
    (_insertion_sort, [(np.array([3.0, 1, 2, 0, 5, -1]),)]),
    (_pow_guard, [(np.array([2, 3, 4]), np.array([2, -1, 3]))]),
    (_not_guard, [(np.array([2, 3, 4]), np.array([2, -1, 3]))]),
    (_nan_guard, [(np.array([5.0, np.nan, 1.0]),)]),
    (_solve_guard, [(np.ones((2, 2)), np.ones(2)), (np.eye(2), np.ones(2))]),
    (_element_or_default, [(np.array([1.0, 2.0]), np.array(5)),
                           (np.array([1.0, 2.0]), np.array(1))]),
])
def test_a_guarded_operand_raises_nothing_where_python_never_evaluates_it(function, calls):
    _same(function, *calls)


def _guard_that_holds(a, j):  # the index is out of bounds where the guard lets it through
    return j >= 0 and a[j] > 0


def test_the_later_operand_still_raises_where_python_evaluates_it():
    _same(_guard_that_holds, (np.array([1.0, 2.0]), np.array(5)),
          (np.array([1.0, 2.0]), np.array(-1)), (np.array([1.0, 2.0]), np.array(1)))


@pytest.mark.parametrize("function, args, loops", [
    (_scan, (np.arange(50.0), 20.5), 1),
    (_merge, (np.arange(0.0, 40, 2), np.arange(1.0, 41, 2)), 1),
    (_insertion_sort, (np.random.default_rng(0).standard_normal(40),), 2),
    (_count_runs, (np.random.default_rng(0).integers(0, 3, 40),), 3),
    (_pow_guard, (np.arange(40) % 5, np.arange(40) % 4 - 1), 1),
])
def test_guarded_loops_stay_captured(function, args, loops):
    breaks, kinds = _kinds(function, *args)
    assert breaks == 0 and kinds.count("loop") == loops and "unrolled" not in kinds, kinds


def _local_max(x):
    n = len(x)
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        left = i == 0 or x[i - 1] < x[i]
        right = i == n - 1 or x[i + 1] < x[i]
        out[i] = left and right
    return out


def test_comparisons_joined_by_and_or_stay_selects():
    x = np.random.default_rng(3).standard_normal(30)
    _same(_local_max, (x,))
    breaks, kinds = _kinds(_local_max, x)
    assert breaks == 0 and kinds.count("loop") == 1 and "select" in kinds, kinds


# ---- 3. Python operands, and names bound by `:=` ----

def _next_greater(x):  # monotonic stack: a list as the first operand, a traced test after it
    out = np.full(len(x), -1.0)
    stack = []
    for i in range(len(x)):
        while stack and x[stack[-1]] < x[i]:
            out[stack.pop()] = x[i]
        stack.append(i)
    return out


def _count_where_flag(x, flag):
    c = 0
    for i in range(len(x)):
        if x[i] > 0 and flag:
            c += 1
    return c


def _count_while_pending(x):
    pending = [1, 2]
    c = 0
    for i in range(len(x)):
        if x[i] > 0 and pending:  # the list's truth, not the list
            c += 1
    return c


def test_python_operands_among_traced_ones():
    # a list combined elementwise with a traced bool raised "ambiguous" before
    _same(_next_greater, (np.array([3.0, 1, 4, 1, 5, 9, 2, 6]),))
    _same(_count_while_pending, (np.array([1.0, -1, 2]),))
    _same(_count_where_flag, (np.array([1.0, -1, 2]), True), (np.array([1.0, -1, 2]), False))
    assert _kinds(_count_while_pending, np.arange(-3.0, 5))[1].count("loop") == 1


def _bound_in_the_later_operand(x):
    m = -1.0
    if x[0] > 0 and (m := x[1]) > 0:
        return m * 2
    return m


def _bound_in_a_choice(x):
    m = -1.0
    y = (m := x[1]) if x[0] > 0 else 0.0
    return m, y


def _bound_in_a_while_test(x):
    i, v = 0, 0.0
    while (v := x[i]) > 0:
        i += 1
    return i, v


@pytest.mark.parametrize("function", [_bound_in_the_later_operand, _bound_in_a_choice,
                                      _bound_in_a_while_test])
def test_a_name_bound_by_walrus_is_the_functions(function):
    # the operand, side or test became a function of its own, which bound the name instead
    _same(function, (np.array([1.0, 2.0, -1.0]),), (np.array([-1.0, 2.0, -3.0]),))


def _settle_while_allowed(x, tol, budget):
    err = 1.0
    while err > tol and budget > 0:  # a traced operand, then a Python one
        new = 0.5 * (x + 2.0 / x)
        err = np.abs(new - x).max()
        x = new
    return x


def test_a_test_joining_traced_and_python_operands_never_reruns_the_call():
    # The select between `err > tol` (np.bool_) and `budget > 0` (a Python bool) assumed the
    # Python bool's type: the call ran again eagerly whenever the traced side decided, every
    # call that ended the loop (NumPy's speed). A test reads only their truth: one bool type.
    compiled = kiln.compile(_settle_while_allowed)
    for start in (np.array([1.0, 3.0]), np.array([2.0, 0.5, 7.0])):
        np.testing.assert_array_equal(compiled(start, 1e-12, 5),
                                      _settle_while_allowed(start, 1e-12, 5))
    assert not compiled._kiln_function.reruns_on_checks
