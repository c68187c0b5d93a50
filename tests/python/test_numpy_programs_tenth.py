"""A tenth set of NumPy programs as people write them, in domains the earlier sets did not cover:
dynamic programming over arrays (LCS, Viterbi, dynamic time warping, Needleman-Wunsch, the longest
increasing subsequence, coin change, Kadane, rod cutting, grid paths), graph algorithms on
adjacency matrices, edge lists and CSR arrays (Bellman-Ford, BFS with a queue array, PageRank to
convergence, union-find with path compression, Dijkstra with a visited mask, transitive closure,
topological order) and finance (binomial trees, Monte Carlo paths from a seeded default_rng, GARCH
and EWMA filters, drawdowns, IRR by bisection, implied volatility by Newton). Each is compiled once
and called with several inputs, agreeing with NumPy on values, dtypes, shapes, Python types and
the arrays updated in place."""
import math

import numpy as np

from test_numpy_programs_seventh import check_calls


# ---- dynamic programming ----

def lcs_length(a, b):
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = max(L[i - 1, j], L[i, j - 1])
    return L[n, m]

def viterbi(obs, start_p, trans_p, emit_p):
    T = len(obs); N = trans_p.shape[0]
    V = np.zeros((T, N)); back = np.zeros((T, N), dtype=np.int64)
    V[0] = np.log(start_p) + np.log(emit_p[:, obs[0]])
    for t in range(1, T):
        scores = V[t - 1][:, None] + np.log(trans_p)
        back[t] = np.argmax(scores, axis=0)
        V[t] = np.max(scores, axis=0) + np.log(emit_p[:, obs[t]])
    path = np.zeros(T, dtype=np.int64)
    path[-1] = np.argmax(V[-1])
    for t in range(T - 2, -1, -1):
        path[t] = back[t + 1, path[t + 1]]
    return path, V[-1].max()

def dtw(x, y):
    n, m = len(x), len(y)
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = abs(x[i - 1] - y[j - 1])
            D[i, j] = cost + min(D[i - 1, j], D[i, j - 1], D[i - 1, j - 1])
    return D[n, m]

def needleman_wunsch(a, b, match=1, mismatch=-1, gap=-2):
    n, m = len(a), len(b)
    F = np.zeros((n + 1, m + 1))
    F[:, 0] = gap * np.arange(n + 1)
    F[0, :] = gap * np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = match if a[i - 1] == b[j - 1] else mismatch
            F[i, j] = max(F[i - 1, j - 1] + s, F[i - 1, j] + gap, F[i, j - 1] + gap)
    return F[n, m], F

def lis_length(x):
    n = len(x)
    d = np.ones(n, dtype=np.int64)
    for i in range(1, n):
        for j in range(i):
            if x[j] < x[i] and d[j] + 1 > d[i]:
                d[i] = d[j] + 1
    return int(d.max()) if n else 0

def coin_change(coins, amount):
    ways = np.zeros(amount + 1, dtype=np.int64)
    ways[0] = 1
    for c in coins:
        for a in range(c, amount + 1):
            ways[a] += ways[a - c]
    return ways[amount]

def max_subarray(x):
    best = x[0]; cur = x[0]
    for v in x[1:]:
        cur = max(v, cur + v)
        best = max(best, cur)
    return best

def rod_cutting(prices, n):
    r = np.zeros(n + 1)
    for j in range(1, n + 1):
        q = -np.inf
        for i in range(1, j + 1):
            q = max(q, prices[i - 1] + r[j - i])
        r[j] = q
    return r

def min_path_sum(grid):
    g = grid.astype(np.float64)
    n, m = g.shape
    for i in range(n):
        for j in range(m):
            if i == 0 and j == 0:
                continue
            elif i == 0:
                g[i, j] += g[i, j - 1]
            elif j == 0:
                g[i, j] += g[i - 1, j]
            else:
                g[i, j] += min(g[i - 1, j], g[i, j - 1])
    return g[-1, -1]

