"""An eleventh set of NumPy programs as people write them, in domains the earlier sets did not
cover: audio-style signal processing (Goertzel, pre-emphasis and framing, zero-crossing rates,
an envelope follower, a Schmitt trigger, autocorrelation pitch), finance (a trinomial tree,
a barrier option by Monte Carlo, a Bollinger-band backtest, an amortisation schedule, historical
VaR), numerical methods (Romberg, Adams-Bashforth, Brent, Householder QR, Jacobi eigenvalues,
a natural cubic spline, Clenshaw's recurrence, Newton on a system), machine learning from
scratch (Pegasos, a 1-D Gaussian mixture by EM, the scaled HMM forward pass, Fisher's LDA, a
Gini split search, mean shift) and statistics (Kaplan-Meier, Spearman, a permutation test,
kernel density, the KS statistic, the Gini coefficient). Each is compiled once and called
with several inputs, agreeing with NumPy on values, NaN positions, dtypes, shapes, Python
types and the arrays updated in place."""
import copy
import math

import numpy as np

import kiln


def assert_same(got, expected, what, single=False):
    """got is expected's value in expected's type: containers item by item, arrays by dtype,
    shape and values (NaN where NumPy has NaN), scalars by their exact Python or NumPy type."""
    assert type(got) is type(expected), (what, type(got), type(expected))
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), what
        for n, (a, b) in enumerate(zip(got, expected)):
            assert_same(a, b, f"{what}[{n}]", single)
        return
    if isinstance(expected, dict):
        assert list(got) == list(expected), what
        for key in expected:
            assert_same(got[key], expected[key], f"{what}[{key!r}]", single)
        return
    if expected is None or isinstance(expected, (str, bytes, np.dtype)):
        assert got == expected, what
        return
    got_array, expected_array = np.asarray(got), np.asarray(expected)
    assert got_array.dtype == expected_array.dtype, (what, got_array.dtype, expected_array.dtype)
    assert got_array.shape == expected_array.shape, (what, got_array.shape, expected_array.shape)
    if expected_array.dtype.kind in "biuSUMmV":  # dates, durations and records exactly
        np.testing.assert_array_equal(got_array, expected_array, err_msg=what)
    else:
        single = single or expected_array.dtype in (np.float32, np.complex64, np.float16)
        tolerance = 1e-4 if single else 1e-9
        np.testing.assert_allclose(got_array, expected_array, rtol=tolerance, atol=tolerance,
                                   err_msg=what)

def loop_kinds(function, *arguments):
    """The kinds of the loops kiln.explain reports for one call (selects left out)."""
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops if loop.kind != "select"]


def check_repeated_calls(function, *argument_sets):
    """One compiled function agrees with NumPy on each argument set, called twice each."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        for _ in range(2):
            mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
            assert_same(compiled(*mine), function(*theirs), function.__name__)


def check_captured(function, *arguments):
    """`function`'s loop is one loop node, and two calls agree with NumPy."""
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    kinds = [loop.kind for loop in report.loops if loop.kind != "select"]
    assert kinds == ["loop"], [(loop.kind, loop.reason) for loop in report.loops]
    check_repeated_calls(function, arguments)


