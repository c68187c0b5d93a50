"""A loop that returns a slice of an array it fills (`return hist[:k + 1], k + 1` at an early
exit, `return hist, n` after the loop) is captured as one loop node: the results are the slice's
bounds, and the exit slices the array (kiln._loop_returns). It was unrolled: a 10,000-step
fall with an early exit at step 4,515 took 4.4 s for its first call, 0.09 s now."""

import numpy as np

from test_numpy_programs_eleventh import amortization, check_repeated_calls, loop_kinds


def fall_until_ground(h0, v0, dt, max_steps):
    hist = np.zeros((max_steps, 2))
    h, v = h0, v0
    for k in range(max_steps):
        v -= 9.81 * dt
        h += v * dt
        hist[k] = h, v
        if h < 0:
            return hist[:k + 1], k + 1
    return hist, max_steps


def orbit_until_escape(c, max_iter=50):
    zs = np.zeros(max_iter, dtype=np.complex128)
    z = 0j
    for k in range(max_iter):
        z = z * z + c
        zs[k] = z
        if abs(z) > 2.0:
            return zs[:k + 1]
    return zs


def tail_after_threshold(x, t):
    for i in range(len(x)):
        if x[i] > t:
            return {"tail": x[i:], "start": i}
    return {"tail": x, "start": 0}


def test_a_prefix_returned_from_a_loop_is_sliced_at_the_exit():
    assert loop_kinds(fall_until_ground, 1.0, 0.0, 0.01, 100) == ["loop"]
    check_repeated_calls(fall_until_ground, (1.0, 0.0, 0.01, 100), (5.0, 2.0, 0.01, 100), (1.0, 0.0, 0.01, 10))


def test_a_single_returned_prefix_and_a_dict_of_suffixes():
    assert loop_kinds(orbit_until_escape, 0.3 + 0.5j) == ["loop"]
    check_repeated_calls(orbit_until_escape, (0.3 + 0.5j,), (1.0 + 1.0j,), (-0.1 + 0.1j, 20))
    x = np.array([0.1, 0.4, 0.9, 0.2, 0.95])
    assert loop_kinds(tail_after_threshold, x, 0.5) == ["loop"]
    check_repeated_calls(tail_after_threshold, (x, 0.5), (x, 0.93), (x, 2.0))


def test_an_amortisation_schedule_that_ends_early_is_one_loop():
    assert loop_kinds(amortization, 10000.0, 0.07, 5, 500.0) == ["loop"]
    check_repeated_calls(amortization, (200000.0, 0.05, 30), (10000.0, 0.07, 5, 500.0))
