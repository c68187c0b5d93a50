"""A thirteenth set of NumPy programs as people write them: robust statistics by iteration
(Huber and Tukey M-estimators, quantile regression by IRLS), kernel density by hand, Gaussian
naive Bayes, a decision stump, sequence code on integer arrays (banded Levenshtein), geometry
(gift-wrapping hull, shoelace area, closest pair, polygon diameter), signal loops
(autocorrelation, linear resampling, zero crossings with hysteresis), simulations (SEIR by Euler,
absorbing random walks, a single-server queue by Lindley's recursion) and numerics (Newton on a
2x2 system with its Jacobian, Horner evaluation). Each is compiled once and called with several
inputs, twice each, agreeing with NumPy on values, dtypes, shapes and updated arguments."""
import numpy as np
import pytest

import kiln
from test_numpy_programs_eleventh import check_calls


# ---- robust statistics ----

def huber_location(x, k=1.345, tol=1e-8, maxit=50):
    mu = np.median(x)
    scale = np.median(np.abs(x - mu)) / 0.6745
    if scale == 0:
        return mu, 0
    for it in range(maxit):
        r = (x - mu) / scale
        w = np.where(np.abs(r) <= k, 1.0, k / np.maximum(np.abs(r), 1e-12))
        new_mu = np.sum(w * x) / np.sum(w)
        if abs(new_mu - mu) < tol * scale:
            return new_mu, it + 1
        mu = new_mu
    return mu, maxit

def tukey_biweight(x, c=4.685, maxit=30):
    mu = np.median(x)
    mad = np.median(np.abs(x - mu))
    if mad == 0:
        return mu
    for _ in range(maxit):
        u = (x - mu) / (c * mad)
        w = (1 - u ** 2) ** 2
        w[np.abs(u) >= 1] = 0.0
        total = w.sum()
        if total == 0:
            break
        step = np.sum(w * (x - mu)) / total
        mu = mu + step
        if abs(step) < 1e-10:
            break
    return mu

def quantile_regression(X, y, tau=0.5, iters=40, eps=1e-6):
    n = X.shape[0]
    A = np.column_stack([np.ones(n), X])
    beta = np.linalg.lstsq(A, y, rcond=None)[0]
    for _ in range(iters):
        r = y - A @ beta
        w = np.where(r >= 0, tau, 1 - tau) / np.maximum(np.abs(r), eps)
        Aw = A * w[:, None]
        new_beta = np.linalg.solve(A.T @ Aw, Aw.T @ y)
        if np.max(np.abs(new_beta - beta)) < 1e-9:
            beta = new_beta
            break
        beta = new_beta
    return beta

def kde(samples, grid, bandwidth=None):
    n = samples.size
    if bandwidth is None:
        bandwidth = 1.06 * samples.std() * n ** (-0.2)
    out = np.zeros(grid.shape)
    for s in samples:
        out += np.exp(-0.5 * ((grid - s) / bandwidth) ** 2)
    return out / (n * bandwidth * np.sqrt(2 * np.pi))


def test_robust_statistics():
    rng = np.random.default_rng(13)
    clean = rng.normal(2.0, 1.0, 60)
    dirty = clean.copy()
    dirty[:6] = 40.0
    check_calls(huber_location, [(clean,), (dirty,), (np.ones(5),), (dirty.astype(np.float32),)])
    check_calls(tukey_biweight, [(clean,), (dirty,), (np.array([3.0]),), (np.arange(7.0),)])
    X = rng.normal(size=(50, 2))
    y = X @ np.array([1.0, -2.0]) + rng.standard_t(2, 50)
    check_calls(quantile_regression, [(X, y), (X, y, 0.9), (X[:5], y[:5], 0.25)])
    grid = np.linspace(-3, 3, 41)
    check_calls(kde, [(clean, grid), (clean[:1], grid, 0.5), (clean.astype(np.float32), grid),
                      (clean, grid[:0], 0.3)], float32_inputs=True)


