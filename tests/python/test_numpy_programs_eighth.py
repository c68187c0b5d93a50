"""An eighth set of NumPy programs as people write them (signal processing, statistics, graphs on
adjacency matrices, dynamic programming, geometry, classes holding arrays, optimisation loops,
parsers over bytes, functools and itertools, recursion, the scalar kinds a loop keeps), each
compiled once and called with several inputs, agreeing with NumPy on values, dtypes, shapes,
Python types and the arrays updated in place; where capture is the point, that the loops are
captured."""
import dataclasses
import functools
import itertools
import operator

import numpy as np

from test_numpy_programs_seventh import check_calls
from test_numpy_programs_seventh_loops import loop_kinds

# ---- signal processing ----

def fir(x, h):
    y = np.zeros(len(x))
    for n in range(len(x)):
        acc = 0.0
        for k in range(len(h)):
            if n - k < 0:
                break
            acc += h[k] * x[n - k]
        y[n] = acc
    return y


def iir_biquad(x, b, a):
    y = np.zeros_like(x, dtype=np.float64)
    x1 = x2 = y1 = y2 = 0.0
    for n, xn in enumerate(x):
        yn = b[0] * xn + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2
        x2, x1 = x1, xn
        y2, y1 = y1, yn
        y[n] = yn
    return y


def moving_average(x, w):
    out = np.empty(len(x) - w + 1)
    s = x[:w].sum()
    out[0] = s / w
    for i in range(w, len(x)):
        s += x[i] - x[i - w]
        out[i - w + 1] = s / w
    return out


def peaks(x, thresh):
    found = []
    for i in range(1, len(x) - 1):
        if x[i] > x[i - 1] and x[i] >= x[i + 1] and x[i] > thresh:
            found.append(i)
    return np.array(found, dtype=np.int64)


def ema(x, alpha):
    out = np.empty_like(x)
    s = x[0]
    for i, v in enumerate(x):
        s = alpha * v + (1 - alpha) * s
        out[i] = s
    return out


def test_signal_processing():
    rng = np.random.default_rng(30)
    check_calls(fir, [(rng.random(30), np.array([0.25, 0.5, 0.25])),
                      (rng.random(5), rng.random(7))])
    check_calls(iir_biquad, [(rng.random(40), np.array([0.2, 0.4, 0.2]),
                              np.array([1.0, -0.5, 0.1])),
                             (np.arange(5, dtype=np.float32), np.array([1.0, 0, 0]),
                              np.array([1.0, 0, 0]))])
    check_calls(moving_average, [(rng.random(20), 4), (np.arange(10.0), 10)])
    check_calls(peaks, [(np.sin(np.linspace(0, 20, 100)), 0.5), (np.zeros(5), 0.0)])
    check_calls(ema, [(rng.random(30), 0.3), (np.arange(5, dtype=np.float32), 0.5)])
    assert loop_kinds(iir_biquad, rng.random(40), np.ones(3), np.ones(3)) == ["loop"]
    assert loop_kinds(moving_average, rng.random(40), 5) == ["loop"]

# ---- statistics ----

def welford(x):
    n = 0
    mean = 0.0
    m2 = 0.0
    for v in x:
        n += 1
        delta = v - mean
        mean += delta / n
        m2 += delta * (v - mean)
    var = m2 / (n - 1) if n > 1 else float("nan")
    return mean, var, n


def zscores_masked(x):
    mask = np.isfinite(x)
    mu = x[mask].mean()
    sd = x[mask].std()
    z = np.full(x.shape, np.nan)
    z[mask] = (x[mask] - mu) / sd
    return z, mask.sum()


