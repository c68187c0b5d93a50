"""Fourteenth set, programs on the idioms people reach for: uint8 images (histogram
equalisation by a lookup table, unsharp masking in int16, uint8 arithmetic that wraps), k-NN
votes by argpartition and np.unique, PCA by SVD with sign fixing, a weighted decision stump,
LCS by a table and its traceback, Dijkstra and Floyd-Warshall with paths on arrays, PageRank
with dangling nodes, zero crossings by signbit, autocorrelation pitch, Romberg's table, power
iteration with deflation, NumPy's integer division, modulo and rounding rules, a list of
indices built under `continue`, scatters with repeated indices, writes through reversed views
and a Monte Carlo estimate over batches. Each is compiled once and called with several
inputs, twice each, agreeing with NumPy."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


def hist_eq_uint8(img):
    hist = np.bincount(img.ravel(), minlength=256)
    cdf = hist.cumsum()
    cdf_min = cdf[cdf > 0][0]
    lut = np.round((cdf - cdf_min) / (img.size - cdf_min) * 255).clip(0, 255).astype(np.uint8)
    return lut[img]

def unsharp_uint8(img, amount=1.5):
    f = img.astype(np.int16)
    blur = (f[:-2, 1:-1] + f[2:, 1:-1] + f[1:-1, :-2] + f[1:-1, 2:] + 4 * f[1:-1, 1:-1]) // 8
    out = f.copy()
    out[1:-1, 1:-1] = f[1:-1, 1:-1] + (amount * (f[1:-1, 1:-1] - blur)).astype(np.int16)
    return np.clip(out, 0, 255).astype(np.uint8), img - 10

def knn_vote(train, labels, test, k=3):
    d = ((test[:, None, :] - train[None]) ** 2).sum(-1)
    nn = np.argpartition(d, k, axis=1)[:, :k]
    votes = labels[nn]
    out = np.empty(len(test), dtype=labels.dtype)
    for i in range(len(test)):
        vals, cnt = np.unique(votes[i], return_counts=True)
        out[i] = vals[np.argmax(cnt)]
    return out

def pca_svd_whiten(X, k=2):
    Xc = X - X.mean(0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    signs = np.sign(Vt[np.arange(k), np.abs(Vt[:k]).argmax(1)])
    comps = Vt[:k] * signs[:, None]
    Z = Xc @ comps.T / (s[:k] / np.sqrt(len(X) - 1))
    return Z, s ** 2 / (s ** 2).sum()

def stump_search(X, y, w):
    best = (np.inf, 0, 0.0, 1)
    for j in range(X.shape[1]):
        for t in np.unique(X[:, j]):
            for pol in (1, -1):
                pred = np.where(pol * (X[:, j] - t) >= 0, 1, -1)
                err = w[pred != y].sum()
                if err < best[0]:
                    best = (err, j, t, pol)
    return best

def lcs_table(a, b):
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                L[i, j] = L[i - 1, j - 1] + 1
            else:
                L[i, j] = max(L[i - 1, j], L[i, j - 1])
    out = []
    i, j = n, m
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1]); i -= 1; j -= 1
        elif L[i - 1, j] >= L[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return L[n, m], np.array(out[::-1], dtype=a.dtype)

def dijkstra_arrays(W, src):
    n = len(W)
    dist = np.full(n, np.inf)
    prev = -np.ones(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    dist[src] = 0
    for _ in range(n):
        cand = np.where(done, np.inf, dist)
        u = int(np.argmin(cand))
        if np.isinf(cand[u]):
            break
        done[u] = True
        for v in range(n):
            w = W[u, v]
            if w > 0 and dist[u] + w < dist[v]:
                dist[v] = dist[u] + w
                prev[v] = u
    return dist, prev

def pagerank_dangling(A, d=0.85, tol=1e-12):
    n = len(A)
    out = A.sum(1)
    P = np.divide(A, out[:, None], out=np.zeros_like(A, dtype=float), where=out[:, None] > 0)
    r = np.full(n, 1.0 / n)
    for it in range(1000):
        dangling = r[out == 0].sum()
        rn = (1 - d) / n + d * (r @ P + dangling / n)
        if np.abs(rn - r).sum() < tol:
            return rn, it
        r = rn
    return r, -1

def floyd_paths(W):
    n = len(W)
    D = W.astype(float).copy()
    D[D == 0] = np.inf
    np.fill_diagonal(D, 0)
    nxt = np.where(np.isfinite(D), np.arange(n)[None, :], -1)
    for k in range(n):
        via = D[:, k:k + 1] + D[k:k + 1, :]
        better = via < D
        D = np.where(better, via, D)
        nxt = np.where(better, nxt[:, k:k + 1], nxt)
    return D, nxt

def zero_cross_frames(x, frame=16):
    n = len(x) // frame
    f = x[:n * frame].reshape(n, frame)
    s = np.signbit(f)
    zc = (s[:, 1:] != s[:, :-1]).sum(1)
    return zc, zc / (frame - 1)

def autocorr_f0(x, fs, fmin=50, fmax=500):
    x = x - x.mean()
    r = np.correlate(x, x, mode="full")[len(x) - 1:]
    lo, hi = int(fs // fmax), int(fs // fmin)
    hi = min(hi, len(r) - 1)
    lag = lo + np.argmax(r[lo:hi])
    return fs / lag, r[lag] / r[0]

def romberg_table(a, b, n=5):
    R = np.zeros((n, n))
    h = b - a
    R[0, 0] = 0.5 * h * (np.exp(-a * a) + np.exp(-b * b))
    for i in range(1, n):
        h /= 2
        xs = a + h * np.arange(1, 2 ** i, 2)
        R[i, 0] = 0.5 * R[i - 1, 0] + h * np.exp(-xs ** 2).sum()
        for j in range(1, i + 1):
            R[i, j] = R[i, j - 1] + (R[i, j - 1] - R[i - 1, j - 1]) / (4 ** j - 1)
    return R

def power_deflation(A, k=2, iters=100):
    A = A.copy()
    vals = []
    vecs = []
    v = np.ones(len(A)) / np.sqrt(len(A))
    for _ in range(k):
        for _ in range(iters):
            w = A @ v
            v = w / np.linalg.norm(w)
        lam = v @ A @ v
        vals.append(lam)
        vecs.append(v.copy())
        A -= lam * np.outer(v, v)
        v = np.ones(len(A)) / np.sqrt(len(A))
        v[0] = -v[0]
    return np.array(vals), np.array(vecs)

def int_ops(a, b):
    q = a // b
    r = a % b
    f = np.fmod(a, b)
    p = a.astype(np.int8) * 3
    s = (a.astype(np.uint8) - 200)
    return q, r, f, p, s, np.right_shift(a, 1), -a // 2

def round_ops(x):
    return np.round(x), np.round(x, 1), np.rint(x), np.floor_divide(x, 0.5), x % -1.5, np.trunc(x)

def running_argmax_list(x):
    best = -np.inf
    idx = []
    for i, v in enumerate(x):
        if v <= best:
            continue
        best = v
        idx.append(i)
    return np.array(idx, dtype=np.int64), best

def scatter_dups(n, idx, vals):
    a = np.zeros(n)
    a[idx] = vals
    b = np.zeros(n)
    b[idx] += vals
    c = np.zeros(n)
    np.add.at(c, idx, vals)
    return a, b, c

def reversed_views(x):
    y = x.copy()
    y[::-2] = y[::2][: len(y[::-2])] * 2
    z = x[::-1].cumsum()[::-1]
    y[1:] -= y[:-1]
    return y, z

def monte_carlo_ci(rng, n=1000, batches=5):
    means = []
    for b in range(batches):
        u = rng.random(n)
        v = rng.random(n)
        inside = (u * u + v * v) <= 1.0
        means.append(4.0 * inside.mean())
    m = np.array(means)
    return m.mean(), m.std(ddof=1), m.dtype


def rng(seed=0):
    return np.random.default_rng(seed)

def image(seed, h=12, w=14):
    return rng(seed).random((h, w))

def two_blobs():
    return np.concatenate([rng(6).normal(0, 1, (15, 2)), rng(7).normal(4, 1, (15, 2))])

def signal(seed, n=64):
    return np.sin(np.arange(n) * 0.3) + 0.1 * rng(seed).standard_normal(n)

def weighted_graph():
    W = np.where(rng(20).random((7, 7)) > 0.5, rng(21).integers(1, 9, (7, 7)), 0).astype(float)
    np.fill_diagonal(W, 0)
    return W


def test_images_and_learners():
    check_calls(hist_eq_uint8, [((image(1) * 200 + 20).astype(np.uint8),),
                                ((image(2, 5, 5) * 60).astype(np.uint8),)])
    check_calls(unsharp_uint8, [((image(1) * 255).astype(np.uint8),),
                                ((image(2, 5, 6) * 255).astype(np.uint8), 0.5)])
    X = two_blobs()
    y = (X[:, 0] > 2).astype(np.int64)
    check_calls(knn_vote, [(X, y, X[::3] + 0.1), (X, np.arange(30) % 3, X[:5], 5)])
    check_calls(pca_svd_whiten, [(rng(24).random((20, 4)),), (rng(25).random((10, 3)), 1)])
    check_calls(stump_search, [(np.round(X, 1), np.where(y > 0, 1, -1), np.full(30, 1 / 30))])


def test_sequences_and_graphs():
    check_calls(lcs_table, [(np.frombuffer(b"AGGTAB", np.uint8),
                             np.frombuffer(b"GXTXAYB", np.uint8)),
                            (rng(1).integers(0, 3, 9), rng(2).integers(0, 3, 7))])
    W = weighted_graph()
    check_calls(dijkstra_arrays, [(W, 0), (W, 3)])
    links = (rng(22).random((6, 6)) > 0.6).astype(float)
    links[2] = 0  # a dangling node
    undirected = np.triu((rng(8).random((8, 8)) > 0.6).astype(float), 1)
    check_calls(pagerank_dangling, [(links,), (undirected + undirected.T,)])
    check_calls(floyd_paths, [(W,), (undirected + undirected.T,)])


def test_signals_and_numerics():
    check_calls(zero_cross_frames, [(signal(1),), (signal(2, 50).astype(np.float32), 8)])
    tone = np.sin(2 * np.pi * 200 * np.arange(400) / 8000)
    check_calls(autocorr_f0, [(tone, 8000), (signal(3, 200), 1000, 20, 200)])
    check_calls(romberg_table, [(0.0, 1.0), (-1.0, 2.0, 4)])
    S = rng(23).random((5, 5))
    check_calls(power_deflation, [(S + S.T,), (S + S.T + np.eye(5), 3, 50)])


def test_numpys_number_rules():
    divisors = np.array([3, -3, 2, 5, -4, 7, 1, 2, 3, -2, 6, 4, 5, 3, -1])
    check_calls(int_ops, [(np.arange(-7, 8), divisors),
                          (np.arange(-7, 8).astype(np.int32), np.int32(3))])
    check_calls(round_ops, [(np.array([0.5, 1.5, 2.5, -0.5, -1.25, 0.05, 3.14159, -2.675]),),
                            (np.float32([0.5, 1.45, -2.5, 7.25]),)])


def test_lists_scatters_views_and_batches():
    check_calls(running_argmax_list, [(signal(1),), (rng(3).integers(0, 10, 12),)])
    check_calls(scatter_dups, [(6, np.array([0, 2, 2, 5, 0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])),
                               (4, np.array([3, 3, 3]), np.float32([1, 2, 3]))])
    check_calls(reversed_views, [(np.arange(10.0),), (np.arange(7, dtype=np.int64),)])
    check_calls(monte_carlo_ci, [(rng(30),), (rng(31), 200, 3)])