def test_dynamic_programming():
    rng = np.random.default_rng(19)
    s = lambda n: rng.integers(0, 4, n)
    A = rng.random((3, 3)) + 0.1
    A /= A.sum(1, keepdims=True)
    B = rng.random((3, 4)) + 0.1
    B /= B.sum(1, keepdims=True)
    check_calls(lcs_length, [(s(12), s(10)), (s(40), s(30)), (s(1), s(5))])
    check_calls(viterbi, [(rng.integers(0, 4, 10), np.array([.5, .3, .2]), A, B), (rng.integers(0, 4, 200), np.array([.5, .3, .2]), A, B)])
    check_calls(dtw, [(rng.random(8), rng.random(9)), (rng.random(60), rng.random(50))])
    check_calls(needleman_wunsch, [(s(8), s(7)), (s(50), s(45))])
    check_calls(lis_length, [(rng.random(10),), (rng.random(200),)])
    check_calls(coin_change, [(np.array([1, 2, 5]), 11), (np.array([1, 5, 10, 25]), 300)])
    check_calls(max_subarray, [(rng.standard_normal(10),), (rng.standard_normal(1000),)])
    check_calls(rod_cutting, [(np.array([1., 5, 8, 9, 10, 17, 17, 20]), 8), (rng.random(60) * 10, 60)])
    check_calls(min_path_sum, [(rng.integers(0, 9, (4, 5)),), (rng.integers(0, 9, (40, 30)),)])


# ---- graph algorithms ----

def bellman_ford(n, edges_u, edges_v, edges_w, src):
    dist = np.full(n, np.inf)
    dist[src] = 0.0
    for _ in range(n - 1):
        changed = False
        for k in range(len(edges_u)):
            u, v, w = edges_u[k], edges_v[k], edges_w[k]
            if dist[u] + w < dist[v]:
                dist[v] = dist[u] + w
                changed = True
        if not changed:
            break
    return dist

def bfs_queue(adj, src):
    n = adj.shape[0]
    dist = np.full(n, -1, dtype=np.int64)
    queue = np.zeros(n, dtype=np.int64)
    head, tail = 0, 0
    queue[tail] = src; tail += 1
    dist[src] = 0
    while head < tail:
        u = queue[head]; head += 1
        for v in range(n):
            if adj[u, v] and dist[v] < 0:
                dist[v] = dist[u] + 1
                queue[tail] = v; tail += 1
    return dist, queue[:tail]

def pagerank(A, d=0.85, tol=1e-10, max_iter=200):
    n = A.shape[0]
    out_deg = A.sum(axis=1)
    out_deg[out_deg == 0] = 1
    M = (A / out_deg[:, None]).T
    r = np.full(n, 1.0 / n)
    it = 0
    while True:
        r_new = (1 - d) / n + d * M @ r
        err = np.abs(r_new - r).sum()
        r = r_new
        it += 1
        if err < tol or it >= max_iter:
            break
    return r, it

def union_find_components(n, eu, ev):
    parent = np.arange(n)
    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            nxt = parent[x]
            parent[x] = root
            x = nxt
        return root
    for k in range(len(eu)):
        a, b = find(eu[k]), find(ev[k])
        if a != b:
            parent[a] = b
    roots = np.array([find(i) for i in range(n)])
    return len(np.unique(roots)), roots

def csr_matvec(indptr, indices, data, x):
    n = len(indptr) - 1
    y = np.zeros(n, dtype=np.result_type(data, x))
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y

def dijkstra_mask(W, src):
    n = W.shape[0]
    dist = np.full(n, np.inf); dist[src] = 0
    visited = np.zeros(n, dtype=bool)
    for _ in range(n):
        cand = np.where(visited, np.inf, dist)
        u = np.argmin(cand)
        if cand[u] == np.inf:
            break
        visited[u] = True
        for v in range(n):
            if W[u, v] > 0 and dist[u] + W[u, v] < dist[v]:
                dist[v] = dist[u] + W[u, v]
    return dist

def transitive_closure(A):
    R = A.astype(bool).copy()
    n = R.shape[0]
    for k in range(n):
        R = R | (R[:, k:k+1] & R[k:k+1, :])
    return R

def degree_stats_values(*arguments):
    """The dict's values, in order (check_calls compares tuples)."""
    return tuple(degree_stats(*arguments).values())