# ---- classifiers from scratch ----

def gaussian_nb_fit_predict(X, y, Xtest, n_classes, var_smoothing=1e-9):
    means, variances, priors = [], [], []
    eps = var_smoothing * X.var(axis=0).max()
    for c in range(n_classes):
        Xc = X[y == c]
        means.append(Xc.mean(axis=0))
        variances.append(Xc.var(axis=0) + eps)
        priors.append(len(Xc) / len(X))
    mu, var = np.array(means), np.array(variances)
    log_prior = np.log(np.array(priors))
    ll = -0.5 * np.sum(np.log(2 * np.pi * var)[None] + (Xtest[:, None, :] - mu[None]) ** 2
                       / var[None], axis=2)
    joint = ll + log_prior
    return np.argmax(joint, axis=1), joint

def decision_stump(X, y, w=None):
    n, d = X.shape
    if w is None:
        w = np.full(n, 1.0 / n)
    best = (np.inf, 0, 0.0, 1)
    for j in range(d):
        for thr in np.unique(X[:, j]):
            for polarity in (1, -1):
                pred = np.where(polarity * (X[:, j] - thr) >= 0, 1, -1)
                err = w[pred != y].sum()
                if err < best[0]:
                    best = (err, j, thr, polarity)
    return best


def test_classifiers():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 1, (20, 3)), rng.normal(2, 1, (20, 3))])
    y = np.repeat(np.arange(2), 20)
    check_calls(gaussian_nb_fit_predict, [(X, y, X[:7], 2), (X, y, X[:0], 2),
                                          (X.astype(np.float32), y, X[:3].astype(np.float32), 2)],
                float32_inputs=True)
    Xs = rng.normal(size=(12, 2))
    ys = np.where(Xs[:, 0] > 0.1, 1, -1)
    check_calls(decision_stump, [(Xs, ys), (Xs, ys, np.linspace(0.1, 1, 12)),
                                 (np.round(Xs[:4]), ys[:4])])


# ---- sequences on integer arrays ----

def banded_levenshtein(a, b, band=3):
    n, m = len(a), len(b)
    if abs(n - m) > band:
        return -1
    big = n + m + 1
    prev = np.full(m + 1, big, dtype=np.int64)
    prev[:min(m, band) + 1] = np.arange(min(m, band) + 1)
    for i in range(1, n + 1):
        cur = np.full(m + 1, big, dtype=np.int64)
        lo, hi = max(1, i - band), min(m, i + band)
        if i <= band:
            cur[0] = i
        for j in range(lo, hi + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        prev = cur
    return int(prev[m])


def test_sequences():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 4, 9)
    b = a.copy()
    b[[1, 5]] = 3
    check_calls(banded_levenshtein, [(a, b), (a, b[:7]), (a, a[:2]), (a[:1], b[:1], 1)])


# ---- geometry ----

def gift_wrap_hull(points):
    n = len(points)
    if n < 3:
        return np.arange(n)
    start = int(np.argmin(points[:, 0]))
    hull = []
    p = start
    while True:
        hull.append(p)
        q = (p + 1) % n
        for r in range(n):
            cross = ((points[q, 0] - points[p, 0]) * (points[r, 1] - points[p, 1])
                     - (points[q, 1] - points[p, 1]) * (points[r, 0] - points[p, 0]))
            if cross < 0:
                q = r
        p = q
        if p == start or len(hull) > n:
            break
    return np.array(hull)

def shoelace_area(poly):
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))

def closest_pair_bruteforce(points):
    n = len(points)
    best, pair = np.inf, (-1, -1)
    for i in range(n - 1):
        d = np.sum((points[i + 1:] - points[i]) ** 2, axis=1)
        j = int(np.argmin(d))
        if d[j] < best:
            best, pair = d[j], (i, i + 1 + j)
    return np.sqrt(best), pair

