"""A name a loop assigns tuple displays to (`best_box = (top, bottom, start, j)`) is split into
one name per element (kiln._loop_tuple_names), so the loop is captured: a maximum-sum rectangle
search at 12x12 took 8.4 s for its first call unrolled, 0.7 s as loop nodes."""

import numpy as np

from test_numpy_programs_eleventh import check_repeated_calls, loop_kinds
from test_numpy_programs_eleventh_loops import max_sum_rectangle


def argmax_2d(M):
    best = -np.inf
    where = (-1, -1)
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > best:
                best = M[i, j]
                where = (i, j)
    return where, best


def state_pair(x0, v0, dt, steps):
    state = (x0.copy(), v0.copy())  # copies: (x0, v0) would alias the arguments
    for _ in range(steps):
        x, v = state
        state = (x + dt * v, v - dt * x)
    return state


def last_crossing(x, level):
    found = (None, 0.0)
    for i in range(1, len(x)):
        if x[i - 1] < level <= x[i]:
            found = (i, x[i])
    return found


def indexed_and_measured(x):
    best = (0, x[0])
    for i in range(len(x)):
        if x[i] > best[1]:
            best = (i, x[i])
    return best[0] * 2, best, len(best)


def test_a_tuple_of_loop_indices_is_carried_by_the_loop():
    rng = np.random.default_rng(2)
    assert loop_kinds(argmax_2d, rng.random((4, 5))) == ["loop", "loop"]
    check_repeated_calls(argmax_2d, (rng.random((4, 5)),), (rng.random((6, 3)),), (np.zeros((2, 2)) - np.inf,))
    assert "unrolled" not in loop_kinds(max_sum_rectangle, rng.standard_normal((4, 5)))
    check_repeated_calls(max_sum_rectangle, (rng.standard_normal((4, 5)),), (rng.standard_normal((6, 6)),))


def test_a_tuple_of_arrays_is_carried_by_the_loop():
    assert loop_kinds(state_pair, np.ones(3), np.zeros(3), 0.1, 20) == ["loop"]
    check_repeated_calls(state_pair, (np.ones(3), np.zeros(3), 0.1, 20), (np.arange(4.0), np.ones(4), 0.05, 7))


def test_element_reads_of_a_split_tuple_agree_with_numpy():
    rng = np.random.default_rng(3)
    check_repeated_calls(indexed_and_measured, (rng.random(10),), (np.array([3, 1, 4, 1, 5]),))


def test_a_tuple_holding_none_keeps_pythons_values():
    x = np.array([0.0, 1.0, 0.5, 2.0, 0.1, 3.0])
    check_repeated_calls(last_crossing, (x, 0.8), (x, 10.0))
