"""A fifth set of NumPy programs as people write them, each compiled once and called with
several inputs (so that guards, dynamic numbers and cached graphs are exercised), agreeing with
NumPy on values, dtypes, shapes, Python types and the arrays updated in place."""
import math
import sys

import numpy as np
import pytest

import kiln
from test_numpy_programs import _assert_same, check_call
from test_numpy_programs_third import sir


def check_calls(function, argument_sets):
    """kiln.compile(function) agrees with NumPy on each argument set in turn, one compiled
    function for all of them."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        check_call(compiled, function, arguments)


# ---- loops that may run no iteration keep Python's number ----

def partial_sum(x, n):
    """The first n terms' sum: Python's int 0 where there are none."""
    total = 0
    for i in range(n):
        total += x[i]
    return total


def geometric(n):
    """x = 1 made a float by the first iteration only."""
    x = 1
    for i in range(n):
        x = x * 1.5
    return x


def weighted_int8(x, n):
    """What NumPy makes of the loop's value next follows its type: int8 of Python's 0."""
    s = 0
    for i in range(n):
        s = s + x[i]
    return s * np.int8(3)


def mean_of_first(x, n):
    s = 0
    for i in range(n):
        s += x[i]
    return s / max(n, 1)


def bisection_steps(width, tol):
    """A while loop whose test may fail at once: `w` stays the int it was."""
    w = 1
    steps = 0
    while w * width > tol:
        w = w / 2
        steps += 1
    return w, steps


def accumulate_until(x, limit):
    s = 0
    k = 0
    while s < limit:
        s += x[k]
        k += 1
    return s, k


def row_prefix_sums(X, counts):
    out = []
    for r in range(len(X)):
        s = 0
        for j in range(counts[r]):
            s += X[r, j]
        out.append(s)
    return tuple(out)


ZERO_TRIPS = {
    "partial_sum": (partial_sum, [(np.arange(1.0, 9.0), 5), (np.arange(1.0, 9.0), 0),
                                  (np.arange(1.0, 9.0), 3)]),
    "geometric": (geometric, [(10,), (0,), (1,)]),
    "weighted_int8": (weighted_int8, [(np.arange(1.0, 9.0), 4), (np.arange(1.0, 9.0), 0)]),
    "mean_of_first": (mean_of_first, [(np.arange(1.0, 9.0), 4), (np.arange(1.0, 9.0), 0)]),
    "bisection_steps": (bisection_steps, [(3.0, 0.1), (0.05, 0.1), (2.0, 0.5)]),
    "accumulate_until": (accumulate_until, [(np.arange(1.0, 9.0), 5.0),
                                            (np.arange(1.0, 9.0), -1.0)]),
    "row_prefix_sums": (row_prefix_sums, [(np.arange(1.0, 41.0).reshape(10, 4),
                                           np.array([2, 0, 3, 1, 1, 4, 0, 2, 2, 1])),
                                          (np.arange(1.0, 41.0).reshape(10, 4),
                                           np.array([1] * 10))]),
}


@pytest.mark.parametrize("name", sorted(ZERO_TRIPS))
def test_a_loop_that_runs_no_iteration_keeps_the_numbers_python_type(name):
    # a Python number the body retypes (int 0 to NumPy's float64, int 1 to a Python float)
    # was carried at the body's type: with no iteration, 0.0 for Python's 0 (int8 * 0.0 a
    # float64 for NumPy's int8)
    function, argument_sets = ZERO_TRIPS[name]
    check_calls(function, argument_sets)


def test_a_loop_that_runs_iterations_stays_one_graph():
    compiled = kiln.compile(partial_sum)
    x = np.arange(1.0, 9.0)
    compiled(x, 5)
    report = kiln.explain(compiled)(x, 6)
    assert report.graph_break_count == 0
    assert compiled(x, 7) == partial_sum(x, 7)


# ---- a Python complex times NumPy's float64 is Python's complex ----

def phasors(theta, r):
    """1j * theta[k]: Python's complex takes np.float64 (a float) before NumPy does."""
    z = 1j * theta[0]
    w = r[0] * np.exp(z)
    return z, w, 2j / theta[1], 1j - theta[2], (1j * theta[1]) ** 2, z * np.complex64(1)


def damped_orbit(x):
    """A Python complex state that adds NumPy float64 terms stays a Python complex."""
    z = 0j
    for i in range(len(x)):
        z = z * (0.5 + 0.5j) + x[i]
    return z, z * np.complex64(1)