def polygon_diameter(points):
    diff = points[:, None, :] - points[None, :, :]
    d2 = np.einsum('ijk,ijk->ij', diff, diff)
    i, j = np.unravel_index(np.argmax(d2), d2.shape)
    return np.sqrt(d2[i, j]), i, j


def test_geometry():
    rng = np.random.default_rng(8)
    pts = rng.uniform(-1, 1, (15, 2))
    square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]])
    check_calls(gift_wrap_hull, [(pts,), (square,), (pts[:2],), (pts[:3],)])
    check_calls(shoelace_area, [(square,), (pts[gift_wrap_hull(pts)],),
                                (np.arange(6).reshape(3, 2),)])
    check_calls(closest_pair_bruteforce, [(pts,), (pts[:2],), (pts[:1],), (square,)])
    check_calls(polygon_diameter, [(pts,), (square,), (pts[:1],)])


def test_float32_shoelace_area():
    """0.5 * abs(np.dot(x32, ...)): a float32 scalar beside a Python float (float64 on NumPy 1,
    whose scalars promote by value: a known difference, deselected there)."""
    square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]], np.float32)
    check_calls(shoelace_area, [(square,), (square[:3],)])


def unravel_cells(flat, shape, order="C"):
    return np.unravel_index(flat, shape, order=order)


def test_unravel_index_is_traced():
    """np.unravel_index was a graph break (polygon_diameter ran as two graphs); it is traced,
    an index outside the shape raising NumPy's ValueError when the graph runs."""
    compiled = kiln.compile(polygon_diameter, fullgraph=True)
    points = np.random.default_rng(3).uniform(size=(9, 2))
    assert np.allclose(compiled(points)[0], polygon_diameter(points)[0])
    cells = np.array([[1, 5], [7, 11]])
    check_calls(unravel_cells, [(cells, (3, 4)), (cells, (3, 4), "F"), (cells[0, :1], 12),
                                (np.int32(7), (2, 3, 2)), (cells[:0], (3, 4))])
    with pytest.raises(TypeError, match="only int indices permitted"):
        kiln.compile(unravel_cells)(np.arange(3.0), (3,))
    strict = kiln.compile(unravel_cells, fullgraph=True)
    for flat, shape in [(np.array([12]), (3, 4)), (np.array([0, -1]), (3, 4)),
                        (np.array([0]), (0, 4))]:
        with pytest.raises(ValueError, match=f"index {flat[-1]} is out of bounds for array with "
                                             f"size {np.prod(shape)}"):
            strict(flat, shape)


# ---- signal loops ----

def autocorrelation(x, max_lag=None):
    n = len(x)
    if max_lag is None:
        max_lag = n - 1
    x = x - x.mean()
    denom = np.dot(x, x)
    out = np.empty(max_lag + 1)
    for k in range(max_lag + 1):
        out[k] = np.dot(x[:n - k], x[k:]) / denom if denom > 0 else 0.0
    return out

def linear_resample(x, factor):
    n_out = int(len(x) * factor)
    pos = np.arange(n_out) / factor
    i0 = np.floor(pos).astype(np.int64)
    i1 = np.minimum(i0 + 1, len(x) - 1)
    frac = pos - i0
    return x[i0] * (1 - frac) + x[i1] * frac

def hysteresis_crossings(x, high, low):
    state = x[0] > high if len(x) else False
    events = np.zeros(len(x), dtype=np.int8)
    count = 0
    for i in range(1, len(x)):
        if not state and x[i] > high:
            state = True
            events[i] = 1
            count += 1
        elif state and x[i] < low:
            state = False
            events[i] = -1
    return events, count


def test_signal_loops():
    t = np.linspace(0, 1, 80)
    x = np.sin(2 * np.pi * 5 * t) + 0.1 * np.cos(2 * np.pi * 23 * t)
    check_calls(autocorrelation, [(x,), (x, 10), (np.ones(4),), (x.astype(np.float32), 5),
                                  (np.arange(6), 2)], float32_inputs=True)
    check_calls(linear_resample, [(x, 1.5), (x, 0.5), (x[:1], 2.0), (np.arange(5), 2.0)])
    check_calls(hysteresis_crossings, [(x, 0.5, -0.5), (x[:1], 0.0, 0.0), (x[:0], 0.0, 0.0),
                                       (x.astype(np.float32), 0.2, 0.1)])


