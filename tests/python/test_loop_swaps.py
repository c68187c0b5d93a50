"""Loops whose body swaps names (`u, v = v, u`: ping-pong buffers) run a whole cycle of swaps an
iteration (kiln._loop_swaps) and are captured as one loop node, with NumPy's results, the
caller's arrays updated in place as NumPy leaves them, and the loop target's last value."""
import copy
import math

import numpy as np

import kiln
from test_numpy_programs_seventh import check_calls


def loop_kinds(function, *arguments):
    """The kinds of the loops kiln.explain reports for one call, and its graph breaks."""
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops], report.graph_break_count


def jacobi(u, steps):
    v = u.copy()
    for _ in range(steps):
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        u, v = v, u
    return u


def heat_2d(grid, steps, alpha):
    nxt = np.empty_like(grid)
    nxt[0], nxt[-1], nxt[:, 0], nxt[:, -1] = grid[0], grid[-1], grid[:, 0], grid[:, -1]
    for step in range(1, steps + 1):
        nxt[1:-1, 1:-1] = grid[1:-1, 1:-1] + alpha * (
            grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:]
            - 4 * grid[1:-1, 1:-1])
        grid, nxt = nxt, grid
    return grid, nxt, step


def three_buffers(x, n):
    a, b, c = x.copy(), x * 2, x * 3
    for i in range(2, n):
        c[:] = a + 0.5 * b + i
        a, b, c = b, c, a
    return a, b, c


def swapped_numbers(x, n):
    lo, hi = 0.0, 1.0
    for k in range(n):
        x[k % len(x)] += hi - lo
        lo, hi = hi, lo
    return x, lo, hi


def swap_then_break(u, steps, limit):
    v = u.copy()
    for _ in range(steps):
        v[1:-1] = 0.5 * (u[:-2] + u[2:])
        u, v = v, u
        if u.max() < limit:
            break
    return u


def test_a_ping_pong_stencil_is_one_loop_with_numpys_results():
    x = np.random.default_rng(0).standard_normal(64)
    # every count: none, one (the odd one out alone), even, odd; the caller's x is written on
    # the sweeps where it is the target, as NumPy's is
    check_calls(jacobi, [(x, steps) for steps in (0, 1, 2, 7, 40)])
    assert loop_kinds(jacobi, x, 41) == (["loop"], 0)


def test_a_long_ping_pong_loop_traces_once():
    # 20,000 sweeps unrolled into 100,000 ops (9 s of tracing, then too big to compile: eager)
    x = np.random.default_rng(1).standard_normal(256)
    compiled = kiln.compile(jacobi)
    np.testing.assert_allclose(compiled(x.copy(), 20_001), jacobi(x.copy(), 20_001))
    assert loop_kinds(jacobi, x, 20_001) == (["loop"], 0)


def test_a_2d_heat_loop_keeps_its_target_and_both_buffers():
    grid = np.random.default_rng(2).random((12, 10))
    check_calls(heat_2d, [(grid, steps, 0.1) for steps in (1, 2, 9)])
    assert loop_kinds(heat_2d, grid, 9, 0.1) == (["loop"], 0)


def test_a_cycle_of_three_names():
    x = np.arange(5.0)
    check_calls(three_buffers, [(x, n) for n in (0, 2, 3, 4, 5, 9, 12)])
    assert loop_kinds(three_buffers, x, 14) == (["loop"], 0)


def test_swapped_python_numbers_keep_their_values_and_types():
    x = np.zeros(4)
    check_calls(swapped_numbers, [(x, n) for n in (0, 1, 2, 5, 8)])


def test_a_swap_with_a_break_is_left_as_written():
    x = np.linspace(0.0, 1.0, 16) ** 2
    check_calls(swap_then_break, [(x, 30, limit) for limit in (0.0, 0.5, 2.0)])


def test_the_rewrite_runs_the_same_statements_in_order():
    """The body's side effects happen in NumPy's order, the last odd iteration included."""
    calls = []

    def note(i, value):
        calls.append((i, float(value)))

    def noted(x, n):
        y = x * 0
        for i in range(3, n):
            note(i, x.sum())
            y[:] = x + i
            x, y = y, x
        return x

    x = np.ones(3)
    kiln.compile(noted)(x.copy(), 8)
    compiled_calls, calls[:] = list(calls), []
    noted(x.copy(), 8)
    assert compiled_calls == calls
    assert [i for i, _ in calls] == list(range(3, 8)) and not math.isnan(calls[-1][1])