def degree_stats(A):
    deg = A.sum(axis=0)
    return {"max": deg.max(), "mean": deg.mean(), "isolated": int((deg == 0).sum())}

def topo_sort(A):
    n = A.shape[0]
    indeg = A.sum(axis=0).astype(np.int64)
    order = np.empty(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    for k in range(n):
        found = -1
        for v in range(n):
            if not done[v] and indeg[v] == 0:
                found = v
                break
        if found < 0:
            return None
        order[k] = found
        done[found] = True
        indeg -= A[found]
    return order

def test_graph_algorithms():
    rng = np.random.default_rng(16)
    graph = lambda n, p: (rng.random((n, n)) < p).astype(np.int64)
    edges = lambda n, m: (rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m) * 10)
    dag = lambda n: np.triu(graph(n, .3), 1)

    def csr(n, d):
        M = rng.random((n, n)) * (rng.random((n, n)) < d)
        nz = M != 0
        indptr = np.concatenate(([0], np.cumsum(nz.sum(1))))
        return indptr.astype(np.int64), np.nonzero(nz)[1].astype(np.int64), M[nz]

    check_calls(bellman_ford, [(6, *edges(6, 12), 0), (40, *edges(40, 200), 3)])
    check_calls(bfs_queue, [(graph(6, .3), 0), (graph(60, .05), 2)])
    check_calls(pagerank, [(graph(5, .5).astype(float),), (graph(100, .05).astype(float),)])
    check_calls(union_find_components, [(8, rng.integers(0, 8, 5), rng.integers(0, 8, 5)), (100, rng.integers(0, 100, 60), rng.integers(0, 100, 60))])
    check_calls(csr_matvec, [(*csr(8, .3), rng.random(8)), (*csr(300, .02), rng.random(300))])
    check_calls(dijkstra_mask, [(rng.random((6, 6)) * (rng.random((6, 6)) < .5), 0), (rng.random((50, 50)) * (rng.random((50, 50)) < .1), 0)])
    check_calls(transitive_closure, [(graph(6, .2),), (graph(80, .02),)])
    check_calls(degree_stats_values, [(graph(6, .2),), (graph(50, .1),)])
    check_calls(topo_sort, [(dag(6),), (dag(40),), (graph(5, .6),)])


# ---- finance ----

def binomial_call(S, K, T, r, sigma, n):
    dt = T / n
    u = np.exp(sigma * np.sqrt(dt)); d = 1 / u
    p = (np.exp(r * dt) - d) / (u - d)
    disc = np.exp(-r * dt)
    prices = S * u ** np.arange(n, -1, -1) * d ** np.arange(0, n + 1)
    values = np.maximum(prices - K, 0.0)
    for i in range(n - 1, -1, -1):
        values = disc * (p * values[:-1] + (1 - p) * values[1:])
    return values[0]

def mc_paths(S0, mu, sigma, T, steps, n_paths, seed):
    rng = np.random.default_rng(seed)
    dt = T / steps
    paths = np.empty((steps + 1, n_paths))
    paths[0] = S0
    for t in range(1, steps + 1):
        z = rng.standard_normal(n_paths)
        paths[t] = paths[t - 1] * np.exp((mu - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * z)
    return paths[-1].mean(), paths

def garch_filter(returns, omega, alpha, beta):
    T = len(returns)
    sigma2 = np.empty(T)
    sigma2[0] = returns.var()
    for t in range(1, T):
        sigma2[t] = omega + alpha * returns[t - 1] ** 2 + beta * sigma2[t - 1]
    loglik = -0.5 * np.sum(np.log(2 * np.pi * sigma2) + returns ** 2 / sigma2)
    return sigma2, loglik

def max_drawdown(prices):
    peak = prices[0]; mdd = 0.0; start = end = 0; pk = 0
    for i in range(1, len(prices)):
        if prices[i] > peak:
            peak = prices[i]; pk = i
        dd = (peak - prices[i]) / peak
        if dd > mdd:
            mdd = dd; start = pk; end = i
    return mdd, start, end

def drawdown_vec(prices):
    running = np.maximum.accumulate(prices)
    dd = 1 - prices / running
    return dd.max(), int(np.argmax(dd))

def ewma_vol(returns, lam):
    v = np.empty_like(returns)
    v[0] = returns[0] ** 2
    for t in range(1, len(returns)):
        v[t] = lam * v[t - 1] + (1 - lam) * returns[t] ** 2
    return np.sqrt(v)

def npv_irr(cashflows, lo=-0.99, hi=1.0, tol=1e-10):
    def npv(rate):
        t = np.arange(len(cashflows))
        return np.sum(cashflows / (1 + rate) ** t)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if npv(mid) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)