def quantile_by_sort(x, q):
    s = np.sort(x)
    pos = q * (len(s) - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    frac = pos - lo
    return s[lo] * (1 - frac) + s[hi] * frac


def bootstrap_means(x, idx):
    means = np.empty(idx.shape[0])
    for b in range(idx.shape[0]):
        means[b] = x[idx[b]].mean()
    return means.mean(), means.std()


def test_statistics():
    rng = np.random.default_rng(31)
    check_calls(welford, [(rng.random(50),), (np.array([3.0]),), (np.arange(10),)])
    check_calls(zscores_masked, [(np.array([1.0, np.nan, 3.0, np.inf, 5.0]),), (rng.random(10),)])
    check_calls(quantile_by_sort, [(rng.random(11), 0.3), (np.arange(5), 0.5),
                                   (np.array([2.0]), 0.9)])
    check_calls(bootstrap_means, [(rng.random(20), rng.integers(0, 20, (30, 20)))])
    assert "unrolled" not in loop_kinds(welford, rng.random(50))

# ---- graphs on adjacency matrices ----

def bfs_levels(adj, src):
    n = adj.shape[0]
    level = np.full(n, -1, dtype=np.int64)
    level[src] = 0
    frontier = [src]
    while frontier:
        nxt = []
        for u in frontier:
            for v in range(n):
                if adj[u, v] and level[v] < 0:
                    level[v] = level[u] + 1
                    nxt.append(v)
        frontier = nxt
    return level


def floyd_warshall(w):
    d = w.copy()
    n = d.shape[0]
    for k in range(n):
        d = np.minimum(d, d[:, k:k+1] + d[k:k+1, :])
    return d


def dijkstra(w, src):
    n = w.shape[0]
    dist = np.full(n, np.inf)
    dist[src] = 0.0
    done = np.zeros(n, dtype=bool)
    for _ in range(n):
        cand = np.where(done, np.inf, dist)
        u = int(np.argmin(cand))
        if not np.isfinite(cand[u]):
            break
        done[u] = True
        for v in range(n):
            if w[u, v] > 0 and dist[u] + w[u, v] < dist[v]:
                dist[v] = dist[u] + w[u, v]
    return dist


def test_graphs_on_adjacency_matrices():
    rng = np.random.default_rng(32)
    check_calls(bfs_levels, [(rng.random((8, 8)) < 0.3, 0), (np.eye(4, dtype=bool), 2)])
    W = rng.random((6, 6)) * 10
    W[rng.random((6, 6)) < 0.3] = np.inf
    np.fill_diagonal(W, 0)
    check_calls(floyd_warshall, [(W,), (np.zeros((1, 1)),)])
    check_calls(dijkstra, [(rng.random((6, 6)) * (rng.random((6, 6)) < 0.5), 0),
                           (np.zeros((3, 3)), 1)])

# ---- dynamic programming ----

def edit_distance(a, b):
    m, n = len(a), len(b)
    d = np.zeros((m + 1, n + 1), dtype=np.int32)
    d[:, 0] = np.arange(m + 1)
    d[0, :] = np.arange(n + 1)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost)
    return d[m, n]


def knapsack(weights, values, cap):
    best = np.zeros(cap + 1, dtype=np.int64)
    for w, v in zip(weights, values):
        for c in range(cap, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return best[cap]


def lis_length(x):
    n = len(x)
    L = np.ones(n, dtype=np.int64)
    for i in range(1, n):
        for j in range(i):
            if x[j] < x[i] and L[j] + 1 > L[i]:
                L[i] = L[j] + 1
    return L.max() if n else 0


def test_dynamic_programming():
    word = lambda s: np.frombuffer(s, np.uint8)
    check_calls(edit_distance, [(word(b"kitten"), word(b"sitting")), (word(b""), word(b"abc"))])
    check_calls(knapsack, [(np.array([1, 3, 4, 5]), np.array([1, 4, 5, 7]), 7),
                           (np.array([2]), np.array([3]), 1)])
    check_calls(lis_length, [(np.random.default_rng(33).random(15),), (np.arange(5),),
                             (np.array([], dtype=float),)])
    assert "unrolled" not in loop_kinds(knapsack, np.array([1, 3, 4, 5]), np.array([1, 4, 5, 7]), 7)

# ---- geometry ----

def polygon_area(xs, ys):
    area = 0.0
    n = len(xs)
    for i in range(n):
        j = (i + 1) % n
        area += xs[i] * ys[j] - xs[j] * ys[i]
    return abs(area) / 2


def point_in_polygon(px, py, xs, ys):
    inside = False
    n = len(xs)
    j = n - 1
    for i in range(n):
        crossing = (xs[j] - xs[i]) * (py - ys[i]) / (ys[j] - ys[i]) + xs[i]
        if (ys[i] > py) != (ys[j] > py) and px < crossing:
            inside = not inside
        j = i
    return inside


def convex_hull(pts):
    order = np.lexsort((pts[:, 1], pts[:, 0]))
    p = pts[order]
    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    lower = []
    for q in p:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], q) <= 0:
            lower.pop()
        lower.append(q)
    upper = []
    for q in p[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], q) <= 0:
            upper.pop()
        upper.append(q)
    return np.array(lower[:-1] + upper[:-1])


