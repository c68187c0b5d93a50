"""A sixth set of NumPy programs as people write them, each compiled once and called with
several inputs, agreeing with NumPy on values, dtypes, shapes, Python types and the arrays
updated in place; and where kiln's loop capture is the point, that the loops are captured."""
import copy
import math

import numpy as np
import pytest

import kiln
from test_numpy_programs import check_call
from test_numpy_programs_fifth import _python_runs


def check_calls(function, argument_sets):
    """kiln.compile(function) agrees with NumPy on each argument set in turn, one compiled
    function for all of them."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        check_call(compiled, function, arguments)


def loop_kinds(function, *arguments):
    """The kinds of the loops kiln.explain reports for one call, and its graph breaks."""
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops], report.graph_break_count


# ---- user names that the loop rewrite also makes ----

def doubled(x):
    values = []
    for i in range(len(x)):
        values.append(x[i] * 2)
    return np.array(values)


def total_of(x):
    total = 0.0
    values = x * 2
    for i in range(len(x)):
        total += values[i]
    return total


def with_kiln_names(x):
    __kiln_values = 0.0
    for i in range(len(x)):
        __kiln_values += x[i]
    return __kiln_values


def test_a_local_named_as_the_rewrites_own_names_is_the_users():
    # the setter of a loop's names took `values`: a local `values` was a parameter and
    # nonlocal there, a SyntaxError, and the loop unrolled silently
    rng = np.random.default_rng(1)
    for function in (doubled, total_of, with_kiln_names):
        check_calls(function, [(rng.random(30),), (rng.random(30),)])
    for function in (doubled, total_of):
        assert loop_kinds(function, rng.random(30)) == (["loop"], 0)


# ---- loops inside `with` and `try` ----

def safe_ratios(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        total = 0.0
        for i in range(len(x)):
            total += x[i] / y[i]
    return total


def guarded_sum(x):
    try:
        s = 0.0
        for i in range(len(x)):
            s += x[i] * x[i]
    except ValueError:
        s = -1.0
    finally:
        done = True
    return s, done


def test_loops_inside_with_and_try_are_captured():
    # the rewrite left `with` and `try` statements as written, loops and all: unrolled
    rng = np.random.default_rng(2)
    y = rng.random(40)
    y[3] = 0.0
    check_calls(safe_ratios, [(rng.random(40), y), (rng.random(40), rng.random(40))])
    check_calls(guarded_sum, [(rng.random(40),), (rng.random(40),)])
    assert loop_kinds(safe_ratios, rng.random(40), y) == (["loop"], 0)
    assert loop_kinds(guarded_sum, rng.random(40)) == (["loop"], 0)


# ---- methods of the user's objects called in loops and branches ----

class Particle:
    def __init__(self, x, v):
        self.x, self.v = x, v

    def step(self, dt):
        self.x = self.x + self.v * dt

    def kick(self, dv):
        self.v += dv  # in place: the array the attribute holds


class SlottedParticle:
    __slots__ = ("x", "v", "steps")

    def __init__(self, x, v):
        self.x, self.v = x, v

    def step(self, dt):
        self.x = self.x + self.v * dt
        self.steps = getattr(self, "steps", 0) + 1


def simulate(x, v, n):
    p = Particle(x, v)
    for _ in range(n):
        p.step(0.1)
    return p.x


def simulate_kicked(x, v, n):
    p = Particle(x.copy(), v.copy())
    for k in range(n):
        p.kick(0.01 * k)
        p.step(0.1)
    return p.x, p.v


def simulate_slotted(x, v, n):
    p = SlottedParticle(x, v)
    for _ in range(n):
        p.step(0.1)
    return p.x, p.steps


def step_where_positive(x, v):
    p = Particle(np.zeros(2), v)
    for i in range(len(x)):
        if x[i] > 0.5:
            p.step(x[i])
    return p.x


def slotted_step_where_positive(x, v):
    p = SlottedParticle(np.zeros(2), v)
    p.steps = 0
    for i in range(len(x)):
        if x[i] > 0.5:
            p.step(x[i])
    return p.x, p.steps


def step_given(p, n):
    for _ in range(n):
        p.step(0.5)
    return p.x


def test_a_method_assigning_attributes_in_a_loop_or_branch_agrees_with_numpy():
    # the loop carries names only: p.step(dt)'s `self.x = ...` was traced once (p.x after 20
    # steps was one step's), and a branch's call ran on both sides (a value of the loop's
    # body used outside it: an internal error); with __slots__ likewise
    rng = np.random.default_rng(3)
    check_calls(simulate, [(np.zeros(2), np.ones(2), 20), (np.ones(2), rng.random(2), 30)])
    check_calls(simulate_kicked, [(np.zeros(2), np.ones(2), 20), (np.ones(2), np.ones(2), 9)])
    check_calls(simulate_slotted, [(np.zeros(2), np.ones(2), 20), (np.ones(2), np.ones(2), 7)])
    check_calls(step_where_positive, [(rng.random(20), np.ones(2)), (rng.random(9), np.ones(2))])
    check_calls(slotted_step_where_positive, [(rng.random(20), np.ones(2)),
                                              (rng.random(9), np.ones(2))])
    for make in (Particle, SlottedParticle):
        mine, theirs = make(np.zeros(2), np.ones(2)), make(np.zeros(2), np.ones(2))
        np.testing.assert_allclose(kiln.compile(step_given)(mine, 12), step_given(theirs, 12))
        np.testing.assert_allclose(mine.x, theirs.x)


# ---- arrays appended to a list and changed in place later ----

def rows_then_write(x):
    rows = []
    for i in range(len(x)):
        rows.append(x[i])
    x[0] = 99.0
    return np.array(rows)


def history_of_state(n):
    state = np.zeros(3)
    history = []
    for i in range(n):
        state += 1
        history.append(state)
    return np.array(history)


def rows_written_through_the_list(x):
    rows = []
    for i in range(len(x)):
        rows.append(x[i])
    rows[1][0] = -1.0
    return np.array(rows), x


def trajectory(x, n):
    """Rebinding, not writing in place: each item is its own array; stays one loop."""
    state = x
    out = []
    for i in range(n):
        state = state * 0.5 + 1.0
        out.append(state)
    rows = []
    for i in range(len(x)):
        rows.append(x[i] * 2)
    return np.array(out), np.array(rows)


def test_an_array_appended_and_changed_in_place_later_is_numpys_item():
    # the list's items were the rows of a stack, copies: NumPy's are the array appended (all
    # the same `state`, [5, 5, 5] five times) or views of x (which see x[0] = 99)
    rng = np.random.default_rng(4)
    check_calls(rows_then_write, [(rng.random((5, 3)),), (rng.random((6, 3)),)])
    check_calls(history_of_state, [(5,), (7,)])
    check_calls(rows_written_through_the_list, [(rng.random((5, 3)),), (rng.random((4, 3)),)])
    check_calls(trajectory, [(rng.random(4), 20), (rng.random(4), 30)])
    assert loop_kinds(trajectory, rng.random(4), 20) == (["loop", "loop"], 0)


# ---- appending a conditional expression ----

def clipped_list(x, lo):
    xs = []
    for i in range(len(x)):
        xs.append(x[i] if x[i] > lo else lo)
    return np.array(xs), xs[-1]


def signs(x):
    out = []
    for v in x:
        out.append(1.0 if v > 0 else (-1.0 if v < 0 else 0.0))
    return out


def test_appending_a_conditional_expression_is_one_loop():
    rng = np.random.default_rng(5)
    check_calls(clipped_list, [(rng.normal(size=30), 0.0), (rng.normal(size=30), 0.5)])
    check_calls(signs, [(rng.normal(size=30),), (np.array([0.0, 1.0, -2.0]),)])
    kinds, breaks = loop_kinds(clipped_list, rng.normal(size=30), 0.0)
    assert (kinds[-1], breaks) == ("loop", 0)


# ---- Python's math functions of traced numbers outside loops ----

def polar(p):
    r = math.sqrt(p[0] * p[0] + p[1] * p[1])
    return r, math.atan2(p[1], p[0]), math.isfinite(r), math.floor(p[0] * 10)


def gaussian_weight(x, sigma):
    s = x.std()
    return np.exp(-x ** 2 / (2 * s * s)) / math.sqrt(2 * math.pi * s * s) + math.log(sigma)


def test_math_functions_of_traced_numbers_outside_loops_are_traced():
    # as in captured loops (e9903ea): math.sqrt(p[0] * p[0] + ...) asked float() of a traced
    # number, a graph break
    rng = np.random.default_rng(6)
    check_calls(polar, [(rng.normal(size=2),), (rng.normal(size=2),)])
    check_calls(gaussian_weight, [(rng.normal(size=20), 0.5), (rng.normal(size=20), 2.0)])
    assert loop_kinds(polar, rng.normal(size=2)) == ([], 0)
    assert loop_kinds(gaussian_weight, rng.normal(size=20), 0.5) == ([], 0)
    compiled = kiln.compile(polar)
    with pytest.raises(ValueError, match="math|NaN"):
        polar(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="math|NaN"):
        compiled(np.array([np.nan, 1.0]))


# ---- list comprehensions and sum(...) of a generator over a range ----

def row_norms(X):
    return np.array([np.sqrt(np.sum(X[i] * X[i])) for i in range(len(X))])


def weighted_total(x, w):
    i = -1  # the comprehension's own i is another variable
    total = sum(x[k] * w[k] for k in range(len(x)))
    squares = [x[i] * x[i] for i in range(len(x))] + [0.0]
    return total, np.array(squares), i


def shifted_means(X, shifts):
    means = [np.mean(X[:, j]) + shifts[j] for j in range(X.shape[1])]
    return np.stack(means), sum(shifts[j] for j in range(len(shifts))), [
        j for j in range(3) if j > 0]


def offsets_and_buffers(x):
    """Comprehensions of Python's numbers and of fresh arrays: as Python (no graph break)."""
    offsets = [k * 2 for k in range(4)]
    buffers = [np.zeros(3) for _ in range(4)]
    with np.errstate(all="ignore"):
        ratios = [x[k] / x[k + 1] for k in range(len(x) - 1)]
    buffers[1][0] = x[1]
    return x[offsets[1]:] * 2, offsets, buffers, ratios, [x[k] for k in range(len(x))]


