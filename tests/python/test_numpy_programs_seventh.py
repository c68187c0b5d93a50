"""A seventh set of NumPy programs as people write them (textbook numerics, histograms, sorting,
masks, integer arithmetic, loops with early exits), each compiled once and called with several
inputs, agreeing with NumPy on values, dtypes, shapes, Python types and the arrays updated in
place."""
import numpy as np
import pytest

import kiln
from test_numpy_programs import check_call


def check_calls(function, argument_sets):
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        check_call(compiled, function, arguments)


# ---- integrators ----

def rk4_harmonic(y0, omega, dt, steps):
    def f(y):
        return np.array([y[1], -omega * omega * y[0]])
    y = y0.astype(np.float64)
    out = np.empty((steps + 1, 2))
    out[0] = y
    for n in range(steps):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[n + 1] = y
    return out


def euler_until_ground(h0, v0, dt):
    h, v, t = h0, v0, 0.0
    while True:
        v = v - 9.81 * dt
        h = h + v * dt
        t += dt
        if h <= 0:
            break
    return t, h


def test_integrators():
    check_calls(rk4_harmonic, [(np.array([1.0, 0.0]), 2.0, 0.01, 50),
                               (np.array([0, 1], dtype=np.int32), 1.0, 0.1, 20)])
    check_calls(euler_until_ground, [(10.0, 0.0, 0.01), (np.float64(3.0), 1.0, 0.05)])


# ---- finite differences ----

def second_derivative(u, dx):
    d = np.empty_like(u)
    d[1:-1] = (u[2:] - 2 * u[1:-1] + u[:-2]) / dx ** 2
    d[0] = (2 * u[0] - 5 * u[1] + 4 * u[2] - u[3]) / dx ** 2
    d[-1] = (2 * u[-1] - 5 * u[-2] + 4 * u[-3] - u[-4]) / dx ** 2
    return d


def periodic_advection(u, c, steps):
    for _ in range(steps):
        u = u - c * (u - np.roll(u, 1))
    return u


def neumann_heat(u, alpha, steps):
    u = u.copy()
    for _ in range(steps):
        padded = np.concatenate(([u[1]], u, [u[-2]]))
        u += alpha * (padded[2:] - 2 * u + padded[:-2])
    return u


def test_finite_differences():
    x = np.linspace(0, 1, 21)
    check_calls(second_derivative, [(np.sin(x), 0.05), (x ** 3, 0.05),
                                    (np.arange(8, dtype=np.float32), np.float32(0.5))])
    check_calls(periodic_advection, [(np.exp(-(x - 0.5) ** 2 * 50), 0.5, 30),
                                     (np.ones(5), 0.1, 3)])
    check_calls(neumann_heat, [(np.exp(-(x - 0.3) ** 2 * 50), 0.25, 40), (x, 0.1, 5)])


# ---- iterative solvers ----

def gauss_seidel(A, b, tol, max_iter):
    n = len(b)
    x = np.zeros(n)
    for it in range(max_iter):
        x_old = x.copy()
        for i in range(n):
            s1 = A[i, :i] @ x[:i]
            s2 = A[i, i + 1:] @ x_old[i + 1:]
            x[i] = (b[i] - s1 - s2) / A[i, i]
        if np.linalg.norm(x - x_old, ord=np.inf) < tol:
            return x, it + 1
    return x, max_iter


def sor_poisson(f, omega, sweeps):
    n = f.shape[0]
    u = np.zeros_like(f)
    h2 = 1.0 / (n - 1) ** 2
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                gs = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - h2 * f[i, j])
                u[i, j] += omega * (gs - u[i, j])
    return u


def power_iteration(A, iters):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    lam = 0.0
    for _ in range(iters):
        w = A @ v
        lam = v @ w
        v = w / np.linalg.norm(w)
    return lam, v


def test_iterative_solvers():
    rng = np.random.default_rng(1)
    A = rng.random((5, 5)) + 5 * np.eye(5)
    check_calls(gauss_seidel, [(A, rng.random(5), 1e-10, 100), (A, rng.random(5), 1e-3, 2)])
    check_calls(sor_poisson, [(np.ones((6, 6)), 1.5, 5), (rng.random((5, 5)), 1.0, 3)])
    S = rng.random((4, 4))
    check_calls(power_iteration, [(S + S.T, 30), (np.diag([3.0, 1.0, 2.0]), 10)])


# ---- cellular automata ----

def rule_automaton(cells, rule, steps):
    table = np.array([(rule >> k) & 1 for k in range(8)], dtype=np.uint8)
    history = np.zeros((steps + 1, cells.size), dtype=np.uint8)
    history[0] = cells
    for t in range(steps):
        left = np.roll(cells, 1)
        right = np.roll(cells, -1)
        cells = table[4 * left + 2 * cells + right]
        history[t + 1] = cells
    return history