def escape_count(c, offsets, limit):
    z = 0j
    n = 0
    while abs(z) < 2 and n < limit:
        z = z * z + c + offsets[0]
        n += 1
    return z, n


@pytest.mark.parametrize("function, argument_sets", [
    (phasors, [(np.arange(1.0, 4.0), np.array([2.0])), (np.array([0.5, -1.0, 3.0]),
                                                        np.array([1.5]))]),
    (damped_orbit, [(np.arange(5.0),), (np.linspace(-1.0, 1.0, 7),)]),
    (escape_count, [(0.2 + 0.3j, np.array([0.1]), 50), (-0.4 + 0.1j, np.array([-0.2]), 30)]),
], ids=["phasors", "damped_orbit", "escape_count"])
def test_python_complex_with_numpy_float64_is_a_python_complex(function, argument_sets):
    # NumPy's complex128 was returned (and `z * np.complex64(1)` was complex128 for complex64)
    check_calls(function, argument_sets)


# ---- an estimator whose methods call a staticmethod through self ----

class LogisticRegression:
    """scikit-learn's style: a staticmethod link function called as self._sigmoid."""

    def __init__(self, lr=0.5, n_iter=50):
        self.lr, self.n_iter = lr, n_iter

    @staticmethod
    def _sigmoid(z):
        return 1 / (1 + np.exp(-z))

    def fit(self, X, y):
        self.w_, self.b_ = np.zeros(X.shape[1]), 0.0
        for _ in range(self.n_iter):
            p = self._sigmoid(X @ self.w_ + self.b_)
            self.w_ = self.w_ - self.lr * X.T @ (p - y) / len(y)
            self.b_ = self.b_ - self.lr * np.mean(p - y)
        return self

    def predict_proba(self, X):
        return self._sigmoid(X @ self.w_ + self.b_)

    def predict(self, X):
        return (self.predict_proba(X) >= 0.5).astype(int)


class SlottedTanh:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w

    @staticmethod
    def act(z):
        return np.tanh(z)

    def __call__(self, X):
        return self.act(X @ self.w)


def test_a_staticmethod_called_through_self_is_not_bound():
    # the stand-in for self bound the staticmethod's function to it: self._sigmoid(z) raised
    # "takes 1 positional argument but 2 were given"
    rng = np.random.default_rng(3)
    X = rng.random((30, 3))
    y = (X.sum(axis=1) > 1.5).astype(float)
    mine, theirs = LogisticRegression().fit(X, y), LogisticRegression().fit(X, y)
    for rows in (X, X[:7]):
        _assert_same(kiln.compile(mine.predict)(rows), theirs.predict(rows), "predict")
        _assert_same(kiln.compile(mine.predict_proba)(rows), theirs.predict_proba(rows), "proba")
    layer = SlottedTanh(rng.random(3))
    _assert_same(kiln.compile(layer)(X), layer(X), "slotted")


# ---- recurrences that read the list they append to ----

def logistic_map(r, x0, n):
    xs = [x0]
    for _ in range(n):
        xs.append(r * xs[-1] * (1 - xs[-1]))
    return xs


def random_walk_path(steps, x0):
    path = [x0]
    for k in range(len(steps)):
        path.append(path[-1] + steps[k])
    return np.stack(path), path[-1]


def second_order(x, a1, a2):
    """y[t] = a1 y[t-1] + a2 y[t-2] + x[t], and a running sum of the last two after each
    append."""
    y = [x[0], x[1]]
    total = 0.0
    for t in range(2, len(x)):
        y.append(a1 * y[-1] + a2 * y[-2] + x[t])
        total += y[-1] - y[-2]
    return np.array(y), total


LAST_ITEMS = {
    "sir": (sir, lambda r: [(0.3, 0.1, 0.99, 0.01, 0.0, 0.1, 300),
                            (0.5, 0.2, 0.9, 0.1, 0.0, 0.1, 300)]),
    "logistic_map": (logistic_map, lambda r: [(3.7, 0.2, 300), (3.9, 0.4, 300)]),
    "random_walk_path": (random_walk_path, lambda r: [(r.normal(size=(300, 2)), np.zeros(2)),
                                                      (r.normal(size=(300, 2)), np.ones(2))]),
    "second_order": (second_order, lambda r: [(r.random(300), 0.5, -0.2),
                                              (r.random(300), 0.4, 0.1)]),
}