def check_calls(function, argument_sets, float32_inputs=False):
    """kiln.compile(function) agrees with function on copies of each argument tuple, called in
    order, every set twice (the trace, then the cached graph): results and updated arguments.
    float32_inputs: float64 results computed from float32 data agree to float32's precision."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        for _ in range(2):
            mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
            got, expected = compiled(*mine), function(*theirs)
            assert_same(got, expected, f"result of {function.__name__}", float32_inputs)
            for n, (a, b) in enumerate(zip(mine, theirs)):
                if isinstance(b, np.ndarray):
                    assert_same(a, b, f"argument {n} of {function.__name__}")
    return compiled


# ---- signal processing ----

def goertzel_power(x, target_freq, sample_rate):
    n = len(x)
    k = int(0.5 + n * target_freq / sample_rate)
    w = 2.0 * math.pi * k / n
    coeff = 2.0 * math.cos(w)
    s_prev = 0.0
    s_prev2 = 0.0
    for sample in x:
        s = sample + coeff * s_prev - s_prev2
        s_prev2 = s_prev
        s_prev = s
    return s_prev2 ** 2 + s_prev ** 2 - coeff * s_prev * s_prev2

def frame_signal(x, frame_len=64, hop=32, alpha=0.97):
    emphasized = np.append(x[0], x[1:] - alpha * x[:-1])
    n_frames = 1 + (len(emphasized) - frame_len) // hop
    idx = np.arange(frame_len)[None, :] + hop * np.arange(n_frames)[:, None]
    frames = emphasized[idx] * np.hamming(frame_len)
    energy = np.sum(frames ** 2, axis=1)
    log_energy = np.log(energy + np.finfo(float).eps)
    return frames, log_energy

def zero_crossing_rate(x, frame_len, hop):
    signs = np.sign(x)
    signs[signs == 0] = 1
    crossings = np.abs(np.diff(signs)) / 2
    n_frames = 1 + (len(crossings) - frame_len) // hop
    rates = np.empty(n_frames, dtype=np.float32)
    for f in range(n_frames):
        rates[f] = crossings[f * hop:f * hop + frame_len].mean()
    return rates

def envelope_follower(x, attack, release):
    env = np.zeros_like(x)
    level = 0.0
    for i in range(len(x)):
        rectified = abs(x[i])
        coef = attack if rectified > level else release
        level = coef * level + (1.0 - coef) * rectified
        env[i] = level
    return env

def schmitt_trigger(x, low, high):
    out = np.zeros(len(x), dtype=np.bool_)
    state = False
    for i in range(len(x)):
        if state and x[i] < low:
            state = False
        elif not state and x[i] > high:
            state = True
        out[i] = state
    return out

def autocorr_pitch(x, sample_rate, fmin=50.0, fmax=500.0):
    x = x - x.mean()
    n = len(x)
    lag_min = int(sample_rate / fmax)
    lag_max = min(int(sample_rate / fmin), n - 1)
    r = np.zeros(lag_max + 1)
    for lag in range(lag_max + 1):
        r[lag] = np.dot(x[:n - lag], x[lag:])
    best = lag_min + np.argmax(r[lag_min:lag_max + 1])
    return sample_rate / best, r / r[0]

def test_signal_processing():
    rng = np.random.default_rng(11)
    t = np.arange(400) / 8000.0
    tone = np.sin(2 * np.pi * 440 * t) + 0.1 * rng.standard_normal(400)
    check_calls(goertzel_power, [(tone, 440.0, 8000.0), (tone[:205], 697.0, 8000.0)])
    check_calls(frame_signal, [(tone,), (rng.standard_normal(1000),)])
    check_calls(zero_crossing_rate, [(tone, 40, 20), (np.round(rng.standard_normal(300)), 30, 10)])
    check_calls(envelope_follower, [(tone, 0.5, 0.99), (rng.standard_normal(50).astype(np.float32), 0.2, 0.9)])
    check_calls(schmitt_trigger, [(tone, -0.3, 0.3), (rng.standard_normal(100), -0.5, 0.8)])
    voiced = np.sin(2 * np.pi * 200 * t) + 0.5 * np.sin(2 * np.pi * 400 * t)
    check_calls(autocorr_pitch, [(voiced, 8000.0), (tone, 8000.0)])


# ---- finance ----

def trinomial_american_put(S0, K, r, sigma, T, N):
    dt = T / N
    u = np.exp(sigma * np.sqrt(2 * dt))
    d = 1 / u
    a = np.exp(r * dt / 2)
    b = np.exp(sigma * np.sqrt(dt / 2))
    pu = ((a - 1 / b) / (b - 1 / b)) ** 2
    pd = ((b - a) / (b - 1 / b)) ** 2
    pm = 1 - pu - pd
    disc = np.exp(-r * dt)
    j = np.arange(-N, N + 1)
    S = S0 * u ** j
    V = np.maximum(K - S, 0.0)
    for i in range(N - 1, -1, -1):
        S = S[1:-1]
        V = disc * (pu * V[2:] + pm * V[1:-1] + pd * V[:-2])
        V = np.maximum(V, K - S)
    return V[0]

def barrier_call_mc(S0, K, B, r, sigma, T, steps, n_paths, seed=0):
    rng = np.random.default_rng(seed)
    dt = T / steps
    S = np.full(n_paths, S0, dtype=np.float64)
    alive = np.ones(n_paths, dtype=bool)
    for _ in range(steps):
        z = rng.standard_normal(n_paths)
        S *= np.exp((r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * z)
        alive &= S < B
    payoff = np.where(alive, np.maximum(S - K, 0.0), 0.0)
    price = np.exp(-r * T) * payoff.mean()
    stderr = np.exp(-r * T) * payoff.std(ddof=1) / np.sqrt(n_paths)
    return price, stderr, alive.mean()

def bollinger_backtest(prices, window=20, k=2.0, cost=0.001):
    n = len(prices)
    position = np.zeros(n, dtype=np.int8)
    pos = 0
    for t in range(window, n):
        w = prices[t - window:t]
        mid = w.mean()
        sd = w.std()
        if prices[t] < mid - k * sd:
            pos = 1
        elif prices[t] > mid + k * sd:
            pos = -1
        elif pos == 1 and prices[t] >= mid:
            pos = 0
        elif pos == -1 and prices[t] <= mid:
            pos = 0
        position[t] = pos
    rets = np.diff(prices) / prices[:-1]
    trades = np.abs(np.diff(position.astype(np.float64)))
    strat = position[:-1] * rets - cost * trades
    equity = np.cumprod(1 + strat)
    return equity, int(trades.sum())

def amortization(principal, annual_rate, years, extra=0.0):
    n = years * 12
    r = annual_rate / 12
    payment = principal * r / (1 - (1 + r) ** -n)
    balance = principal
    schedule = np.zeros((n, 3))
    for m in range(n):
        interest = balance * r
        paid = min(payment + extra, balance + interest)
        balance = balance + interest - paid
        schedule[m] = interest, paid - interest, balance
        if balance <= 1e-9:
            return schedule[:m + 1], m + 1
    return schedule, n

def historical_var(returns, weights, alpha=0.05, window=250):
    port = returns @ weights
    n = len(port)
    var = np.full(n, np.nan)
    es = np.full(n, np.nan)
    for t in range(window, n):
        hist = port[t - window:t]
        q = np.quantile(hist, alpha)
        var[t] = -q
        es[t] = -hist[hist <= q].mean()
    breaches = np.sum(port[window:] < -var[window:])
    return var, es, breaches

def test_finance():
    rng = np.random.default_rng(5)
    check_calls(trinomial_american_put, [(100.0, 100.0, 0.05, 0.2, 1.0, 50), (90.0, 100.0, 0.03, 0.3, 0.5, 120)])
    check_calls(barrier_call_mc, [(100.0, 100.0, 130.0, 0.05, 0.2, 1.0, 50, 2000),
                                  (100.0, 95.0, 120.0, 0.01, 0.3, 0.5, 20, 500, 3)])
    prices = 100 * np.cumprod(1 + 0.01 * rng.standard_normal(300))
    check_calls(bollinger_backtest, [(prices,), (prices[:120], 10, 1.5)])
    check_calls(amortization, [(200000.0, 0.05, 30), (10000.0, 0.07, 5, 500.0)])
    R = 0.01 * rng.standard_normal((400, 3))
    check_calls(historical_var, [(R, np.array([0.5, 0.3, 0.2])), (R[:300], np.array([1 / 3] * 3), 0.01, 100)])


# ---- numerical methods ----

def romberg(f, a, b, levels=6):
    R = np.zeros((levels, levels))
    h = b - a
    R[0, 0] = 0.5 * h * (f(a) + f(b))
    for i in range(1, levels):
        h /= 2
        x = a + h * np.arange(1, 2 ** i, 2)
        R[i, 0] = 0.5 * R[i - 1, 0] + h * f(x).sum()
        for j in range(1, i + 1):
            R[i, j] = R[i, j - 1] + (R[i, j - 1] - R[i - 1, j - 1]) / (4 ** j - 1)
    return R[levels - 1, levels - 1], R

def adams_bashforth3(f, y0, t0, t1, n):
    h = (t1 - t0) / n
    t = np.linspace(t0, t1, n + 1)
    y = np.zeros((n + 1, len(y0)))
    y[0] = y0
    for i in range(2):  # start with Heun steps
        k1 = f(t[i], y[i])
        k2 = f(t[i] + h, y[i] + h * k1)
        y[i + 1] = y[i] + 0.5 * h * (k1 + k2)
    for i in range(2, n):
        y[i + 1] = y[i] + h / 12 * (23 * f(t[i], y[i]) - 16 * f(t[i - 1], y[i - 1]) + 5 * f(t[i - 2], y[i - 2]))
    return t, y

def van_der_pol(t, y, mu=1.5):
    return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])

def brent_root(f, a, b, tol=1e-12, maxiter=100):
    fa, fb = f(a), f(b)
    if fa * fb > 0:
        return np.nan, 0
    if abs(fa) < abs(fb):
        a, b, fa, fb = b, a, fb, fa
    c, fc, mflag, d = a, fa, True, 0.0
    for it in range(maxiter):
        if fb == 0 or abs(b - a) < tol:
            return b, it
        if fa != fc and fb != fc:
            s = (a * fb * fc / ((fa - fb) * (fa - fc)) + b * fa * fc / ((fb - fa) * (fb - fc))
                 + c * fa * fb / ((fc - fa) * (fc - fb)))
        else:
            s = b - fb * (b - a) / (fb - fa)
        cond1 = not ((3 * a + b) / 4 < s < b or b < s < (3 * a + b) / 4)
        cond2 = mflag and abs(s - b) >= abs(b - c) / 2
        cond3 = (not mflag) and abs(s - b) >= abs(c - d) / 2
        if cond1 or cond2 or cond3:
            s = (a + b) / 2
            mflag = True
        else:
            mflag = False
        fs = f(s)
        d, c, fc = c, b, fb
        if fa * fs < 0:
            b, fb = s, fs
        else:
            a, fa = s, fs
        if abs(fa) < abs(fb):
            a, b, fa, fb = b, a, fb, fa
    return b, maxiter

def householder_qr(A):
    m, n = A.shape
    R = A.astype(np.float64).copy()
    Q = np.eye(m)
    for k in range(min(m - 1, n)):
        x = R[k:, k]
        v = x.copy()
        v[0] += np.copysign(np.linalg.norm(x), x[0])
        v /= np.linalg.norm(v)
        R[k:, :] -= 2.0 * np.outer(v, v @ R[k:, :])
        Q[:, k:] -= 2.0 * np.outer(Q[:, k:] @ v, v)
    return Q, np.triu(R)

def jacobi_eigenvalues(A, tol=1e-10, max_sweeps=50):
    A = A.copy()
    n = A.shape[0]
    V = np.eye(n)
    for sweep in range(max_sweeps):
        off = np.sqrt(np.sum(A ** 2) - np.sum(np.diag(A) ** 2))
        if off < tol:
            break
        for p in range(n - 1):
            for q in range(p + 1, n):
                if abs(A[p, q]) < 1e-15:
                    continue
                theta = (A[q, q] - A[p, p]) / (2 * A[p, q])
                t = np.sign(theta) / (abs(theta) + np.sqrt(theta ** 2 + 1)) if theta != 0 else 1.0
                c = 1 / np.sqrt(t ** 2 + 1)
                s = t * c
                J = np.eye(n)
                J[p, p] = J[q, q] = c
                J[p, q] = s
                J[q, p] = -s
                A = J.T @ A @ J
                V = V @ J
    order = np.argsort(np.diag(A))
    return np.diag(A)[order], V[:, order], sweep

def natural_cubic_spline(x, y, xq):
    n = len(x) - 1
    h = np.diff(x)
    alpha = np.zeros(n + 1)
    alpha[1:n] = 3 / h[1:] * (y[2:] - y[1:-1]) - 3 / h[:-1] * (y[1:-1] - y[:-2])
    l = np.ones(n + 1); mu = np.zeros(n + 1); z = np.zeros(n + 1)
    for i in range(1, n):
        l[i] = 2 * (x[i + 1] - x[i - 1]) - h[i - 1] * mu[i - 1]
        mu[i] = h[i] / l[i]
        z[i] = (alpha[i] - h[i - 1] * z[i - 1]) / l[i]
    c = np.zeros(n + 1); b = np.zeros(n); d = np.zeros(n)
    for j in range(n - 1, -1, -1):
        c[j] = z[j] - mu[j] * c[j + 1]
        b[j] = (y[j + 1] - y[j]) / h[j] - h[j] * (c[j + 1] + 2 * c[j]) / 3
        d[j] = (c[j + 1] - c[j]) / (3 * h[j])
    k = np.clip(np.searchsorted(x, xq) - 1, 0, n - 1)
    dx = xq - x[k]
    return y[k] + b[k] * dx + c[k] * dx ** 2 + d[k] * dx ** 3

def chebyshev_clenshaw(coeffs, x, a=-1.0, b=1.0):
    t = (2 * x - a - b) / (b - a)
    b1 = np.zeros_like(t)
    b2 = np.zeros_like(t)
    for c in coeffs[:0:-1]:
        b1, b2 = 2 * t * b1 - b2 + c, b1
    return t * b1 - b2 + coeffs[0]

def newton_system(x0, tol=1e-12, maxiter=50):
    x = np.asarray(x0, dtype=float)
    for it in range(maxiter):
        F = np.array([x[0] ** 2 + x[1] ** 2 - 4.0, np.exp(x[0]) + x[1] - 1.0])
        J = np.array([[2 * x[0], 2 * x[1]], [np.exp(x[0]), 1.0]])
        dx = np.linalg.solve(J, -F)
        x = x + dx
        if np.linalg.norm(dx) < tol:
            return x, it + 1
    return x, maxiter

def test_numerical_methods():
    rng = np.random.default_rng(3)
    check_calls(romberg, [(np.exp, 0.0, 1.0), (np.sin, 0.0, np.pi, 8)])
    check_calls(adams_bashforth3, [(van_der_pol, np.array([2.0, 0.0]), 0.0, 10.0, 200),
                                   (van_der_pol, np.array([0.5, 0.5]), 0.0, 5.0, 50)])
    cubic = lambda x: x ** 3 - 2 * x - 5
    check_calls(brent_root, [(cubic, 2.0, 3.0), (np.cos, 0.0, 2.0), (cubic, 3.0, 4.0)])
    check_calls(householder_qr, [(rng.random((5, 4)),), (rng.integers(-5, 5, (8, 8)),)])
    S = rng.random((5, 5)); S = S + S.T
    S2 = rng.random((8, 8)); S2 = S2 @ S2.T
    check_calls(jacobi_eigenvalues, [(S,), (S2,)])
    xs = np.linspace(0, 10, 12)
    check_calls(natural_cubic_spline, [(xs, np.sin(xs), np.linspace(0, 10, 50)),
                                       (np.sort(rng.random(30)) * 5, rng.random(30), rng.random(7) * 5)])
    check_calls(chebyshev_clenshaw, [(np.array([1.0, 0.5, 0.25, 0.125]), np.linspace(-1, 1, 9)),
                                     (rng.random(12), rng.random((3, 4)) * 4, 0.0, 4.0)])
    check_calls(newton_system, [(np.array([1.0, -1.0]),), ([-1.5, 0.5],)])


# ---- machine learning from scratch ----

def pegasos_svm(X, y, lam=0.01, epochs=5, seed=0):
    rng = np.random.default_rng(seed)
    n, d = X.shape
    w = np.zeros(d)
    t = 0
    for _ in range(epochs):
        for i in rng.permutation(n):
            t += 1
            eta = 1.0 / (lam * t)
            if y[i] * (X[i] @ w) < 1:
                w = (1 - eta * lam) * w + eta * y[i] * X[i]
            else:
                w = (1 - eta * lam) * w
    margin = y * (X @ w)
    return w, float(np.mean(margin > 0))

def gmm_em_1d(x, k=2, iters=30):
    n = len(x)
    mu = np.quantile(x, np.linspace(0.1, 0.9, k))
    var = np.full(k, x.var())
    pi = np.full(k, 1.0 / k)
    log_lik = []
    for _ in range(iters):
        dens = pi / np.sqrt(2 * np.pi * var) * np.exp(-(x[:, None] - mu) ** 2 / (2 * var))
        total = dens.sum(axis=1, keepdims=True)
        resp = dens / total
        log_lik.append(np.log(total).sum())
        nk = resp.sum(axis=0)
        mu = (resp * x[:, None]).sum(axis=0) / nk
        var = (resp * (x[:, None] - mu) ** 2).sum(axis=0) / nk
        pi = nk / n
    return mu, var, pi, np.array(log_lik)

def hmm_forward_scaled(obs, A, B, pi):
    T = len(obs)
    N = A.shape[0]
    alpha = np.zeros((T, N))
    scale = np.zeros(T)
    alpha[0] = pi * B[:, obs[0]]
    scale[0] = alpha[0].sum()
    alpha[0] /= scale[0]
    for t in range(1, T):
        alpha[t] = (alpha[t - 1] @ A) * B[:, obs[t]]
        scale[t] = alpha[t].sum()
        alpha[t] /= scale[t]
    return np.log(scale).sum(), alpha

def fisher_lda(X, y):
    classes = np.unique(y)
    mean_all = X.mean(axis=0)
    d = X.shape[1]
    Sw = np.zeros((d, d)); Sb = np.zeros((d, d))
    for c in classes:
        Xc = X[y == c]
        mc = Xc.mean(axis=0)
        Sw += (Xc - mc).T @ (Xc - mc)
        diff = (mc - mean_all)[:, None]
        Sb += len(Xc) * diff @ diff.T
    M = np.linalg.inv(Sw) @ Sb
    w = M[:, 0] / np.linalg.norm(M[:, 0])
    return X @ w, Sw, Sb

def best_gini_split(x, y, n_classes):
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    n = len(xs)
    left = np.zeros(n_classes)
    right = np.bincount(ys, minlength=n_classes).astype(np.float64)
    best_gini, best_thr = np.inf, None
    for i in range(n - 1):
        left[ys[i]] += 1
        right[ys[i]] -= 1
        if xs[i] == xs[i + 1]:
            continue
        nl, nr = i + 1, n - i - 1
        gl = 1.0 - np.sum((left / nl) ** 2)
        gr = 1.0 - np.sum((right / nr) ** 2)
        g = (nl * gl + nr * gr) / n
        if g < best_gini:
            best_gini, best_thr = g, (xs[i] + xs[i + 1]) / 2
    return best_gini, best_thr

def mean_shift(points, bandwidth, iters=20, tol=1e-6):
    modes = points.copy()
    for it in range(iters):
        d2 = ((modes[:, None, :] - points[None, :, :]) ** 2).sum(-1)
        w = np.exp(-d2 / (2 * bandwidth ** 2))
        new = w @ points / w.sum(axis=1, keepdims=True)
        shift = np.abs(new - modes).max()
        modes = new
        if shift < tol:
            break
    return modes, it

def test_machine_learning():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((60, 3)); y = np.where(X @ np.array([1.0, -2.0, 0.5]) > 0, 1, -1)
    check_calls(pegasos_svm, [(X, y), (X[:30], y[:30], 0.1, 3, 4)])
    x = np.concatenate([rng.normal(-2, 0.5, 100), rng.normal(3, 1.0, 150)])
    check_calls(gmm_em_1d, [(x,), (x[::3], 3, 10)])
    A = np.array([[0.7, 0.3], [0.4, 0.6]]); B = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
    check_calls(hmm_forward_scaled, [(rng.integers(0, 3, 30), A, B, np.array([0.6, 0.4])),
                                     (rng.integers(0, 3, 500), A, B, np.array([0.5, 0.5]))])
    Xl = rng.standard_normal((90, 4)) + np.repeat(np.eye(3, 4) * 3, 30, axis=0)
    check_calls(fisher_lda, [(Xl, np.repeat(np.arange(3), 30)), (Xl[:60], np.repeat(np.arange(2), 30))])
    check_calls(best_gini_split, [(rng.random(40), rng.integers(0, 3, 40), 3),
                                  (np.round(rng.random(100), 1), rng.integers(0, 2, 100), 2)])
    P = np.concatenate([rng.normal(0, 0.3, (20, 2)), rng.normal(3, 0.3, (20, 2))])
    check_calls(mean_shift, [(P, 0.8), (P[::2], 1.5, 5)])


# ---- statistics ----

def kaplan_meier(durations, observed):
    order = np.argsort(durations, kind="stable")
    t, e = durations[order], observed[order].astype(bool)
    times = np.unique(t[e])
    surv = np.ones(len(times))
    s = 1.0
    for k, u in enumerate(times):
        at_risk = np.sum(t >= u)
        deaths = np.sum((t == u) & e)
        s *= 1.0 - deaths / at_risk
        surv[k] = s
    return times, surv

def spearman(x, y):
    def ranks(a):
        r = np.empty(len(a))
        r[np.argsort(a, kind="stable")] = np.arange(1, len(a) + 1)
        return r
    rx, ry = ranks(x), ranks(y)
    d = rx - ry
    n = len(x)
    return 1 - 6 * np.sum(d ** 2) / (n * (n ** 2 - 1))

def permutation_test(a, b, n_perm=500, seed=1):
    rng = np.random.default_rng(seed)
    observed = a.mean() - b.mean()
    pooled = np.concatenate([a, b])
    count = 0
    for _ in range(n_perm):
        rng.shuffle(pooled)
        diff = pooled[:len(a)].mean() - pooled[len(a):].mean()
        if abs(diff) >= abs(observed):
            count += 1
    return observed, (count + 1) / (n_perm + 1)

def gaussian_kde(samples, grid, bandwidth=None):
    n = samples.size
    if bandwidth is None:
        bandwidth = 1.06 * samples.std(ddof=1) * n ** (-1 / 5)
    u = (grid[:, None] - samples[None, :]) / bandwidth
    return np.exp(-0.5 * u ** 2).sum(axis=1) / (n * bandwidth * np.sqrt(2 * np.pi))

def ks_statistic(a, b):
    a = np.sort(a); b = np.sort(b)
    allv = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, allv, side="right") / len(a)
    cdf_b = np.searchsorted(b, allv, side="right") / len(b)
    return np.max(np.abs(cdf_a - cdf_b))

def gini_coefficient(incomes):
    x = np.sort(incomes.astype(np.float64))
    n = len(x)
    cum = np.cumsum(x)
    lorenz = np.insert(cum / cum[-1], 0, 0.0)
    area = np.trapz(lorenz, dx=1.0 / n) if hasattr(np, "trapz") else np.trapezoid(lorenz, dx=1.0 / n)
    return 1 - 2 * area, lorenz

def test_statistics():
    rng = np.random.default_rng(21)
    d = rng.integers(1, 20, 50).astype(np.float64); o = rng.integers(0, 2, 50)
    check_calls(kaplan_meier, [(d, o), (d[:20], np.ones(20, dtype=np.int64))])
    check_calls(spearman, [(rng.random(30), rng.random(30)), (rng.standard_normal(200), rng.standard_normal(200))])
    check_calls(permutation_test, [(rng.normal(0, 1, 20), rng.normal(0.5, 1, 25)), (rng.normal(0, 1, 10), rng.normal(0, 1, 10), 100, 7)])
    check_calls(gaussian_kde, [(rng.standard_normal(100), np.linspace(-3, 3, 40))])
    # float32 exponentials and sums, divided by NumPy's float64 scalar: float64 results
    check_calls(gaussian_kde, [(rng.standard_normal(30).astype(np.float32),
                                np.linspace(-2, 2, 10, dtype=np.float32), 0.5)], float32_inputs=True)
    check_calls(ks_statistic, [(rng.standard_normal(50), rng.standard_normal(60)), (rng.random(10), rng.random(10) + 0.5)])
    check_calls(gini_coefficient, [(rng.integers(1, 1000, 100),), (rng.pareto(2.0, 500),)])
