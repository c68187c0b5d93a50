"""The twelfth set's image filters, learners, graph algorithms, option pricers and physics:
filters written with loops (bilateral, Harris corners, a two-pass chamfer distance transform,
a flood fill with a stack, non-maximum suppression along a gradient), learners from scratch
(lasso by coordinate descent, a perceptron that stops early, k-medoids, a 2-D Gaussian mixture
by EM), graphs on arrays (Prim's tree, Edmonds-Karp, greedy colouring), finance (Longstaff-
Schwartz, a Heston path simulation, performance ratios in a dict) and physics (a double
pendulum by RK4, 1-D shallow water by Lax-Friedrichs), each compiled once and called with
several inputs, twice each, agreeing with NumPy on values, dtypes, shapes and Python types."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- image filters written with loops ----

def bilateral(img, radius=2, sigma_s=1.5, sigma_r=0.2):
    img = img.astype(np.float64)
    padded = np.pad(img, radius, mode="edge")
    num = np.zeros_like(img)
    den = np.zeros_like(img)
    h, w = img.shape
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            shifted = padded[radius + dy:radius + dy + h, radius + dx:radius + dx + w]
            weight = np.exp(-(dx * dx + dy * dy) / (2 * sigma_s ** 2)
                            - (shifted - img) ** 2 / (2 * sigma_r ** 2))
            num += weight * shifted
            den += weight
    return num / den

def harris(img, k=0.05, window=1):
    gy, gx = np.gradient(img.astype(np.float64))
    products = {"xx": gx * gx, "yy": gy * gy, "xy": gx * gy}
    sums = {}
    for key, p in products.items():
        padded = np.pad(p, window)
        acc = np.zeros_like(p)
        for dy in range(2 * window + 1):
            for dx in range(2 * window + 1):
                acc += padded[dy:dy + p.shape[0], dx:dx + p.shape[1]]
        sums[key] = acc
    det = sums["xx"] * sums["yy"] - sums["xy"] ** 2
    trace = sums["xx"] + sums["yy"]
    response = det - k * trace ** 2
    return response, np.argwhere(response > 0.1 * response.max())

def chamfer_distance(mask):
    h, w = mask.shape
    INF = h + w
    d = np.where(mask, 0, INF).astype(np.int32)
    for i in range(h):
        for j in range(w):
            if i > 0:
                d[i, j] = min(d[i, j], d[i - 1, j] + 1)
            if j > 0:
                d[i, j] = min(d[i, j], d[i, j - 1] + 1)
    for i in range(h - 1, -1, -1):
        for j in range(w - 1, -1, -1):
            if i < h - 1:
                d[i, j] = min(d[i, j], d[i + 1, j] + 1)
            if j < w - 1:
                d[i, j] = min(d[i, j], d[i, j + 1] + 1)
    return d

def flood_fill(grid, start, new_value):
    out = grid.copy()
    old = out[start]
    if old == new_value:
        return out, 0
    stack = [start]
    filled = 0
    while stack:
        i, j = stack.pop()
        if out[i, j] != old:
            continue
        out[i, j] = new_value
        filled += 1
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = i + di, j + dj
            if 0 <= a < out.shape[0] and 0 <= b < out.shape[1]:
                stack.append((a, b))
    return out, filled

def non_max_suppression(img):
    gy, gx = np.gradient(img.astype(np.float64))
    mag = np.hypot(gx, gy)
    angle = (np.rad2deg(np.arctan2(gy, gx)) + 180) % 180
    out = np.zeros_like(mag)
    for i in range(1, mag.shape[0] - 1):
        for j in range(1, mag.shape[1] - 1):
            a = angle[i, j]
            if a < 22.5 or a >= 157.5:
                q, r = mag[i, j + 1], mag[i, j - 1]
            elif a < 67.5:
                q, r = mag[i + 1, j - 1], mag[i - 1, j + 1]
            elif a < 112.5:
                q, r = mag[i + 1, j], mag[i - 1, j]
            else:
                q, r = mag[i - 1, j - 1], mag[i + 1, j + 1]
            if mag[i, j] >= q and mag[i, j] >= r:
                out[i, j] = mag[i, j]
    return out

def test_image_filters():
    rng = np.random.default_rng(21)
    img = rng.random((12, 15))
    check_calls(bilateral, [(img,), (img[:3, :2].astype(np.float32), 1, 1.0, 0.5),
                            (rng.integers(0, 9, (5, 5)),)])
    square = np.zeros((10, 10)); square[3:7, 3:7] = 1.0
    check_calls(harris, [(square,), (img, 0.04, 2)])
    check_calls(chamfer_distance, [(img > 0.9,), (np.eye(4, dtype=bool),),
                                   (np.zeros((1, 1), bool),)])
    blobs = (rng.random((8, 9)) > 0.4).astype(np.int64)
    check_calls(flood_fill, [(blobs, (0, 0), 7), (blobs, (4, 4), blobs[4, 4])])
    check_calls(non_max_suppression, [(img,), (square,), (np.ones((2, 2)),)])


# ---- learners from scratch ----

def soft_threshold(x, t):
    return np.sign(x) * max(abs(x) - t, 0.0)

def lasso_cd(X, y, lam, tol=1e-6, max_iter=200):
    n, p = X.shape
    w = np.zeros(p)
    col_sq = (X ** 2).sum(axis=0)
    r = y - X @ w
    for it in range(max_iter):
        biggest = 0.0
        for j in range(p):
            if col_sq[j] == 0:
                continue
            old = w[j]
            rho = X[:, j] @ r + col_sq[j] * old
            w[j] = soft_threshold(rho, lam * n) / col_sq[j]
            r += X[:, j] * (old - w[j])
            biggest = max(biggest, abs(w[j] - old))
        if biggest < tol:
            return w, it + 1
    return w, max_iter

def perceptron(X, y, epochs=50, lr=1.0):
    w = np.zeros(X.shape[1])
    b = 0.0
    mistakes_per_epoch = []
    for epoch in range(epochs):
        mistakes = 0
        for xi, yi in zip(X, y):
            if yi * (xi @ w + b) <= 0:
                w += lr * yi * xi
                b += lr * yi
                mistakes += 1
        mistakes_per_epoch.append(mistakes)
        if mistakes == 0:
            break
    return w, b, mistakes_per_epoch

def k_medoids(D, k, max_iter=20):
    medoids = np.arange(k)
    labels = np.argmin(D[:, medoids], axis=1)
    for _ in range(max_iter):
        new = medoids.copy()
        for c in range(k):
            members = np.flatnonzero(labels == c)
            if len(members) == 0:
                continue
            costs = D[np.ix_(members, members)].sum(axis=1)
            new[c] = members[np.argmin(costs)]
        if np.array_equal(new, medoids):
            break
        medoids = new
        labels = np.argmin(D[:, medoids], axis=1)
    return medoids, labels, D[np.arange(len(D)), medoids[labels]].sum()

def gmm_2d(X, means, iters=10):
    n, d = X.shape
    k = len(means)
    mu = means.astype(np.float64).copy()
    cov = np.array([np.eye(d) for _ in range(k)])
    pi = np.full(k, 1.0 / k)
    log_likelihoods = []
    for _ in range(iters):
        dens = np.empty((n, k))
        for c in range(k):
            diff = X - mu[c]
            inv = np.linalg.inv(cov[c])
            norm = 1.0 / (2 * np.pi * np.sqrt(np.linalg.det(cov[c])))
            dens[:, c] = pi[c] * norm * np.exp(-0.5 * np.einsum("ij,jk,ik->i", diff, inv, diff))
        total = dens.sum(axis=1, keepdims=True)
        log_likelihoods.append(np.log(total).sum())
        resp = dens / total
        nk = resp.sum(axis=0)
        pi = nk / n
        mu = (resp.T @ X) / nk[:, None]
        for c in range(k):
            diff = X - mu[c]
            cov[c] = (resp[:, c, None] * diff).T @ diff / nk[c] + 1e-6 * np.eye(d)
    return pi, mu, cov, log_likelihoods

def test_learners():
    rng = np.random.default_rng(22)
    X = rng.standard_normal((30, 5))
    y = X @ np.array([1.5, 0.0, -2.0, 0.0, 0.3]) + 0.1 * rng.standard_normal(30)
    X0 = X.copy(); X0[:, 1] = 0
    check_calls(lasso_cd, [(X, y, 0.1), (X0, y, 0.01, 1e-3, 3), (X[:, :1], y, 5.0)])
    labels = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    check_calls(perceptron, [(X, labels), (X[:4], labels[:4], 2, 0.1),
                             (X.astype(np.float32), labels, 3)])
    P = np.vstack([rng.standard_normal((10, 2)), rng.standard_normal((10, 2)) + 4])
    D = np.sqrt(((P[:, None] - P[None]) ** 2).sum(-1))
    check_calls(k_medoids, [(D, 2), (D[:5, :5], 3, 1), (D, 1)])
    check_calls(gmm_2d, [(P, np.array([[0.0, 0.0], [3.0, 3.0]])), (P, P[:3], 2)])


# ---- graphs on arrays ----

def prim_mst(W):
    n = len(W)
    in_tree = np.zeros(n, dtype=bool)
    best = np.full(n, np.inf)
    parent = np.full(n, -1)
    best[0] = 0.0
    total = 0.0
    for _ in range(n):
        u = int(np.argmin(np.where(in_tree, np.inf, best)))
        if np.isinf(best[u]):
            break
        in_tree[u] = True
        total += best[u]
        closer = ~in_tree & (W[u] > 0) & (W[u] < best)
        best[closer] = W[u][closer]
        parent[closer] = u
    return total, parent

def edmonds_karp(C, s, t):
    n = len(C)
    F = np.zeros_like(C)
    flow = 0
    while True:
        parent = np.full(n, -1)
        parent[s] = s
        queue = [s]
        while queue and parent[t] == -1:
            u = queue.pop(0)
            for v in np.flatnonzero((C[u] - F[u] > 0) & (parent == -1)):
                parent[v] = u
                queue.append(v)
        if parent[t] == -1:
            return flow, F
        bottleneck = None
        v = t
        while v != s:
            u = parent[v]
            slack = C[u, v] - F[u, v]
            bottleneck = slack if bottleneck is None else min(bottleneck, slack)
            v = u
        v = t
        while v != s:
            u = parent[v]
            F[u, v] += bottleneck
            F[v, u] -= bottleneck
            v = u
        flow += bottleneck

def greedy_colouring(adj):
    n = len(adj)
    colours = np.full(n, -1)
    order = np.argsort(-adj.sum(axis=1), kind="stable")
    for v in order:
        used = set(colours[adj[v] & (colours >= 0)].tolist())
        c = 0
        while c in used:
            c += 1
        colours[v] = c
    return colours, colours.max() + 1

def test_graphs():
    rng = np.random.default_rng(23)
    W = np.triu(rng.integers(0, 10, (7, 7)) * (rng.random((7, 7)) < 0.6), 1).astype(np.float64)
    W = W + W.T
    check_calls(prim_mst, [(W,), (np.zeros((3, 3)),), (W[:1, :1],)])
    C = np.array([[0, 16, 13, 0, 0, 0], [0, 0, 10, 12, 0, 0], [0, 4, 0, 0, 14, 0],
                  [0, 0, 9, 0, 0, 20], [0, 0, 0, 7, 0, 4], [0, 0, 0, 0, 0, 0]])
    check_calls(edmonds_karp, [(C, 0, 5), (C, 5, 0), (C.astype(np.float64), 1, 3)])
    adj = W > 0
    check_calls(greedy_colouring, [(adj,), (np.zeros((2, 2), bool),), (~np.eye(4, dtype=bool),)])


# ---- finance ----

def longstaff_schwartz(S0, K, r, sigma, T, steps, paths, seed=0, degree=2):
    rng = np.random.default_rng(seed)
    dt = T / steps
    z = rng.standard_normal((paths, steps))
    S = S0 * np.exp(np.cumsum((r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * z, axis=1))
    cash = np.maximum(K - S[:, -1], 0.0)
    for t in range(steps - 2, -1, -1):
        cash *= np.exp(-r * dt)
        itm = K - S[:, t] > 0
        if itm.sum() <= degree:
            continue
        coeffs = np.polyfit(S[itm, t], cash[itm], degree)
        continuation = np.polyval(coeffs, S[itm, t])
        exercise = K - S[itm, t]
        take = exercise > continuation
        cash[np.flatnonzero(itm)[take]] = exercise[take]
    return np.exp(-r * dt) * cash.mean()

def heston_paths(S0, v0, kappa, theta, xi, rho, r, T, steps, paths, seed=1):
    rng = np.random.default_rng(seed)
    dt = T / steps
    S = np.full(paths, float(S0))
    v = np.full(paths, float(v0))
    for _ in range(steps):
        z1 = rng.standard_normal(paths)
        z2 = rho * z1 + np.sqrt(1 - rho ** 2) * rng.standard_normal(paths)
        vp = np.maximum(v, 0.0)
        S = S * np.exp((r - 0.5 * vp) * dt + np.sqrt(vp * dt) * z1)
        v = v + kappa * (theta - vp) * dt + xi * np.sqrt(vp * dt) * z2
    return S, v

def performance(returns, rf=0.0, periods=252):
    excess = returns - rf / periods
    equity = np.cumprod(1 + returns)
    peak = np.maximum.accumulate(equity)
    drawdown = equity / peak - 1
    downside = excess[excess < 0]
    stats = {"sharpe": np.sqrt(periods) * excess.mean() / excess.std(ddof=1),
             "sortino": np.sqrt(periods) * excess.mean() / np.sqrt((downside ** 2).mean())
             if len(downside) else np.inf,
             "max_drawdown": drawdown.min()}
    years = len(returns) / periods
    stats["cagr"] = equity[-1] ** (1 / years) - 1
    drawn = stats["max_drawdown"] < 0
    stats["calmar"] = stats["cagr"] / abs(stats["max_drawdown"]) if drawn else np.nan
    return stats

def test_finance():
    check_calls(longstaff_schwartz, [(36.0, 40.0, 0.06, 0.2, 1.0, 20, 400),
                                     (40.0, 40.0, 0.06, 0.4, 2.0, 5, 50, 3, 3)])
    check_calls(heston_paths, [(100.0, 0.04, 2.0, 0.04, 0.3, -0.7, 0.01, 1.0, 50, 300),
                               (50, 0.1, 1.0, 0.05, 0.5, 0.0, 0.0, 0.5, 3, 2)])
    rng = np.random.default_rng(24)
    rets = 0.0005 + 0.01 * rng.standard_normal(500)
    check_calls(performance, [(rets,), (np.abs(rets), 0.02)])


def test_performance_ratios_of_float32_returns():
    # (NumPy 1.x promotes the float32 equity ** a Python float by value: float64; NEP 50 keeps
    # float32, as kiln does: deselected on NumPy 1, scripts/test_numpy1.sh)
    rets = 0.0005 + 0.01 * np.random.default_rng(24).standard_normal(30)
    check_calls(performance, [(rets.astype(np.float32),)], float32_inputs=True)


# ---- physics ----

def double_pendulum_rhs(y, g=9.81, l1=1.0, l2=1.0, m1=1.0, m2=1.0):
    t1, w1, t2, w2 = y
    delta = t2 - t1
    den1 = (m1 + m2) * l1 - m2 * l1 * np.cos(delta) ** 2
    dw1 = (m2 * l1 * w1 ** 2 * np.sin(delta) * np.cos(delta) + m2 * g * np.sin(t2) * np.cos(delta)
           + m2 * l2 * w2 ** 2 * np.sin(delta) - (m1 + m2) * g * np.sin(t1)) / den1
    den2 = (l2 / l1) * den1
    dw2 = (-m2 * l2 * w2 ** 2 * np.sin(delta) * np.cos(delta)
           + (m1 + m2) * g * np.sin(t1) * np.cos(delta)
           - (m1 + m2) * l1 * w1 ** 2 * np.sin(delta) - (m1 + m2) * g * np.sin(t2)) / den2
    return np.array([w1, dw1, w2, dw2])

def double_pendulum(y0, dt, steps):
    y = np.array(y0, dtype=np.float64)
    out = np.empty((steps + 1, 4))
    out[0] = y
    for n in range(steps):
        k1 = double_pendulum_rhs(y)
        k2 = double_pendulum_rhs(y + dt / 2 * k1)
        k3 = double_pendulum_rhs(y + dt / 2 * k2)
        k4 = double_pendulum_rhs(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out[n + 1] = y
    return out

def shallow_water(h, u, dt, dx, steps, g=9.81):
    h, hu = h.astype(np.float64), (h * u).astype(np.float64)
    for _ in range(steps):
        flux_h = hu
        flux_hu = hu ** 2 / h + 0.5 * g * h ** 2
        h_new, hu_new = h.copy(), hu.copy()
        h_new[1:-1] = 0.5 * (h[2:] + h[:-2]) - dt / (2 * dx) * (flux_h[2:] - flux_h[:-2])
        hu_new[1:-1] = 0.5 * (hu[2:] + hu[:-2]) - dt / (2 * dx) * (flux_hu[2:] - flux_hu[:-2])
        h_new[0], h_new[-1] = h_new[1], h_new[-2]
        hu_new[0], hu_new[-1] = -hu_new[1], -hu_new[-2]
        h, hu = h_new, hu_new
        if h.min() <= 0:
            break
    return h, hu

def test_physics():
    check_calls(double_pendulum, [([np.pi / 2, 0.0, np.pi / 2, 0.0], 0.01, 100),
                                  ((1.0, 0.5, -1.0, 0.0), 0.05, 1)])
    x = np.linspace(0, 1, 40)
    bump = 1 + 0.2 * np.exp(-100 * (x - 0.5) ** 2)
    check_calls(shallow_water, [(bump, np.zeros(40), 0.002, 1 / 39, 50),
                                (np.ones(4), np.ones(4), 0.01, 0.1, 3)])