def implied_vol_newton(price, S, K, T, r):
    sigma = 0.3
    for _ in range(50):
        d1 = (math.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * math.sqrt(T))
        d2 = d1 - sigma * math.sqrt(T)
        N1 = 0.5 * (1 + math.erf(d1 / math.sqrt(2))); N2 = 0.5 * (1 + math.erf(d2 / math.sqrt(2)))
        model = S * N1 - K * math.exp(-r * T) * N2
        vega = S * math.sqrt(T) * math.exp(-0.5 * d1 * d1) / math.sqrt(2 * math.pi)
        diff = model - price
        if abs(diff) < 1e-12:
            break
        sigma -= diff / vega
    return sigma

def portfolio_stats_values(*arguments):
    """The dict's values, in order (check_calls compares tuples)."""
    return tuple(portfolio_stats(*arguments).values())


def portfolio_stats(weights, returns):
    w = weights / weights.sum()
    port = returns @ w
    cov = np.cov(returns, rowvar=False)
    vol = np.sqrt(w @ cov @ w)
    sharpe = port.mean() / port.std(ddof=1) * np.sqrt(252)
    return {"vol": vol, "sharpe": sharpe, "cum": np.cumprod(1 + port)[-1] - 1}

def asian_option_mc(S0, K, r, sigma, T, steps, n, seed):
    gen = np.random.default_rng(seed)
    dt = T / steps
    S = np.full(n, S0, dtype=np.float64)
    total = np.zeros(n)
    for _ in range(steps):
        S *= np.exp((r - 0.5 * sigma * sigma) * dt + sigma * math.sqrt(dt) * gen.normal(size=n))
        total += S
    payoff = np.maximum(total / steps - K, 0)
    return math.exp(-r * T) * payoff.mean()

def test_finance():
    rng = np.random.default_rng(7)
    r = rng.standard_normal(500) * 0.01
    p = 100 * np.exp(np.cumsum(rng.standard_normal(2000) * 0.01))
    check_calls(binomial_call, [(100.0, 100.0, 1.0, 0.05, 0.2, 50), (100.0, 90.0, 0.5, 0.03, 0.3, 500)])
    check_calls(mc_paths, [(100.0, 0.05, 0.2, 1.0, 10, 8, 42), (100.0, 0.05, 0.2, 1.0, 250, 1000, 7)])
    check_calls(garch_filter, [(r[:20], 1e-6, 0.1, 0.85), (r, 1e-6, 0.1, 0.85)])
    check_calls(max_drawdown, [(p[:30],), (p,)])
    check_calls(drawdown_vec, [(p[:30],), (p,)])
    check_calls(ewma_vol, [(r[:10], 0.94), (r, 0.94), (r.astype(np.float32), 0.94)])
    check_calls(npv_irr, [(np.array([-100., 30, 40, 50]),), (np.array([-1000.] + [120.] * 15),)])
    check_calls(implied_vol_newton, [(10.45, 100.0, 100.0, 1.0, 0.05), (5.0, 100.0, 110.0, 0.5, 0.01)])
    check_calls(portfolio_stats_values, [(rng.random(3), rng.standard_normal((20, 3)) * 0.01), (rng.random(10), rng.standard_normal((500, 10)) * 0.01)])
    check_calls(asian_option_mc, [(100.0, 100.0, 0.05, 0.2, 1.0, 12, 100, 1), (100.0, 100.0, 0.05, 0.2, 1.0, 252, 5000, 2)])