def test_comprehensions_over_a_range_are_captured_loops():
    # they ran as Python and tracing unrolled them (500 rows: 1.7 s to compile)
    rng = np.random.default_rng(7)
    check_calls(row_norms, [(rng.random((500, 3)),), (rng.random((500, 3)),)])
    check_calls(weighted_total, [(rng.random(50), rng.random(50)),
                                 (rng.random(50), rng.random(50))])
    check_calls(shifted_means, [(rng.random((6, 5)), rng.random(5)),
                                (rng.random((6, 5)), np.zeros(5))])
    check_calls(offsets_and_buffers, [(np.arange(6.0),), (rng.random(7),)])
    assert loop_kinds(offsets_and_buffers, np.arange(6.0)) == (["loop", "loop"], 0)
    assert loop_kinds(row_norms, rng.random((500, 3))) == (["loop"], 0)
    assert loop_kinds(weighted_total, rng.random(50), rng.random(50)) == (["loop", "loop"], 0)


def noted(order, tag):
    order.append(tag)
    return 1.0


def noted_before_a_comprehension(x, order):
    return noted(order, "first"), [x[i] * noted(order, "item") for i in range(len(x))]


def test_a_comprehension_after_a_call_keeps_pythons_order():
    # hoisted before its statement, the list's loop ran before the call to its left
    x = np.arange(3.0)
    expected, order = noted_before_a_comprehension(x, []), []
    got = kiln.compile(noted_before_a_comprehension)(x, order)
    assert order == ["first", "item", "item", "item"]
    assert got[0] == expected[0] and np.array_equal(got[1], expected[1])