def life_bounded(board, steps):
    b = board.astype(bool)
    for _ in range(steps):
        p = np.pad(b, 1).astype(np.int8)
        n = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 2:]
             + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:])
        b = (n == 3) | (b & (n == 2))
    return b, int(b.sum())


def test_cellular_automata():
    cells = np.zeros(15, dtype=np.uint8)
    cells[7] = 1
    check_calls(rule_automaton, [(cells, 30, 6), (cells, 110, 4)])
    rng = np.random.default_rng(2)
    check_calls(life_bounded, [(rng.random((8, 8)) > 0.6, 4), (np.eye(5, dtype=np.uint8), 2)])


# ---- Monte Carlo with a Generator ----

def mc_integral(seed, n):
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    fx = np.exp(-x * x)
    return fx.mean(), fx.std(ddof=1) / np.sqrt(n)


def random_walk_hits(seed, n, barrier):
    rng = np.random.default_rng(seed)
    steps = rng.choice(np.array([-1, 1]), size=n)
    path = np.cumsum(steps)
    hit = np.nonzero(np.abs(path) >= barrier)[0]
    return path, (hit[0] if hit.size else -1)


def test_monte_carlo():
    check_calls(mc_integral, [(1, 1000), (2, 50)])
    check_calls(random_walk_hits, [(3, 200, 5), (4, 10, 50)])


# ---- histograms ----

def weighted_histogram(x, w, bins):
    idx = np.clip((x * bins).astype(np.int64), 0, bins - 1)
    counts = np.bincount(idx, minlength=bins)
    weights = np.bincount(idx, weights=w, minlength=bins)
    with np.errstate(invalid="ignore"):
        means = weights / counts
    return counts, weights, means


def histogram_stats(x):
    hist, edges = np.histogram(x, bins=10, range=(0.0, 1.0))
    centers = 0.5 * (edges[1:] + edges[:-1])
    mode = centers[np.argmax(hist)]
    return hist, centers, mode, hist.sum() == x.size


def add_at_histogram(labels, values, k):
    sums = np.zeros(k)
    np.add.at(sums, labels, values)
    counts = np.zeros(k, dtype=np.int64)
    np.add.at(counts, labels, 1)
    return sums, counts


def test_histograms():
    rng = np.random.default_rng(3)
    check_calls(weighted_histogram, [(rng.random(100), rng.random(100), 8),
                                     (rng.random(5), rng.random(5), 10)])
    check_calls(histogram_stats, [(rng.random(200),), (rng.random(7) * 1.5,)])
    check_calls(add_at_histogram, [(rng.integers(0, 4, 30), rng.random(30), 4),
                                   (np.array([1, 1, 1]), np.array([1.0, 2.0, 3.0]), 3)])


# ---- image filters ----

def box_blur(img):
    p = np.pad(img.astype(np.float32), 1, mode="edge")
    out = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 1:-1] + p[1:-1, 2:]
           + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:]) / 9
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def sobel_magnitude(img):
    f = img.astype(np.float64)
    gx = (f[:-2, 2:] + 2 * f[1:-1, 2:] + f[2:, 2:]) - (f[:-2, :-2] + 2 * f[1:-1, :-2] + f[2:, :-2])
    gy = (f[2:, :-2] + 2 * f[2:, 1:-1] + f[2:, 2:]) - (f[:-2, :-2] + 2 * f[:-2, 1:-1] + f[:-2, 2:])
    mag = np.hypot(gx, gy)
    return mag, mag > mag.mean()


def threshold_inplace(img, level):
    img[img < level] = 0
    img[img >= level] //= 2
    return img.max()


def test_image_filters():
    rng = np.random.default_rng(4)
    img = rng.integers(0, 256, (6, 7), dtype=np.uint8)
    check_calls(box_blur, [(img,), (np.full((3, 3), 255, np.uint8),)])
    check_calls(sobel_magnitude, [(img,), (rng.random((5, 5)),)])
    check_calls(threshold_inplace, [(img, 100), (img, np.uint8(7))])


# ---- sorting-based code ----

def rank_data(x):
    order = np.argsort(x, kind="stable")
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(x))
    return ranks


def median_by_sort(x):
    s = np.sort(x)
    n = len(s)
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2


def unique_with_counts(labels):
    values, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return values, inverse, counts, values[np.argmax(counts)]


def digitize_by_searchsorted(x, edges):
    i = np.searchsorted(edges, x, side="right") - 1
    inside = (i >= 0) & (i < len(edges) - 1)
    return np.where(inside, i, -1)


