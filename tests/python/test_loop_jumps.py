"""`break` and `continue` in loops kiln captures (kiln._loop_jumps): a flag set at the jump,
the rest of the body guarded by it, a while loop's test and a for loop's node stopping at it.
Each agrees with NumPy on the first and a cached call, with no graph break."""
import numpy as np
import pytest

import kiln


def escape_times(C, max_iters):
    # Numba's Mandelbrot, per element: a Python complex carried from 0j, a break at escape
    out = np.empty(C.shape, dtype=np.int64)
    for k in range(C.shape[0]):
        c = C[k]
        z = 0.0j
        n = max_iters
        for i in range(max_iters):
            z = z * z + c
            if (z.real * z.real + z.imag * z.imag) >= 4:
                n = i
                break
        out[k] = n
    return out


def until_settled(x, rate):
    # `while True:` with a convergence test at its end
    steps = 0
    while True:
        previous = x.copy()
        x = x * rate
        steps += 1
        if np.abs(x - previous).max() < 1e-6:
            break
    return x, steps


def skips_and_stops(x):
    total = x.copy()
    for i in range(x.shape[0]):
        if x[i] < 0.2:
            continue
        elif x[i] > 0.95:
            break
        total[i] = total[i] * 10
        if x[i] > 0.9:
            continue
        total[i] += 1
    return total


def first_above(x, level):
    # the found value outlives the loop, the index does not
    found = -1.0
    for i in range(x.shape[0]):
        if x[i] > level:
            found = x[i]
            break
    return found * 2


def sweeps(x, most):
    # a bounded iteration count with an early exit in a while loop's body
    count = 0
    while count < most:
        x = 0.5 * (x + 2.0 / x)
        count += 1
        if np.abs(x * x - 2.0).max() < 1e-12:
            break
    return x, count


def running_sum_until(x, limit):
    # `s` starts a Python int and becomes a traced float: the loop runs its first iteration
    s = 0
    for i in range(x.shape[0]):
        s = s + x[i]
        if s > limit:
            break
    return s


def newton_iterations(a, tol):
    # Newton's method with a tolerance break, its iteration count read after the loop
    x = a.copy()
    for it in range(100):
        dx = (x * x - a) / (2 * x)
        x = x - dx
        if np.max(np.abs(dx)) < tol:
            break
    return x, it


def index_after_break(x, limit):
    # the index that broke, or the last one where none does
    total = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] > limit:
            break
        total = total + x[i]
    return total, i


CASES = {
    "newton_iterations": (newton_iterations, lambda r: (r.random(6) + 1, 1e-12)),
    "index_after_break": (index_after_break, lambda r: (r.random(30), 0.9)),
    "index_after_no_break": (index_after_break, lambda r: (r.random(30), 2.0)),
    "running_sum_until": (running_sum_until, lambda r: (r.random(20), 3.0)),
    "escape_times": (escape_times, lambda r: ((r.random(30) * 3 - 2) + 1j * (r.random(30) * 2 - 1),
                                               25)),
    "until_settled": (until_settled, lambda r: (r.random(5) + 1, 0.5)),
    "skips_and_stops": (skips_and_stops, lambda r: (r.random(40),)),
    "first_above": (first_above, lambda r: (r.random(20), 0.8)),
    "sweeps": (sweeps, lambda r: (r.random(4) + 1, 50)),
}


def _same(got, expected):
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_loops_that_break_or_continue_are_captured(name):
    function, make = CASES[name]
    compiled = kiln.compile(function)
    for seed in (1, 2):  # the second call runs the cached graph on other data
        arguments = make(np.random.default_rng(seed))
        _same(compiled(*arguments), function(*arguments))
    report = kiln.explain(kiln.compile(function))(*make(np.random.default_rng(3)))
    assert report.graph_break_count == 0, str(report)
    assert report.loops and not [loop for loop in report.loops if loop.kind == "unrolled"], \
        str(report)


@pytest.mark.parametrize("name", ["newton_iterations", "index_after_break",
                                  "index_after_no_break"])
def test_the_index_read_after_a_break_is_pythons_int(name):
    # it was refused ("it breaks, and its index is read after it"): the loop unrolled
    function, make = CASES[name]
    arguments = make(np.random.default_rng(4))
    got, expected = kiln.compile(function)(*arguments), function(*arguments)
    assert type(got[1]) is int and got[1] == expected[1]


def search(x):
    # a break the trace cannot decide (the index is traced): the loop node stops at its flag
    for i in range(1_000_000_000):
        if x[i % x.shape[0]] > 0.5:
            break
    return x * 2


def test_a_captured_for_loop_stops_at_its_break():
    x = np.array([0.1, 0.2, 0.7])
    np.testing.assert_array_equal(kiln.compile(search)(x), x * 2)  # a billion steps otherwise


def static_search(x, items):
    # a break on Python values: the loop runs as Python and stops there
    position = 0
    for i in range(len(items)):
        if items[i] == "b":
            position = i
            break
    return x + position


def test_a_loop_run_as_python_stops_at_its_break():
    x = np.zeros(3)
    np.testing.assert_array_equal(kiln.compile(static_search)(x, ["a", "b", "c"]), x + 1)