# ---- simulations ----

def seir_euler(beta, sigma, gamma, s0, e0, i0, days, dt=0.1):
    steps = int(days / dt)
    state = np.array([s0, e0, i0, 1.0 - s0 - e0 - i0])
    history = np.empty((steps + 1, 4))
    history[0] = state
    for k in range(steps):
        s, e, i, r = state
        new_inf = beta * s * i
        state = state + dt * np.array([-new_inf, new_inf - sigma * e, sigma * e - gamma * i,
                                       gamma * i])
        history[k + 1] = state
    peak = int(np.argmax(history[:, 2]))
    return history, peak * dt

def absorbing_walks(n_walkers, start, lower, upper, seed, max_steps=1000):
    rng = np.random.default_rng(seed)
    pos = np.full(n_walkers, start)
    alive = np.ones(n_walkers, dtype=bool)
    hit_upper = np.zeros(n_walkers, dtype=bool)
    steps = np.zeros(n_walkers, dtype=np.int64)
    for _ in range(max_steps):
        if not alive.any():
            break
        move = rng.choice(np.array([-1, 1]), size=n_walkers)
        pos[alive] += move[alive]
        steps[alive] += 1
        hit_upper |= alive & (pos >= upper)
        alive &= (pos > lower) & (pos < upper)
    return hit_upper.mean(), steps.mean(), alive.sum()

def lindley_queue(arrivals, services):
    n = len(arrivals)
    wait = np.zeros(n)
    for k in range(1, n):
        wait[k] = max(0.0, wait[k - 1] + services[k - 1] - (arrivals[k] - arrivals[k - 1]))
    return wait.mean() if n else 0.0, wait


def test_simulations():
    check_calls(seir_euler, [(0.5, 0.2, 0.1, 0.99, 0.005, 0.005, 20.0), (0.3, 0.3, 0.2, 0.9, 0.05,
                                                                          0.05, 1.0, 0.5)])
    check_calls(absorbing_walks, [(50, 3, 0, 8, 1), (10, 1, 0, 2, 7, 30), (5, 5, 0, 6, 3, 0)])
    rng = np.random.default_rng(4)
    arr = np.cumsum(rng.exponential(1.0, 40))
    svc = rng.exponential(0.8, 40)
    check_calls(lindley_queue, [(arr, svc), (arr[:1], svc[:1]), (arr[:0], svc[:0])])


# ---- numerics ----

def newton_system(x0, a, tol=1e-12, maxit=30):
    x = np.array(x0, dtype=np.float64)
    for it in range(maxit):
        F = np.array([x[0] ** 2 + x[1] ** 2 - a, x[0] - x[1] ** 3])
        J = np.array([[2 * x[0], 2 * x[1]], [1.0, -3 * x[1] ** 2]])
        dx = np.linalg.solve(J, -F)
        x += dx
        if np.linalg.norm(dx) < tol:
            return x, it + 1, True
    return x, maxit, False

def horner(coeffs, x):
    result = np.zeros_like(x, dtype=np.result_type(coeffs, x))
    for c in coeffs:
        result = result * x + c
    return result


def test_numerics():
    check_calls(newton_system, [([1.0, 1.0], 2.0), ([2.0, 0.5], 5.0), ((1.0, 1.0), 2.0, 1e-3, 2)])
    xs = np.linspace(-2, 2, 9)
    check_calls(horner, [(np.array([1.0, -3.0, 2.0]), xs), (np.array([2, 1]), np.arange(5)),
                         (np.array([1.5]), xs.astype(np.float32)), (np.array([1.0, 2.0]), xs[:0])])