def test_sorting():
    rng = np.random.default_rng(5)
    check_calls(rank_data, [(rng.random(10),), (np.array([3, 1, 3, 2]),)])
    check_calls(median_by_sort, [(rng.random(9),), (rng.random(10),),
                                 (np.array([4, 1, 3, 2], dtype=np.int32),)])
    check_calls(unique_with_counts, [(rng.integers(0, 5, 20),), (np.array([2, 2, 1]),)])
    check_calls(digitize_by_searchsorted, [(rng.random(10) * 1.2 - 0.1, np.linspace(0, 1, 5)),
                                           (np.array([0.0, 1.0, 0.5]), np.array([0.0, 0.5, 1.0]))])


# ---- early exits from loops ----

def first_crossing(x, level):
    for i, v in enumerate(x):
        if v > level:
            return i, v
    return -1, None


def find_pair_sum(x, target):
    n = len(x)
    i, j = 0, n - 1
    s = np.sort(x)
    while i < j:
        t = s[i] + s[j]
        if t == target:
            return s[i], s[j]
        if t < target:
            i += 1
        else:
            j -= 1
    return None


def skip_negatives_total(x, limit):
    total = 0.0
    count = 0
    i = 0
    while i < len(x):
        v = x[i]
        i += 1
        if v < 0:
            continue
        total += v
        count += 1
        if total > limit:
            break
    return total, count, i


def newton_sqrt(a, tol):
    x = a if a > 1 else 1.0
    for k in range(100):
        nx = 0.5 * (x + a / x)
        if abs(nx - x) < tol:
            return nx, k
        x = nx
    return x, 100


def test_early_exits():
    rng = np.random.default_rng(6)
    x = rng.random(20)
    check_calls(first_crossing, [(x, 0.9), (x, 2.0), (np.arange(5, dtype=np.int32), 2)])
    check_calls(find_pair_sum, [(np.array([1, 5, 3, 8, 2]), 10), (np.array([1, 2]), 7),
                                (np.array([0.5, 0.25, 1.0]), 1.25)])
    check_calls(skip_negatives_total, [(rng.normal(size=30), 3.0), (rng.normal(size=30), 100.0),
                                       (np.zeros(0), 1.0)])
    check_calls(newton_sqrt, [(2.0, 1e-12), (np.float64(81.0), 1e-6), (0.25, 1e-9)])


# ---- closures, generators, zip ----

def make_scaler(lo, hi):
    span = hi - lo

    def scale(x):
        return (x - lo) / span
    return scale


def minmax_columns(X):
    out = np.empty_like(X, dtype=np.float64)
    for j, col in enumerate(X.T):
        scale = make_scaler(col.min(), col.max())
        out[:, j] = scale(col)
    return out


def pairs_distance(a, b):
    return sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5


def chunks(x, size):
    for start in range(0, len(x), size):
        yield x[start:start + size]


def chunk_means(x):
    return np.array([c.mean() for c in chunks(x, 4)])


def counter_closure(x):
    count = 0

    def bump(v):
        nonlocal count
        if v > 0.5:
            count += 1
    for v in x:
        bump(v)
    return count


def test_closures_and_generators():
    rng = np.random.default_rng(7)
    check_calls(minmax_columns, [(rng.random((5, 3)),), (np.arange(12).reshape(4, 3),)])
    check_calls(pairs_distance, [(rng.random(5), rng.random(5)), (np.arange(3), np.ones(3))])
    check_calls(chunk_means, [(rng.random(10),), (rng.random(8),)])
    check_calls(counter_closure, [(rng.random(20),), (np.zeros(3),)])


# ---- classes holding arrays ----

class RunningStats:
    def __init__(self, n):
        self.count = 0
        self.mean = np.zeros(n)
        self.m2 = np.zeros(n)

    def push(self, x):
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (x - self.mean)

    def variance(self):
        return self.m2 / (self.count - 1)


def welford(X):
    stats = RunningStats(X.shape[1])
    for row in X:
        stats.push(row)
    return stats.mean, stats.variance(), stats.count


class RingBuffer:
    def __init__(self, size):
        self.data = np.zeros(size)
        self.pos = 0

    def add(self, v):
        self.data[self.pos % len(self.data)] = v
        self.pos += 1

    def mean(self):
        n = min(self.pos, len(self.data))
        return self.data[:n].mean()


def moving_means(x, size):
    ring = RingBuffer(size)
    out = []
    for v in x:
        ring.add(v)
        out.append(ring.mean())
    return np.array(out)


def test_classes_holding_arrays():
    rng = np.random.default_rng(8)
    check_calls(welford, [(rng.random((10, 3)),), (rng.random((4, 2)),)])
    check_calls(moving_means, [(rng.random(12), 4), (rng.random(3), 5)])


