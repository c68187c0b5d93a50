"""More of round 13's NumPy programs: resampling statistics (a bootstrap interval with
np.random.default_rng), k nearest neighbours voting by bincount, logistic
regression by mini-batch SGD with momentum, PCA by power iteration with deflation, modified
Gram-Schmidt, an EWMA volatility recursion, drawdown durations, a Sobel edge map with quantised
directions and run-length decoding. Each is compiled once and called with several inputs,
twice each, agreeing with NumPy."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


def bootstrap_ci(x, n_boot=300, alpha=0.1, seed=1):
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    for i in range(n_boot):
        means[i] = x[rng.integers(0, len(x), len(x))].mean()
    return np.quantile(means, [alpha / 2, 1 - alpha / 2])

def knn_predict(train_x, train_y, test_x, k=3, n_classes=None):
    if n_classes is None:
        n_classes = int(train_y.max()) + 1
    d = ((test_x[:, None, :] - train_x[None]) ** 2).sum(-1)
    nearest = np.argsort(d, axis=1)[:, :k]
    votes = np.zeros((len(test_x), n_classes), dtype=np.int64)
    for j in range(k):
        np.add.at(votes, (np.arange(len(test_x)), train_y[nearest[:, j]]), 1)
    return votes.argmax(axis=1)

def sgd_momentum_logistic(X, y, lr=0.1, beta=0.9, epochs=5, batch=8):
    w = np.zeros(X.shape[1])
    v = np.zeros_like(w)
    losses = []
    for _ in range(epochs):
        for start in range(0, len(X), batch):
            xb, yb = X[start:start + batch], y[start:start + batch]
            p = 1 / (1 + np.exp(-xb @ w))
            grad = xb.T @ (p - yb) / len(xb)
            v = beta * v - lr * grad
            w += v
        p = np.clip(1 / (1 + np.exp(-X @ w)), 1e-12, 1 - 1e-12)
        losses.append(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    return w, np.array(losses)

def pca_power_deflation(X, n_components=2, iters=200, tol=1e-10):
    C = np.cov(X, rowvar=False)
    comps, values = [], []
    for _ in range(n_components):
        v = np.ones(C.shape[0]) / np.sqrt(C.shape[0])
        lam = 0.0
        for _ in range(iters):
            w = C @ v
            new_lam = v @ w
            v = w / np.linalg.norm(w)
            if abs(new_lam - lam) < tol:
                break
            lam = new_lam
        comps.append(v)
        values.append(lam)
        C = C - lam * np.outer(v, v)
    return np.array(values), np.array(comps)

def modified_gram_schmidt(A):
    m, n = A.shape
    Q = A.astype(np.float64).copy()
    R = np.zeros((n, n))
    for j in range(n):
        R[j, j] = np.linalg.norm(Q[:, j])
        if R[j, j] == 0:
            continue
        Q[:, j] /= R[j, j]
        for k in range(j + 1, n):
            R[j, k] = Q[:, j] @ Q[:, k]
            Q[:, k] -= R[j, k] * Q[:, j]
    return Q, R


def test_statistics_and_learning():
    rng = np.random.default_rng(21)
    a, b = rng.normal(0, 1, 15), rng.normal(0.8, 1, 12)
    check_calls(bootstrap_ci, [(a,), (b, 100, 0.05, 7), (a[:1], 20)])
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    check_calls(knn_predict, [(X, y, X[:5]), (X, y, X[:0], 1, 2), (X, y, X[:4], 5)])
    check_calls(sgd_momentum_logistic, [(X, y.astype(np.float64)), (X, y.astype(np.float64),
                                                                     0.5, 0.0, 2, 30)])
    D = rng.normal(size=(40, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5])
    check_calls(pca_power_deflation, [(D,), (D, 1, 5), (D[:, :2], 2)])
    check_calls(modified_gram_schmidt, [(D[:6],), (np.eye(3),), (np.array([[1, 1], [1, 1]]),),
                                        (D[:4, :1].astype(np.float32),)])


def ewma_volatility(returns, lam=0.94, init=None):
    var = returns[:10].var() if init is None else init
    out = np.empty_like(returns, dtype=np.float64)
    for t, r in enumerate(returns):
        out[t] = np.sqrt(var)
        var = lam * var + (1 - lam) * r * r
    return out

def drawdown_durations(prices):
    peak = prices[0]
    current, longest = 0, 0
    durations = []
    for p in prices[1:]:
        if p >= peak:
            peak = p
            if current:
                durations.append(current)
            current = 0
        else:
            current += 1
            longest = max(longest, current)
    return longest, len(durations), np.array(durations, dtype=np.int64)

def sobel_directions(img):
    kx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64)
    h, w = img.shape
    gx = np.zeros((h - 2, w - 2))
    gy = np.zeros((h - 2, w - 2))
    for di in range(3):
        for dj in range(3):
            patch = img[di:di + h - 2, dj:dj + w - 2]
            gx += kx[di, dj] * patch
            gy += kx.T[di, dj] * patch
    mag = np.hypot(gx, gy)
    angle = (np.rad2deg(np.arctan2(gy, gx)) + 180) % 180
    sector = np.zeros(angle.shape, dtype=np.int64)
    sector[(angle >= 22.5) & (angle < 67.5)] = 1
    sector[(angle >= 67.5) & (angle < 112.5)] = 2
    sector[(angle >= 112.5) & (angle < 157.5)] = 3
    return mag, sector

def rle_decode(values, lengths):
    out = np.empty(int(lengths.sum()), dtype=values.dtype)
    pos = 0
    for v, n in zip(values, lengths):
        out[pos:pos + n] = v
        pos += n
    return out


def test_finance_image_sequences():
    rng = np.random.default_rng(9)
    r = rng.normal(0, 0.01, 50)
    check_calls(ewma_volatility, [(r,), (r[:1], 0.9, 1e-4), (r.astype(np.float32),), (r[:0], 0.9,
                                                                                     1e-4)],
                float32_inputs=True)
    prices = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, 60)))
    check_calls(drawdown_durations, [(prices,), (np.arange(5.0),), (prices[:1],),
                                     (np.array([3, 1, 2, 4, 0]),)])
    img = rng.uniform(size=(9, 11))
    check_calls(sobel_directions, [(img,), (img[:3, :3],), (img.astype(np.float32),)],
                float32_inputs=True)
    check_calls(rle_decode, [(np.array([3, 1, 4]), np.array([2, 0, 3])),
                             (np.array([1.5]), np.array([4])),
                             (np.array([], int), np.array([], int))])