@pytest.mark.parametrize("name", sorted(LAST_ITEMS))
def test_a_loop_reading_the_last_items_it_appended_is_one_loop(name):
    # items[-1] of a list the body appends to was a TypeError inside kiln ('Stack' object is
    # not subscriptable): the loop was unrolled (300 steps: a graph of thousands of ops; 2,000
    # steps of the logistic map compiled in 3.7 s)
    # (with Python numbers that changed between calls: graph inputs, nothing folded)
    function, make = LAST_ITEMS[name]
    argument_sets = make(np.random.default_rng(5))
    check_calls(function, argument_sets)
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        compiled(*arguments)
    report = kiln.explain(compiled)(*make(np.random.default_rng(6))[0])
    assert (report.graph_break_count, report.break_reasons) == (0, [])
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)


# ---- loops of functions defined inside the compiled function ----

def macd(prices, fast=12, slow=26, signal=9):
    """Moving-average convergence/divergence with its EMA as an inner function."""
    def ema(x, n):
        a = 2 / (n + 1)
        out = np.empty_like(x)
        out[0] = x[0]
        for i in range(1, len(x)):
            out[i] = a * x[i] + (1 - a) * out[i - 1]
        return out
    m = ema(prices, fast) - ema(prices, slow)
    s = ema(m, signal)
    return m, s, m - s


def row_maxima(X):
    def rowmax(row):
        m = row[0]
        for j in range(1, len(row)):
            if row[j] > m:
                m = row[j]
        return m
    return np.array([rowmax(X[i]) for i in range(3)]), rowmax(X[-1])


def make_power(w):
    """A factory: the inner function escapes the trace and runs as Python afterwards."""
    def power(x):
        for _ in range(10):
            x = x * w
        return x
    return power


def test_the_loops_of_an_inner_function_are_captured():
    # an inner function's loops were never rewritten: unrolled (macd: 18,876 ops, 1.5 s)
    rng = np.random.default_rng(9)
    prices = 100 * np.exp(np.cumsum(rng.normal(0, 0.01, 300)))
    check_calls(macd, [(prices,), (prices[::-1].copy(),)])
    report = kiln.explain(kiln.compile(macd))(prices)
    assert [loop.kind for loop in report.loops] == ["loop"] * 3, str(report)
    check_calls(row_maxima, [(rng.random((5, 40)),), (rng.random((4, 30)),)])
    power = kiln.compile(make_power)(2.0)   # escapes: left as written
    np.testing.assert_array_equal(power(np.ones(2)), make_power(2.0)(np.ones(2)))


# ---- a number whose type a branch chooses, stored into a float array ----

def binomial_put(S0, K, T, rate, sigma, N):
    """An American put on a binomial tree, element by element (a textbook's loops)."""
    dt = T / N
    u = math.exp(sigma * math.sqrt(dt))
    d = 1 / u
    p = (math.exp(rate * dt) - d) / (u - d)
    V = np.zeros(N + 1)
    for j in range(N + 1):
        V[j] = max(K - S0 * u ** j * d ** (N - j), 0)
    for i in range(N - 1, -1, -1):
        for j in range(i + 1):
            V[j] = math.exp(-rate * dt) * (p * V[j + 1] + (1 - p) * V[j])
            V[j] = max(V[j], K - S0 * u ** j * d ** (i - j))
    return V[0]


def relu_by_loop(x):
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = max(x[i], 0)
    return out


def _python_runs(function, compiled, arguments):
    """How often `function`'s own code runs during compiled(*arguments): an eager rerun."""
    runs = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is function.__code__:
            runs.append(1)
    sys.setprofile(profile)
    try:
        compiled(*arguments)
    finally:
        sys.setprofile(None)
    return len(runs)


@pytest.mark.parametrize("function, arguments", [
    (binomial_put, (100.0, 100.0, 1.0, 0.05, 0.2, 60)),
    (relu_by_loop, (np.linspace(-1.0, 1.0, 9),)),
])
def test_a_python_number_a_branch_chooses_stored_into_a_float_array_stays_in_the_graph(
        function, arguments):
    # `V[j] = max(payoff, 0)` committed the choice between NumPy's float64 and Python's 0:
    # every call whose 0 side was taken somewhere ran again eagerly (as slow as NumPy)
    check_calls(function, [arguments, arguments])
    compiled = kiln.compile(function)
    compiled(*arguments)
    assert _python_runs(function, compiled, arguments) == 0


# ---- chained comparisons ----

def rot13(b):
    """ROT13 of lowercase ASCII bytes, a character at a time."""
    out = np.empty_like(b)
    for i in range(len(b)):
        c = b[i]
        if 97 <= c <= 122:
            out[i] = (c - 97 + 13) % 26 + 97
        else:
            out[i] = c
    return out