# ---- views, strides, in-place updates ----

def reverse_cumsum(x):
    return np.cumsum(x[::-1])[::-1]


def inplace_on_views(a):
    a[::2] += 1
    a[1::2] *= -1
    a[::-1][:2] = 0
    return a.sum()


def swap_halves(a):
    n = len(a) // 2
    a[:n], a[n:2 * n] = a[n:2 * n].copy(), a[:n].copy()
    return a


def upper_triangle_inplace(M):
    for i in range(M.shape[0]):
        M[i, :i] = 0
    M.T[0] += 1
    return M


def test_views():
    rng = np.random.default_rng(9)
    check_calls(reverse_cumsum, [(rng.random(6),), (np.arange(5, dtype=np.int8),)])
    check_calls(inplace_on_views, [(np.arange(10.0),), (np.arange(7),)])
    check_calls(swap_halves, [(np.arange(6),), (np.arange(7.0),)])
    check_calls(upper_triangle_inplace, [(rng.random((4, 4)),), (np.ones((3, 5)),)])


# ---- fancy indexing with repeats ----

def scatter_repeats(x, idx, v):
    out = x.copy()
    out[idx] = v          # the last write wins
    out2 = x.copy()
    out2[idx] += 1        # buffered: once per index
    out3 = x.copy()
    np.add.at(out3, idx, 1)
    return out, out2, out3


def gather_neighbours(x, idx):
    left = x[np.maximum(idx - 1, 0)]
    right = x[np.minimum(idx + 1, len(x) - 1)]
    return (left + right) / 2


def test_fancy_indexing():
    x = np.arange(8.0)
    check_calls(scatter_repeats, [(x, np.array([1, 1, 3, 1]), np.array([5.0, 6.0, 7.0, 8.0])),
                                  (x, np.array([0, -1, 7]), 2.0)])
    check_calls(gather_neighbours, [(x, np.array([0, 3, 7])), (x * 2, np.array([], dtype=int))])


# ---- 0-d, empty, NaN and inf ----

def zero_d_ops(a):
    b = np.asarray(a) * 2
    c = b + np.array(1.5)
    return b, c, c.item(), float(c), c.ndim


def empty_safe_mean(x):
    if x.size == 0:
        return np.nan
    return x.mean()


def nan_clean(x):
    bad = ~np.isfinite(x)
    y = np.where(bad, 0.0, x)
    return y, int(bad.sum()), np.nanmax(np.where(bad, np.nan, x)) if (~bad).any() else None


def inf_ratios(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    r[~np.isfinite(r)] = -1
    return r


def test_special_values():
    check_calls(zero_d_ops, [(np.float64(2.0),), (np.array(3),), (4,)])
    check_calls(empty_safe_mean, [(np.zeros(0),), (np.arange(4.0),)])
    x = np.array([1.0, np.nan, np.inf, -2.0, -np.inf])
    check_calls(nan_clean, [(x,), (np.array([np.nan, np.nan]),), (np.arange(3.0),)])
    check_calls(inf_ratios, [(np.array([1.0, 0.0, -1.0, 2.0]), np.array([0.0, 0.0, 0.0, 4.0])),])


# ---- integers: overflow, floor division, mixes ----

def int32_wraparound(x):
    y = x * np.int32(100000)
    return y, y.dtype == np.int32, (x.astype(np.int64) * 100000).sum()


def int_division_semantics(a, b):
    with np.errstate(divide="ignore"):
        q = a // b
        r = a % b
    return q, r, np.divmod(a, 3)


def uint8_arithmetic(img, delta):
    brighter = img + delta                  # wraps
    saturated = np.clip(img.astype(np.int16) + delta, 0, 255).astype(np.uint8)
    return brighter, saturated, img.mean(), img.sum(dtype=np.uint8)


def mixed_dtypes(i32, f32, flags):
    a = i32 + f32
    b = flags + i32
    c = f32 * flags
    d = i32 / i32.max()
    return a, b, c, d, (flags.sum(), flags.mean())


def test_integers():
    check_calls(int32_wraparound, [(np.arange(0, 50000, 7000, dtype=np.int32),)])
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 0], dtype=np.int64)
    check_calls(int_division_semantics, [(a, b), (a.astype(np.int32), np.int32(3))])
    img = np.array([[0, 100, 200], [250, 255, 3]], dtype=np.uint8)
    check_calls(uint8_arithmetic, [(img, 10), (img, np.uint8(200))])
    check_calls(mixed_dtypes, [(np.arange(4, dtype=np.int32), np.linspace(0, 1, 4, dtype=np.float32),
                                np.array([True, False, True, True]))])