def test_geometry():
    rng = np.random.default_rng(34)
    square = np.array([0.0, 1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0, 1.0])
    check_calls(polygon_area, [square, (rng.random(7), rng.random(7))])
    check_calls(point_in_polygon, [(0.5, 0.5) + square, (1.5, 0.5) + square,
                                   (np.float64(0.2), 0.9) + square])
    check_calls(convex_hull, [(rng.random((8, 2)),),
                              (np.array([[0, 0], [1, 1], [2, 2], [0, 2], [2, 0]], float),)])
    assert loop_kinds(polygon_area, rng.random(50), rng.random(50)) == ["loop"]

# ---- classes holding arrays ----

@dataclasses.dataclass
class Particles:
    pos: np.ndarray
    vel: np.ndarray
    mass: float = 1.0

    @property
    def kinetic(self):
        return 0.5 * self.mass * (self.vel ** 2).sum()

    def step(self, dt):
        self.pos = self.pos + dt * self.vel


def simulate(pos, vel, dt, n):
    p = Particles(pos.copy(), vel.copy(), 2.0)
    for _ in range(n):
        p.step(dt)
        p.vel *= 0.99
    return p.pos, p.kinetic


class Vec:
    def __init__(self, a):
        self.a = np.asarray(a, dtype=float)
    def __add__(self, o):
        return Vec(self.a + o.a)
    def __mul__(self, s):
        return Vec(self.a * s)
    __rmul__ = __mul__
    def __getitem__(self, i):
        return self.a[i]
    def __len__(self):
        return len(self.a)
    def norm(self):
        return float(np.sqrt((self.a ** 2).sum()))


def vec_program(x, y):
    v = Vec(x) + 2 * Vec(y)
    total = 0.0
    for i in range(len(v)):
        total += v[i]
    return v.a, total, v.norm()


def test_classes_holding_arrays():
    rng = np.random.default_rng(35)
    check_calls(simulate, [(rng.random(3), rng.random(3), 0.1, 10)])
    check_calls(vec_program, [(rng.random(4), rng.random(4)), ([1, 2], [3, 4])])

# ---- classes with item access ----

class Ring:
    def __init__(self, n):
        self.buf = np.zeros(n)
        self.pos = 0
    def push(self, v):
        self.buf[self.pos % len(self.buf)] = v
        self.pos += 1
    def __getitem__(self, k):
        return self.buf[(self.pos - 1 - k) % len(self.buf)]
    @property
    def mean(self):
        return self.buf[:min(self.pos, len(self.buf))].mean()


def ring_filter(x, n):
    r = Ring(n)
    out = np.empty_like(x)
    for i in range(len(x)):
        r.push(x[i])
        out[i] = r.mean - r[0] * 0.1
    return out


class Grid:
    def __init__(self, a):
        self.a = a
    def __getitem__(self, ij):
        i, j = ij
        return self.a[i % self.a.shape[0], j % self.a.shape[1]]
    def __setitem__(self, ij, v):
        i, j = ij
        self.a[i % self.a.shape[0], j % self.a.shape[1]] = v
    def __iadd__(self, other):
        self.a += other
        return self


def grid_ops(a):
    g = Grid(a)
    for i in range(a.shape[0]):
        g[i, i + 1] = g[i - 1, i] + 1.0
    g += 0.5
    return g.a


def test_classes_with_item_access():
    rng = np.random.default_rng(36)
    check_calls(ring_filter, [(rng.random(20), 4), (rng.random(3), 5)])
    check_calls(grid_ops, [(rng.random((4, 5)),)])

# ---- optimisation loops ----

def gradient_descent(A, b, lr, tol, max_iter):
    x = np.zeros(A.shape[1])
    for it in range(max_iter):
        g = A.T @ (A @ x - b)
        if np.linalg.norm(g) < tol:
            break
        x -= lr * g
    return x, it


def newton_sqrt(a, tol=1e-12):
    x = a if a > 1 else 1.0
    while abs(x * x - a) > tol * a:
        x = 0.5 * (x + a / x)
    return x


def bisection(c, lo, hi, tol):
    f = lambda t: t ** 3 - c
    n = 0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if f(lo) * f(mid) <= 0:
            hi = mid
        else:
            lo = mid
        n += 1
    return 0.5 * (lo + hi), n