# ---- a loop's Python number that only a branch of its body makes NumPy's ----

def running_max(x):
    m = 0.0
    for i in range(len(x)):
        if x[i] > m:
            m = x[i]
    return m, m * np.float32(2)


def product_above(x, t):
    p = 1
    k = 0
    for i in range(len(x)):
        if x[i] > t:
            p = p * x[i]
        k += 1
    return p, k


def last_above_by_while(x, t):
    s = 0
    i = 0
    while i < len(x):
        if x[i] > t:
            s = x[i]
        i += 1
    return s


def row_best(X, t):
    out = []
    for r in range(X.shape[0]):
        best = 0
        for j in range(X.shape[1]):
            if X[r, j] > t:
                best = X[r, j]
        out.append(best)
    return out


def test_a_number_a_branch_never_taken_would_retype_stays_pythons():
    # the loop carried the number at the branch's NumPy type: where the branch never ran,
    # NumPy's 0 (an int) came back as np.float64(0.0), and m * np.float32(2) was float64
    rng = np.random.default_rng(8)
    x = rng.random(20)
    check_calls(running_max, [(x,), (-x,), (x,)])
    check_calls(product_above, [(x, 0.5), (x, 2.0)])
    check_calls(last_above_by_while, [(x, 0.5), (x, 2.0)])
    check_calls(row_best, [(rng.random((4, 5)), 0.5), (rng.random((4, 5)), 2.0)])
    assert loop_kinds(running_max, x) == (["select", "loop"], 0)
    compiled = kiln.compile(running_max)
    compiled(x)
    assert _python_runs(running_max, compiled, (x,)) == 0  # the branch ran: no rerun
