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


def local_alignment_score(a, b):
    H = np.zeros((len(a) + 1, len(b) + 1), dtype=np.int64)
    best, where = 0, (0, 0)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            h = max(0, H[i - 1, j - 1] + (2 if a[i - 1] == b[j - 1] else -1), H[i - 1, j] - 2)
            H[i, j] = h
            if h > best:
                best, where = h, (i, j)
    return best, where, H


def nearest_pair(x, y):
    gap, (i, j), seen = np.inf, (-1, -1), 0
    for k in range(len(x)):
        d = abs(x[k] - y[k])
        if d < gap:
            gap, (i, j), seen = d, (k, k + 1), seen + 1
    return gap, (i, j), seen


def test_a_tuple_assigned_in_an_unpacking_of_a_display_is_carried_by_the_loop():
    # `best, where = h, (i, j)` (Smith-Waterman's best cell): unrolled before, 9 x 8 cells traced
    # into 2,027 ops (3.4 s to the first result); now loop nodes of 18 ops
    a = np.frombuffer(b"GGTTGACTA", dtype=np.uint8)
    b = np.frombuffer(b"TGTTACGG", dtype=np.uint8)
    assert loop_kinds(local_alignment_score, a, b) == ["loop", "loop"]
    check_repeated_calls(local_alignment_score, (a, b), (a[:3], b[:1]), (a[:0], b))
    rng = np.random.default_rng(4)
    check_repeated_calls(nearest_pair, (rng.random(6), rng.random(6)), (np.ones(2), np.ones(2)))