def in_band(x, lo, hi):
    count = 0
    for i in range(len(x)):
        if lo <= x[i] < hi:
            count += 1
    return count, [1.0 if lo < x[i] <= hi else 0.0 for i in range(3)], lo < x[0] < x[1] < hi


def test_a_chained_comparison_in_a_loop_stays_in_the_graph():
    # `97 <= c <= 122` asked bool() of the first comparison: a graph break per character
    text = np.frombuffer(b"the quick brown fox jumps over the lazy dog", dtype=np.uint8)
    check_calls(rot13, [(text,), (text[::-1].copy(),)])
    report = kiln.explain(kiln.compile(rot13))(text)
    assert (report.graph_break_count, [loop.kind for loop in report.loops]) == (
        0, ["select", "loop"]), str(report)
    rng = np.random.default_rng(4)
    check_calls(in_band, [(rng.random(40), 0.2, 0.7), (rng.random(40), 0.5, 0.6)])


def vowel_count(b):
    count = 0
    for c in b:
        if c in (97, 101, 105, 111, 117):
            count += 1
    return count


def non_separators(b):
    k = 0
    for c in b:
        if c not in (32, 44):
            k += 1
    return k


@pytest.mark.parametrize("function", [vowel_count, non_separators])
def test_a_membership_test_among_constants_in_a_loop_stays_in_the_graph(function):
    # `if c in (97, 101, ...)` asked bool() of c == 97: a graph break per character
    text = np.frombuffer(b"the quick brown fox, jumps over the lazy dog", dtype=np.uint8)
    check_calls(function, [(text,), (text[::2].copy(),)])
    report = kiln.explain(kiln.compile(function))(text)
    assert report.graph_break_count == 0, str(report)


# ---- Python's math functions of traced numbers in loops ----

def path_length(P):
    length = 0.0
    for i in range(1, len(P)):
        dx, dy = P[i, 0] - P[i - 1, 0], P[i, 1] - P[i - 1, 1]
        length += math.sqrt(dx * dx + dy * dy) + 0 * math.hypot(dx, dy)
    return length


def softplus_by_loop(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = math.log(1 + math.exp(x[i]))
    return out


def nan_aware_sum(x):
    s = 0.0
    last = 0.0
    for v in x:
        if not math.isnan(v):
            s += math.sqrt(v)
            last = math.atan2(v, 1.0)
    return s, last


def floor_histogram(x, n):
    counts = np.zeros(n + 1, dtype=np.int64)
    other = 0
    for v in x:
        counts[math.floor(v * n)] += 1
        other += math.ceil(v * 3) + math.trunc(-v * 2)
    return counts, other


def test_math_functions_of_traced_numbers_stay_in_the_loop():
    # math.sqrt(x) asked float() of a traced number: a graph break per iteration
    rng = np.random.default_rng(8)
    for function, argument_sets in [
            (path_length, [(rng.random((60, 2)),), (rng.random((60, 2)),)]),
            (softplus_by_loop, [(rng.normal(size=40),), (rng.normal(size=40),)]),
            (nan_aware_sum, [(np.where(rng.random(40) > 0.8, np.nan, rng.random(40)),),
                             (rng.random(40),)]),
            (floor_histogram, [(rng.random(50), 10), (rng.random(50), 10)])]:
        check_calls(function, argument_sets)
        report = kiln.explain(kiln.compile(function))(*argument_sets[0])
        assert report.graph_break_count == 0, str(report)


def sqrt_sum(x):
    s = 0.0
    for v in x:
        s += math.sqrt(v)
    return s


def exp_sum(x):
    s = 0.0
    for v in x:
        s += math.exp(v)
    return s


def floor_sum(x):
    s = 0
    for v in x:
        s += math.floor(v)
    return s


@pytest.mark.parametrize("function, bad, error", [
    (sqrt_sum, np.array([0.5, 0.2, -0.1, 0.3]), ValueError),
    (exp_sum, np.array([0.5, 800.0, 0.1, 0.2]), OverflowError),
    (floor_sum, np.array([0.5, np.nan, 0.1, 0.2]), ValueError),
])
def test_a_math_function_raises_pythons_error_where_python_does(function, bad, error):
    compiled = kiln.compile(function)
    good = np.nan_to_num(np.abs(bad)) % 1.0
    assert compiled(good) == pytest.approx(function(good), rel=1e-12)
    with pytest.raises(error, match="math|NaN"):
        function(bad.copy())
    with pytest.raises(error, match="math|NaN"):
        compiled(bad.copy())
