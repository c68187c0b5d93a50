"""Ping-pong buffers (`u, v = v, u`) in `while` loops and in `for` loops over a range whose step is
not one (kiln._loop_swaps): captured as one loop node whatever the trip count, with NumPy's
results, the caller's arrays updated in place as NumPy leaves them, Python's numbers and the loop
target's last value. Such loops were unrolled ("the loop both updates `v` in place and rebinds
it"): their trace grew with the trip count, and past a bound they ran eagerly."""
import copy

import numpy as np

import kiln
from test_numpy_programs_seventh import check_calls


def report(function, *arguments):
    """kiln.explain of one call: its loops' kinds, graph breaks and traced ops."""
    return kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))


def assert_one_loop_node(function, short, long):
    """One loop node, at most one graph break (the names' final order, read after the loop),
    and a trace no larger for the long trip count than for the short one (but for a few
    constants the Python iterations before the capture leave)."""
    first, second = report(function, *short), report(function, *long)
    for explained in (first, second):
        assert [loop.kind for loop in explained.loops].count("loop") == 1
        assert "unrolled" not in [loop.kind for loop in explained.loops]
        assert explained.graph_break_count <= 1
    assert second.op_count <= first.op_count + 8


# ---- while loops ----

def heat_until(u, end_time, dt):
    v = u.copy()
    t = 0.0
    while t < end_time:
        v[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
        u, v = v, u
        t += dt
    return u, v, t


def relax_until_converged(u, tolerance):
    v = u.copy()
    change = tolerance + 1.0
    while change > tolerance:
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        change = np.abs(v - u).max()
        u, v = v, u
    return u, change


def grow_until(u, level):
    """The test reads one of the two names: a renamed copy of the body must read the other."""
    v = np.zeros_like(u)
    steps = 0
    while u[len(u) // 2] < level:
        v[:] = u * 1.5 + 0.1
        steps += 1
        u, v = v, u
    return u, v, steps


def three_buffers_while(x, n):
    a, b, c = x.copy(), x * 2, x * 3
    k = 0
    while k < n:
        c[:] = a + 0.5 * b + k
        a, b, c = b, c, a
        k += 1
    return a, b, c, k


def swap_then_use(u, n):
    """Statements after the swap read the swapped names."""
    v = u * 0
    k = 0
    while k < n:
        v[:] = u + 1
        u, v = v, u
        u[0] += v[0]
        k += 1
    return u, v


def test_a_time_stepped_while_loop_is_one_loop_with_numpys_results():
    x = np.random.default_rng(0).standard_normal(32)
    # no step, one (the names swapped once), two, odd and even counts; the caller's array is
    # the target of every other step, as NumPy's is
    check_calls(heat_until, [(x, end, 0.1) for end in (0.0, 0.05, 0.15, 0.65, 4.0, 4.1)])
    assert_one_loop_node(heat_until, (x, 0.75, 0.1), (x, 40.05, 0.1))


def test_a_convergence_loop_that_tests_arrays_it_swaps():
    x = np.zeros(24)
    x[0], x[-1] = 1.0, -2.0
    check_calls(relax_until_converged, [(x, tolerance) for tolerance in (10.0, 0.5, 1e-3)])
    assert_one_loop_node(relax_until_converged, (x, 0.5), (x, 1e-4))


def test_the_test_reads_the_name_the_iteration_left_there():
    x = np.linspace(0.1, 1.0, 9)
    check_calls(grow_until, [(x, level) for level in (0.0, 0.7, 1.0, 2.0, 50.0)])
    assert_one_loop_node(grow_until, (x, 2.0), (x, 1e6))


def test_a_while_loop_cycling_three_names():
    x = np.arange(5.0)
    check_calls(three_buffers_while, [(x, n) for n in (0, 1, 2, 3, 4, 5, 11)])
    assert_one_loop_node(three_buffers_while, (x, 30), (x, 3000))


def test_statements_after_the_swap_see_the_swapped_arrays():
    x = np.arange(4.0)
    check_calls(swap_then_use, [(x, n) for n in (0, 1, 2, 3, 10)])
    assert_one_loop_node(swap_then_use, (x, 30), (x, 3000))


def swap_until_small(u, limit):
    v = u.copy()
    k = 0
    while k < 100:
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        u, v = v, u
        k += 1
        if np.abs(u).max() < limit:
            break
    return u, v, k


def test_a_while_loop_that_swaps_and_breaks_keeps_pythons_results():
    x = np.linspace(-1.0, 1.0, 12) ** 3
    check_calls(swap_until_small, [(x, limit) for limit in (2.0, 0.9, 0.5, 1e-9)])


def test_a_while_loop_whose_names_a_closure_reads_runs_as_written():
    def stepped(u, n):
        v = u.copy()

        def residual():
            return float(np.abs(u - v).sum())
        k, seen = 0, []
        while k < n:
            v[1:-1] = 0.5 * (u[:-2] + u[2:])
            u, v = v, u
            seen.append(residual())
            k += 1
        return u, seen

    x = np.random.default_rng(3).standard_normal(10)
    check_calls(stepped, [(x, n) for n in (0, 1, 4)])


def test_the_while_rewrite_keeps_the_order_of_side_effects():
    calls = []

    def note(k, value):
        calls.append((k, float(value)))

    def noted(x, n):
        y = x * 0
        k = 0
        while k < n:
            note(k, x[0])
            y[:] = x + k
            x, y = y, x
            k += 1
        return x

    x = np.ones(3)
    kiln.compile(noted)(x.copy(), 7)
    compiled_calls, calls[:] = list(calls), []
    noted(x.copy(), 7)
    assert compiled_calls == calls and len(calls) == 7


# ---- for loops over a range with a step ----

def odd_sweeps(u, start, stop):
    v = u.copy()
    for i in range(start, stop, 2):
        v[1:-1] = 0.5 * (u[:-2] + u[2:]) + 0.01 * i
        u, v = v, u
    return u, v, i


def backward_sweeps(u, n):
    v = np.zeros_like(u)
    i = -1
    for i in range(n, 0, -3):
        v[:] = u[::-1] * 0.5 + i
        u, v = v, u
    return u, v, i


def stepped_by_argument(u, n, stride):
    v = u + 1
    lo, hi = 0, 1
    for i in range(1, n, stride):
        v[0] = u.sum() + i
        u, v = v, u
        lo, hi = hi, lo
    return u, v, lo, hi


def test_a_range_with_step_two_is_one_loop():
    x = np.random.default_rng(4).standard_normal(16)
    # trip counts 1, 2, 3 and many, from even and odd starts
    check_calls(odd_sweeps, [(x, start, stop) for start, stop in
                             ((1, 2), (0, 3), (1, 6), (2, 9), (1, 80), (0, 81))])
    assert_one_loop_node(odd_sweeps, (x, 1, 41), (x, 1, 4001))


def test_a_backward_range_is_one_loop():
    x = np.arange(6.0)
    check_calls(backward_sweeps, [(x, n) for n in (0, 1, 3, 4, 6, 7, 31)])
    assert_one_loop_node(backward_sweeps, (x, 31), (x, 3001))


def test_a_step_given_as_an_argument():
    x = np.arange(3.0)
    check_calls(stepped_by_argument, [(x, n, stride) for n, stride in
                                      ((1, 2), (2, 5), (4, 1), (9, 2), (10, 3), (40, 4))])
    assert_one_loop_node(stepped_by_argument, (x, 40, 3), (x, 4000, 3))


def test_a_zero_step_raises_pythons_error():
    compiled = kiln.compile(stepped_by_argument)
    for function in (compiled, stepped_by_argument):
        try:
            function(np.arange(3.0), 5, 0)
        except ValueError as error:
            assert "must not be zero" in str(error)
        else:
            raise AssertionError("range(1, 5, 0) ran")
