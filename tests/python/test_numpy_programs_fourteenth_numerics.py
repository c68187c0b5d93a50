"""Fourteenth set, numerics, learners, strings and graphs as people write them: Newton with an
Armijo line search, golden-section search, Gauss-Seidel to a tolerance, composite Simpson,
Nelder-Mead over a list simplex, Aitken's acceleration; softmax regression by minibatches of a
Generator's permutation, multinomial naive Bayes, k-means that reseeds empty clusters, the
silhouette score, AdaGrad; Hamming distance by popcount loops, Jaro similarity on byte arrays,
Kruskal with a union-find, triangles and Katz centrality, label propagation. Each is compiled
once and called with several inputs, twice each, agreeing with NumPy."""
import math

import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- numerics ----

def newton_armijo(x0, A, b, iters=30):
    # minimise f(x) = sum(exp(A x - b)) + 0.5 |x|^2
    x = x0.astype(float).copy()
    for k in range(iters):
        e = np.exp(A @ x - b)
        f = e.sum() + 0.5 * x @ x
        g = A.T @ e + x
        if np.linalg.norm(g) < 1e-10:
            break
        H = A.T @ (A * e[:, None]) + np.eye(len(x))
        p = -np.linalg.solve(H, g)
        t = 1.0
        while True:
            xn = x + t * p
            fn = np.exp(A @ xn - b).sum() + 0.5 * xn @ xn
            if fn <= f + 1e-4 * t * (g @ p) or t < 1e-8:
                break
            t *= 0.5
        x = xn
    return x, k

def golden_section(a, b, coeffs, tol=1e-8):
    gr = (math.sqrt(5) - 1) / 2
    c = b - gr * (b - a)
    d = a + gr * (b - a)
    n = 0
    while abs(b - a) > tol:
        fc = np.polyval(coeffs, c)
        fd = np.polyval(coeffs, d)
        if fc < fd:
            b = d
        else:
            a = c
        c = b - gr * (b - a)
        d = a + gr * (b - a)
        n += 1
    return (a + b) / 2, n

def gauss_seidel_tol(A, b, tol=1e-10, maxit=500):
    n = len(b)
    x = np.zeros(n)
    for it in range(maxit):
        x_old = x.copy()
        for i in range(n):
            s = A[i, :i] @ x[:i] + A[i, i + 1:] @ x_old[i + 1:]
            x[i] = (b[i] - s) / A[i, i]
        if np.max(np.abs(x - x_old)) < tol:
            return x, it + 1
    return x, maxit

def composite_simpson(f_vals, a, b):
    n = len(f_vals) - 1
    if n % 2:
        raise ValueError("need an even number of intervals")
    h = (b - a) / n
    return h / 3 * (f_vals[0] + f_vals[-1] + 4 * f_vals[1:-1:2].sum() + 2 * f_vals[2:-1:2].sum())

