"""While loops whose test reads Python numbers the body changes (`t = 0.0; while t < T: ...;
t += dt`, `i = 0; while i < n: ...; i += 1`): the test was a Python bool on every iteration,
so the loop ran as Python and tracing unrolled it (an RK4 integrator's 1,000 steps: a graph
past kiln's bound on generated source, run eagerly after a 3 s trace). After the first
iteration such numbers are lifted to traced ones (kiln._loop_counters) and the rest of the
loop is captured as a while loop node; their types after the loop are Python's (or NumPy's
scalars'). A test that reads none of them, or a body that cannot take them traced, runs as
Python, as before."""
import copy

import numpy as np
import pytest

import kiln


def rk4_until(state0, dt, T):
    """A pendulum integrated by RK4 to a time T (a Python float the loop counts to)."""
    def deriv(s):
        return np.array([s[1], -9.81 * np.sin(s[0])])
    state = state0
    t = 0.0
    while t < T:
        k1 = deriv(state)
        k2 = deriv(state + 0.5 * dt * k1)
        k3 = deriv(state + 0.5 * dt * k2)
        k4 = deriv(state + dt * k3)
        state = state + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        t += dt
    return t, state


def gauss_seidel(A, b, tol, maxit):
    n = len(b)
    x = np.zeros(n)
    it = 0
    err = np.inf
    while err > tol and it < maxit:
        x_old = x.copy()
        for i in range(n):
            s = A[i, :i] @ x[:i] + A[i, i + 1:] @ x_old[i + 1:]
            x[i] = (b[i] - s) / A[i, i]
        err = np.linalg.norm(x - x_old, ord=np.inf)
        it += 1
    return x, it


def strided_sum(x):
    i, s = 0, 0.0
    while i < x.shape[0]:
        s += x[i] * i
        i += 3
    return s, i


def numpy_scalar_clock(x):
    t = np.float32(0)
    while t < np.float32(2.5):
        x = x * 0.9 + t
        t += np.float32(0.25)
    return x, t


def list_indexed(x):
    weights = [0.5, 2.0, 3.0, 1.5]
    i = 0
    while i < 4:  # a list read by the counter: the loop runs as Python
        x = x * weights[i]
        i += 1
    return x, i


def big_counter(x):
    n = 2 ** 70
    while n > 2 ** 60:  # past int64: Python's ints
        n //= 4
        x = x + 1
    return x, n


def untouched_test(x):
    k = 0
    todo = [3, 2, 1]
    while todo:  # the test reads no number the body changes
        x = x * todo.pop()
        k += 1
    return x, k


def short_count(x):
    i = 0
    while i < 3:  # short: Python's, and i a Python int after it
        x = x + 1
        i += 1
    return x, f"{i} steps"


def powers_of_two(x):
    k = 0
    while 2 ** k < 10 ** 6:  # a test that needs k's value: Python's, with no graph break
        x = x + k
        k += 1
    return x, k


CASES = {
    "rk4_until": (rk4_until, lambda rng: (rng.random(2), 0.01, 3.0)),
    "gauss_seidel": (gauss_seidel, lambda rng: (rng.random((6, 6)) + 6 * np.eye(6),
                                                rng.random(6), 1e-10, 200)),
    "strided_sum": (strided_sum, lambda rng: (rng.random(50),)),
    "numpy_scalar_clock": (numpy_scalar_clock, lambda rng: (rng.random(3).astype(np.float32),)),
    "list_indexed": (list_indexed, lambda rng: (rng.random(3),)),
    "big_counter": (big_counter, lambda rng: (rng.random(3),)),
    "untouched_test": (untouched_test, lambda rng: (rng.random(3),)),
    "short_count": (short_count, lambda rng: (rng.random(3),)),
    "powers_of_two": (powers_of_two, lambda rng: (rng.random(3),)),
}
CAPTURED = ("rk4_until", "gauss_seidel", "strided_sum", "numpy_scalar_clock")


def _same(got, expected):
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, (np.ndarray, np.generic)):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    else:
        assert got == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_while_loops_counting_python_numbers_agree_with_numpy(name):
    function, make = CASES[name]
    arguments = make(np.random.default_rng(3))
    compiled = kiln.compile(function)
    for _ in range(2):
        got, expected = compiled(*copy.deepcopy(arguments)), function(*copy.deepcopy(arguments))
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            _same(a, b)


@pytest.mark.parametrize("name", CAPTURED)
def test_while_loops_counting_python_numbers_are_captured(name):
    function, make = CASES[name]
    report = kiln.explain(kiln.compile(function))(*make(np.random.default_rng(3)))
    kinds = [loop.kind for loop in report.loops if loop.kind != "select"]
    assert kinds and "unrolled" not in kinds and report.graph_break_count == 0, str(report)


@pytest.mark.parametrize("name", ["short_count", "powers_of_two", "list_indexed",
                                  "untouched_test"])
def test_while_loops_left_to_python_break_no_graph(name):
    # lifted after the first iteration, i was traced after the loop: f"{i}" and 2 ** k were
    # graph breaks where the unrolled loop had none
    function, make = CASES[name]
    report = kiln.explain(kiln.compile(function))(*make(np.random.default_rng(3)))
    assert report.graph_break_count == 0, str(report)


def euler_trajectory(y0, T, dt):
    """Steps appended to lists in a while loop: its count is known only when it runs, so
    kiln unrolls it (kiln._loop_appends)."""
    t = 0.0
    y = y0.copy()
    times, states = [], []
    while t < T:
        y = y + dt * (-0.5 * y + np.sin(t))
        t += dt
        times.append(t)
        states.append(y.copy())
    return np.array(times), np.stack(states)


def test_an_unrolled_loop_too_long_to_compile_runs_eagerly_without_compiling():
    """600 steps unrolled made one kernel of 600 KB (np.stack's rows, each recomputing its last
    steps), whose compile took 30 s (1,000 steps: 2.4 minutes). A kernel function past kiln's
    bound runs the call eagerly, warned, before the compiler is started."""
    y0 = np.ones(4)
    compiled = kiln.compile(euler_trajectory)
    with pytest.warns(RuntimeWarning, match="bound of 256 KiB for one kernel function"):
        got = compiled(y0, 6.0, 0.01)
    expected = euler_trajectory(y0, 6.0, 0.01)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