def test_optimisation_loops():
    rng = np.random.default_rng(37)
    A = rng.random((6, 3))
    check_calls(gradient_descent, [(A, rng.random(6), 0.1, 1e-6, 500),
                                   (A, rng.random(6), 0.1, 10.0, 50)])
    check_calls(newton_sqrt, [(2.0,), (np.float64(0.25),), (100,)])
    check_calls(bisection, [(2.0, 0.0, 2.0, 1e-9), (np.float64(27.0), 0.0, 5.0, 1e-3)])
    assert "unrolled" not in loop_kinds(gradient_descent, A, rng.random(6), 0.1, 1e-6, 500)

# ---- parsers over bytes ----

def parse_ints(buf):
    vals = []
    cur = 0
    have = False
    for b in buf:
        if 48 <= b <= 57:
            cur = cur * 10 + int(b - 48)
            have = True
        else:
            if have:
                vals.append(cur)
            cur = 0
            have = False
    if have:
        vals.append(cur)
    return np.array(vals, dtype=np.int64)


def count_lines(buf):
    lines = 0
    longest = 0
    cur = 0
    for b in buf:
        if b == 10:
            lines += 1
            longest = max(longest, cur)
            cur = 0
        else:
            cur += 1
    return lines, longest


def test_parsers_over_bytes():
    text = lambda s: np.frombuffer(s, np.uint8).copy()
    check_calls(parse_ints, [(text(b"12 345,6\n78x9"),), (text(b"abc"),)])
    check_calls(count_lines, [(text(b"ab\ncde\n\nf"),), (text(b""),)])
    assert loop_kinds(count_lines, text(b"ab\ncde\n\nf")).count("loop") == 1

# ---- state machines ----

def state_machine(buf):
    # count quoted strings and words outside quotes
    in_q = False
    words = 0
    quoted = 0
    prev_space = True
    for c in buf:
        if c == 34:
            in_q = not in_q
            if in_q:
                quoted += 1
        elif not in_q:
            if c == 32:
                prev_space = True
            elif prev_space:
                words += 1
                prev_space = False
    return words, quoted, in_q


def test_state_machines():
    check_calls(state_machine, [(np.frombuffer(b'ab "cd ef" g  h"i', np.uint8).copy(),),
                                (np.frombuffer(b'"', np.uint8).copy(),)])

# ---- functools and itertools ----

def reduce_product(xs):
    return functools.reduce(operator.mul, xs, np.ones_like(xs[0]))


def partial_scale(x, s):
    f = functools.partial(np.multiply, s)
    g = functools.partial(np.clip, a_min=0.0, a_max=1.0)
    return g(f(x))


def pairwise_min_dist(P):
    best = np.inf
    for i, j in itertools.combinations(range(len(P)), 2):
        d = np.sqrt(((P[i] - P[j]) ** 2).sum())
        best = min(best, d)
    return best


def grid_eval(xs, ys):
    out = np.empty((len(xs), len(ys)))
    for (i, x), (j, y) in itertools.product(enumerate(xs), enumerate(ys)):
        out[i, j] = x * y + 1
    return out


def test_functools_and_itertools():
    rng = np.random.default_rng(38)
    check_calls(reduce_product, [(rng.random((3, 4)),),
                                 (np.arange(1, 5, dtype=np.int32).reshape(2, 2),)])
    check_calls(partial_scale, [(rng.random(5), 1.5),
                                (np.arange(4, dtype=np.float32), np.float32(0.3))])
    check_calls(pairwise_min_dist, [(rng.random((6, 2)),)])
    check_calls(grid_eval, [(rng.random(3), rng.random(4))])

# ---- recursion, generators, dicts ----

def fib_rec(n, memo=None):
    if memo is None:
        memo = {}
    if n < 2:
        return np.int64(n)
    if n not in memo:
        memo[n] = fib_rec(n - 1, memo) + fib_rec(n - 2, memo)
    return memo[n]


def chunks(x, k):
    for i in range(0, len(x), k):
        yield x[i:i + k]


def chunk_sums(x, k):
    return np.array([c.sum() for c in chunks(x, k)])


def stats_dict(groups, vals):
    d = {}
    for g in np.unique(groups):
        sel = vals[groups == g]
        d[int(g)] = {"mean": sel.mean(), "n": sel.size}
    return [(k, v["mean"], v["n"]) for k, v in sorted(d.items())]


def test_recursion_generators_dicts():
    rng = np.random.default_rng(39)
    check_calls(fib_rec, [(10,), (1,)])
    check_calls(chunk_sums, [(rng.random(10), 3), (np.arange(6), 2)])
    check_calls(stats_dict, [(np.array([1, 2, 1, 3, 2]), rng.random(5))])
