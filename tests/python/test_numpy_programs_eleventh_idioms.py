"""The eleventh set's small idioms: uint8 saturation and wraparound, int8 and uint64 bit
mixing in loops, keyword-only arguments and closures with defaults, while-else searches,
duplicate indices (assignment, np.add.at, +=), NaN imputation by np.where/np.take, Kahan sums
in float32, bytes through np.frombuffer, returns of an index or None, integer cumprod overflow,
in-place row updates through a for loop's views, errstate-guarded logs, searchsorted and
digitize histograms, percentiles, and matrix powers by squaring. Each is compiled once and
called with several inputs, agreeing with NumPy on values, NaN positions, dtypes, shapes, Python
types and the arrays updated in place."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# uint8 image ops with wraparound and saturation
def brighten(img, delta=40):
    out = img.astype(np.int16) + delta
    np.clip(out, 0, 255, out=out)
    wrapped = img + np.uint8(delta)
    return out.astype(np.uint8), wrapped, (img > 200).sum()


# int8 accumulation overflow in loop
def int8_checksum(b):
    s = np.int8(0)
    for v in b:
        s = np.int8(s ^ v)
        s = np.int8((s << 1) | ((s >> 7) & 1))
    return s


# gradient clipping with keyword-only args and defaults
def clip_grads(grads, *, max_norm=1.0, eps=1e-6):
    total = np.sqrt(sum(np.sum(g * g) for g in grads))
    scale = min(1.0, max_norm / (total + eps))
    return [g * scale for g in grads], total


# while-else search
def first_prime_after(n):
    k = n + 1
    while True:
        d = 2
        while d * d <= k:
            if k % d == 0:
                break
            d += 1
        else:
            return k
        k += 1


# fancy index assign with duplicates, and add.at
def scatter_both(n, idx, vals):
    a = np.zeros(n); b = np.zeros(n)
    a[idx] = vals
    np.add.at(b, idx, vals)
    c = np.zeros(n); c[idx] += vals
    return a, b, c


# boolean mask in-place with NaN
def impute_column_means(X):
    X = X.copy()
    means = np.nanmean(X, axis=0)
    inds = np.where(np.isnan(X))
    X[inds] = np.take(means, inds[1])
    return X, np.isnan(means)


# float32 accumulation in loop
def kahan_sum(x):
    s = np.float32(0.0); c = np.float32(0.0)
    for v in x:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return s, np.sum(x, dtype=np.float32)


# generator helper & closure with default arg
def make_decay(rate=0.5):
    def f(x, steps=3):
        for _ in range(steps):
            x = x * rate
        return x
    return f
def use_decay(x):
    return make_decay()(x), make_decay(0.9)(x, steps=10)


# np.frombuffer text processing
def word_lengths(data):
    b = np.frombuffer(data, dtype=np.uint8)
    is_space = b == ord(" ")
    boundaries = np.flatnonzero(np.diff(np.concatenate(([0], (~is_space).astype(np.int8), [0]))) != 0)
    starts, ends = boundaries[::2], boundaries[1::2]
    return ends - starts


# structured early exit with returns of differing types
def find_row(M, target):
    for i in range(M.shape[0]):
        if np.allclose(M[i], target):
            return i
    return None


# cumulative product with int overflow
def factorials(n):
    return np.cumprod(np.arange(1, n + 1, dtype=np.int64)), np.cumprod(np.arange(1, n + 1, dtype=np.int32))


# in-place ops on argument views
def normalize_rows_inplace(X):
    for row in X:
        row -= row.mean()
        n = np.linalg.norm(row)
        if n > 0:
            row /= n
    return X.sum()


# divide by zero nan/inf positions
def safe_log_ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(a / b)
    r[~np.isfinite(r)] = np.nan
    return r, np.nanmax(r), np.isnan(r).sum()


# modular arithmetic uint64
def lcg_stream(seed, n):
    out = np.empty(n, dtype=np.uint64)
    x = np.uint64(seed)
    for i in range(n):
        x = x * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        out[i] = x >> np.uint64(33)
    return out


# bisect with np.searchsorted on sorted cumulative weights (roulette wheel)
def roulette(weights, u):
    cdf = np.cumsum(weights) / np.sum(weights)
    return np.searchsorted(cdf, u, side="right"), cdf


# histogram via digitize and bincount
def hist_by_digitize(x, edges):
    idx = np.digitize(x, edges)
    counts = np.bincount(idx, minlength=len(edges) + 1)
    return counts[1:-1], idx.dtype


# percentiles and nan handling
def robust_scale(x):
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    iqr = q3 - q1
    return (x - med) / (iqr if iqr > 0 else 1.0)


# matrix power via repeated squaring with Python int exponent
def matpow(A, p):
    R = np.eye(A.shape[0], dtype=A.dtype)
    while p:
        if p & 1:
            R = R @ A
        A = A @ A
        p >>= 1
    return R


def test_idioms():
    rng = np.random.default_rng(0)
    check_calls(brighten, [(rng.integers(0, 256, (8, 8), dtype=np.uint8),), (rng.integers(0, 256, (3, 5), dtype=np.uint8), 100)])
    check_calls(int8_checksum, [(rng.integers(-128, 128, 20).astype(np.int8),), (np.arange(5, dtype=np.int8),)])
    check_calls(clip_grads, [([rng.standard_normal(3), rng.standard_normal((2, 2))],), ([np.ones(2) * 0.01],)])
    check_calls(first_prime_after, [(10,), (100,), (np.int64(7),)])
    check_calls(scatter_both, [(5, np.array([0, 1, 1, 3, 0]), np.array([1., 2, 3, 4, 5])), (3, np.array([2, 2, 2]), np.array([1., 1, 1]))])
    Xn = rng.random((6, 3)); Xn[[0, 2, 4], [1, 1, 2]] = np.nan
    Xm = Xn.copy(); Xm[:, 0] = np.nan
    check_calls(impute_column_means, [(Xn,), (Xm,)])
    check_calls(kahan_sum, [(rng.random(100).astype(np.float32),), (np.full(10, 0.1, dtype=np.float32),)])
    check_calls(use_decay, [(np.arange(4.0),), (np.ones((2, 2), np.float32),)])
    check_calls(word_lengths, [(b"the quick brown  fox",), (b" a bb ccc ",)])
    check_calls(find_row, [(np.eye(3), np.array([0., 1, 0])), (np.eye(3), np.array([1., 1, 1]))])
    check_calls(factorials, [(10,), (25,)])
    check_calls(normalize_rows_inplace, [(rng.random((4, 3)),), (np.ones((2, 3)),)])
    check_calls(safe_log_ratio, [(np.array([1., 0, 2, -1, 0]), np.array([1., 0, 0, 1, 3])), (np.array([1., 2]), np.array([2., 4]))])
    check_calls(lcg_stream, [(42, 10), (7, 100)])
    check_calls(roulette, [(np.array([1., 2, 3, 4]), np.array([0.05, 0.5, 0.99, 0.1])), (np.array([5, 1, 1]), np.linspace(0, 0.999, 7))])
    check_calls(hist_by_digitize, [(rng.random(50), np.linspace(0, 1, 6)), (rng.standard_normal(30), np.array([-1., 0, 1]))])
    check_calls(robust_scale, [(rng.random(11),), (np.ones(5),)])
    check_calls(matpow, [(np.array([[1, 1], [1, 0]], dtype=np.int64), 10), (np.array([[0.5, 0.5], [0.2, 0.8]]), 7)])