def nelder_mead(x0, center, iters=200):
    def f(x):
        return float(np.sum((x - center) ** 2) + 0.1 * np.sum(x ** 4))
    n = len(x0)
    simplex = [x0.astype(float)]
    for i in range(n):
        y = x0.astype(float).copy()
        y[i] += 0.5
        simplex.append(y)
    vals = [f(s) for s in simplex]
    for _ in range(iters):
        order = np.argsort(vals)
        simplex = [simplex[i] for i in order]
        vals = [vals[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = centroid + 2 * (centroid - simplex[-1])
            fe = f(xe)
            if fe < fr:
                simplex[-1], vals[-1] = xe, fe
            else:
                simplex[-1], vals[-1] = xr, fr
        elif fr < vals[-2]:
            simplex[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(xc)
            if fc < vals[-1]:
                simplex[-1], vals[-1] = xc, fc
            else:
                for i in range(1, n + 1):
                    simplex[i] = simplex[0] + 0.5 * (simplex[i] - simplex[0])
                    vals[i] = f(simplex[i])
    return simplex[int(np.argmin(vals))], min(vals)

def aitken(x0, iters=10):
    x = x0
    hist = []
    for _ in range(iters):
        x1 = np.cos(x)
        x2 = np.cos(x1)
        den = x2 - 2 * x1 + x
        if abs(den) < 1e-14:
            break
        x = x - (x1 - x) ** 2 / den
        hist.append(x)
    return x, np.array(hist)

# ---- learners ----

def softmax_minibatch(X, y, k, rng, epochs=3, bs=16, lr=0.1):
    n, d = X.shape
    W = np.zeros((d, k))
    losses = []
    for ep in range(epochs):
        perm = rng.permutation(n)
        for s in range(0, n, bs):
            idx = perm[s:s + bs]
            logits = X[idx] @ W
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            losses.append(-np.log(p[np.arange(len(idx)), y[idx]] + 1e-12).mean())
            p[np.arange(len(idx)), y[idx]] -= 1
            W -= lr * X[idx].T @ p / len(idx)
    return W, np.array(losses)

def multinomial_nb(counts, labels, n_classes, alpha=1.0):
    priors = np.bincount(labels, minlength=n_classes) / len(labels)
    feat = np.zeros((n_classes, counts.shape[1]))
    for c in range(n_classes):
        feat[c] = counts[labels == c].sum(axis=0)
    logp = np.log((feat + alpha) / (feat + alpha).sum(axis=1, keepdims=True))
    scores = counts @ logp.T + np.log(priors + 1e-300)
    return scores.argmax(axis=1), logp

def kmeans_empty_safe(X, k, rng, iters=10):
    C = X[rng.choice(len(X), k, replace=False)].copy()
    for _ in range(iters):
        d = ((X[:, None, :] - C[None]) ** 2).sum(-1)
        lab = d.argmin(1)
        for j in range(k):
            members = X[lab == j]
            if len(members) == 0:
                C[j] = X[d.min(1).argmax()]
            else:
                C[j] = members.mean(0)
    return C, lab

def silhouette(X, labels):
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    s = np.zeros(len(X))
    for i in range(len(X)):
        same = labels == labels[i]
        same[i] = False
        if not same.any():
            continue
        a = D[i, same].mean()
        b = min(D[i, labels == c].mean() for c in np.unique(labels) if c != labels[i])
        s[i] = (b - a) / max(a, b)
    return s.mean()

def adagrad_linreg(X, y, lr=0.5, epochs=50):
    w = np.zeros(X.shape[1], dtype=X.dtype)
    G = np.zeros_like(w)
    for _ in range(epochs):
        g = 2 * X.T @ (X @ w - y) / len(y)
        G += g * g
        w -= lr * g / (np.sqrt(G) + 1e-8)
    return w

# ---- strings and graphs ----

def hamming_bytes(a, b):
    x = np.bitwise_xor(a, b)
    count = 0
    for byte in x:
        v = int(byte)
        while v:
            v &= v - 1
            count += 1
    return count

def jaro(s, t):
    if len(s) == 0 and len(t) == 0:
        return 1.0
    m = max(len(s), len(t)) // 2 - 1
    sm = np.zeros(len(s), bool)
    tm = np.zeros(len(t), bool)
    matches = 0
    for i in range(len(s)):
        lo, hi = max(0, i - m), min(i + m + 1, len(t))
        for j in range(lo, hi):
            if tm[j] or s[i] != t[j]:
                continue
            sm[i] = tm[j] = True
            matches += 1
            break
    if matches == 0:
        return 0.0
    trans = np.sum(s[sm] != t[tm]) / 2
    return (matches / len(s) + matches / len(t) + (matches - trans) / matches) / 3

def kruskal(n, edges, weights):
    parent = list(range(n))
    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    total = 0.0
    used = []
    for e in np.argsort(weights, kind="stable"):
        u, v = edges[e]
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            total += weights[e]
            used.append(e)
    return total, np.array(used)

def triangles_katz(A, alpha=0.1, iters=30):
    tri = np.trace(A @ A @ A) // 6
    x = np.ones(len(A))
    for _ in range(iters):
        x = alpha * A @ x + 1.0
    return tri, x / np.linalg.norm(x)

def label_propagation(A, labels0, iters=10):
    lab = labels0.copy()
    n = len(lab)
    for _ in range(iters):
        changed = False
        for i in range(n):
            nb = np.nonzero(A[i])[0]
            if len(nb) == 0:
                continue
            counts = np.bincount(lab[nb], minlength=lab.max() + 1)
            best = counts.argmax()
            if best != lab[i]:
                lab[i] = best
                changed = True
        if not changed:
            break
    return lab


def rng(seed=0):
    return np.random.default_rng(seed)

def two_blobs():
    return np.concatenate([rng(6).normal(0, 1, (15, 2)), rng(7).normal(4, 1, (15, 2))])

def small_graph():
    upper = np.triu((rng(8).random((8, 8)) > 0.6).astype(np.int64), 1)
    return upper + upper.T


def test_numerics():
    A = rng(3).random((5, 5)) + 5 * np.eye(5)
    check_calls(newton_armijo, [(np.zeros(3), rng(1).random((6, 3)), rng(2).random(6)),
                                (np.ones(2), rng(3).standard_normal((4, 2)), np.zeros(4))])
    check_calls(golden_section, [(-2.0, 3.0, np.array([1.0, -1.0, -2.0])),
                                 (0.0, 1.0, np.array([2.0, 0.0, -1.0, 0.5]))])
    check_calls(gauss_seidel_tol, [(A, rng(1).random(5)), (A + A.T, np.ones(5))])
    check_calls(composite_simpson, [(np.sin(np.linspace(0, np.pi, 11)), 0.0, np.pi),
                                    (np.linspace(0, 1, 5).astype(np.float32) ** 2, 0, 1)])
    # Near the minimum the simplex's comparisons turn on the last bits of f (x ** 4, summed in
    # another order on another vector width): the points agree to the simplex's size, not 1e-9.
    check_calls(nelder_mead, [(np.zeros(2), np.array([1.0, -0.5])), (np.ones(3), np.zeros(3), 100)],
                float32_inputs=True)
    check_calls(aitken, [(1.0,), (0.3, 5)])


def test_learners():
    X = two_blobs()
    y = (X[:, 0] > 2).astype(np.int64)
    counts, labels = rng(4).integers(0, 5, (30, 6)), rng(5).integers(0, 3, 30)
    check_calls(softmax_minibatch, [(X, y, 2, rng(13)), (X[:20], y[:20], 3, rng(14), 2, 8)])
    check_calls(multinomial_nb, [(counts, labels, 3), (counts[:10], labels[:10] % 2, 2, 0.5)])
    check_calls(kmeans_empty_safe, [(X, 2, rng(15)), (X, 4, rng(16), 5)])
    check_calls(silhouette, [(X, y), (X[:12], np.arange(12) % 3)])
    check_calls(adagrad_linreg, [(X, X @ np.array([1.0, 2.0])),
                                 (X.astype(np.float32), X[:, 0].astype(np.float32))])


def test_strings_and_graphs():
    check_calls(hamming_bytes, [(rng(1).integers(0, 256, 20).astype(np.uint8),
                                 rng(2).integers(0, 256, 20).astype(np.uint8)),
                                (np.zeros(4, np.uint8), np.full(4, 255, np.uint8))])
    check_calls(jaro, [(np.frombuffer(b"martha", np.uint8), np.frombuffer(b"marhta", np.uint8)),
                       (np.frombuffer(b"dixon", np.uint8), np.frombuffer(b"dicksonx", np.uint8))])
    check_calls(kruskal, [(6, rng(1).integers(0, 6, (12, 2)), rng(2).random(12)),
                          (4, np.array([[0, 1], [1, 2], [2, 3], [0, 3]]),
                           np.array([1.0, 1.0, 2.0, 0.5]))])
    graph = small_graph()
    check_calls(triangles_katz, [(graph,), (graph[:5, :5], 0.05, 10)])
    check_calls(label_propagation, [(graph, np.arange(8)), (graph, np.arange(8) % 3, 3)])
