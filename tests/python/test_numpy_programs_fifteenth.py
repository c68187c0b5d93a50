"""A fifteenth set of NumPy programs as people write them, numerics and number theory: a dense
tableau simplex with Bland's rule, Durand-Kerner polynomial roots in complex arithmetic,
barycentric Lagrange and monotone (Fritsch-Carlson) cubic interpolation, Clenshaw-Curtis
weights, Dormand-Prince with step-size control, implicit Euler with Newton iterations, the
unshifted and shifted QR eigenvalue iterations, inverse iteration, restarted GMRES; factorials
and powers as digit arrays with carry loops, the Rabinowitz-Wagon pi spigot, continued fractions
of square roots, N-queens by backtracking over boolean arrays, Pascal's triangle mod p and the
extended Euclid on arrays. Each is compiled once and called with several inputs, twice each,
agreeing with NumPy on values, dtypes, shapes and updated arguments."""
import math

import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- optimisation and roots ----

def simplex_max(c, A, b, max_iter=50):
    # maximise c x subject to A x <= b, x >= 0 (b >= 0): slack basis, Bland's rule
    m, n = A.shape
    T = np.zeros((m + 1, n + m + 1))
    T[:m, :n] = A
    T[:m, n:n + m] = np.eye(m)
    T[:m, -1] = b
    T[-1, :n] = -c
    basis = list(range(n, n + m))
    for it in range(max_iter):
        row = T[-1, :-1]
        candidates = np.nonzero(row < -1e-12)[0]
        if len(candidates) == 0:
            break
        col = candidates[0]
        ratios = np.full(m, np.inf)
        positive = T[:m, col] > 1e-12
        ratios[positive] = T[:m, -1][positive] / T[:m, col][positive]
        if np.all(np.isinf(ratios)):
            return None, np.inf, it
        r = int(np.argmin(ratios))
        T[r] /= T[r, col]
        for i in range(m + 1):
            if i != r:
                T[i] -= T[i, col] * T[r]
        basis[r] = col
    x = np.zeros(n + m)
    x[basis] = T[:m, -1]
    return x[:n], T[-1, -1], it

def durand_kerner(coeffs, iters=200, tol=1e-12):
    a = np.asarray(coeffs, dtype=complex) / coeffs[0]
    n = len(a) - 1
    roots = (0.4 + 0.9j) ** np.arange(n)
    for k in range(iters):
        old = roots.copy()
        for i in range(n):
            num = np.polyval(a, roots[i])
            den = np.prod(roots[i] - np.delete(roots, i))
            roots[i] = roots[i] - num / den
        if np.max(np.abs(roots - old)) < tol:
            break
    return np.sort_complex(roots), k

# ---- interpolation and quadrature ----

def barycentric_lagrange(xs, ys, t):
    n = len(xs)
    w = np.ones(n)
    for j in range(n):
        for k in range(n):
            if k != j:
                w[j] /= xs[j] - xs[k]
    diff = t[:, None] - xs[None, :]
    exact = diff == 0
    diff[exact] = 1.0
    terms = w / diff
    out = (terms @ ys) / terms.sum(axis=1)
    rows, cols = np.nonzero(exact)
    out[rows] = ys[cols]
    return out

def pchip(x, y, t):
    h = np.diff(x)
    delta = np.diff(y) / h
    d = np.zeros_like(y)
    for k in range(1, len(x) - 1):
        if delta[k - 1] * delta[k] > 0:
            w1 = 2 * h[k] + h[k - 1]
            w2 = h[k] + 2 * h[k - 1]
            d[k] = (w1 + w2) / (w1 / delta[k - 1] + w2 / delta[k])
    d[0], d[-1] = delta[0], delta[-1]
    idx = np.clip(np.searchsorted(x, t) - 1, 0, len(x) - 2)
    s = (t - x[idx]) / h[idx]
    h00 = (1 + 2 * s) * (1 - s) ** 2
    h10 = s * (1 - s) ** 2
    h01 = s ** 2 * (3 - 2 * s)
    h11 = s ** 2 * (s - 1)
    return h00 * y[idx] + h10 * h[idx] * d[idx] + h01 * y[idx + 1] + h11 * h[idx] * d[idx + 1]

def clenshaw_curtis(f_values_fn, n):
    theta = np.pi * np.arange(n + 1) / n
    x = np.cos(theta)
    w = np.zeros(n + 1)
    v = np.ones(n - 1)
    if n % 2 == 0:
        w[0] = w[n] = 1.0 / (n ** 2 - 1)
        for k in range(1, n // 2):
            v -= 2 * np.cos(2 * k * theta[1:-1]) / (4 * k ** 2 - 1)
        v -= np.cos(n * theta[1:-1]) / (n ** 2 - 1)
    else:
        w[0] = w[n] = 1.0 / n ** 2
        for k in range(1, (n - 1) // 2 + 1):
            v -= 2 * np.cos(2 * k * theta[1:-1]) / (4 * k ** 2 - 1)
    w[1:-1] = 2 * v / n
    return w @ f_values_fn(x), w

# ---- ODEs ----

def dormand_prince(y0, t_end, mu=1.0, rtol=1e-6, atol=1e-9, h=0.01):
    def f(y):
        return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])
    c = [0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1]
    a = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
    b5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
    b4 = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                   1 / 40])
    t, y = 0.0, np.array(y0, dtype=float)
    accepted = rejected = 0
    while t < t_end:
        h = min(h, t_end - t)
        k = np.zeros((7, len(y)))
        for i in range(7):
            k[i] = f(y + h * (np.array(a[i]) @ k[:i] if i else 0.0))
        y5 = y + h * (b5 @ k)
        err = h * ((b5 - b4) @ k)
        scale = atol + rtol * np.maximum(np.abs(y), np.abs(y5))
        e = np.sqrt(np.mean((err / scale) ** 2))
        if e <= 1.0:
            t += h
            y = y5
            accepted += 1
        else:
            rejected += 1
        h *= min(5.0, max(0.2, 0.9 * e ** -0.2 if e > 0 else 5.0))
    return y, accepted, rejected

def implicit_euler(y0, k1, k2, k3, h, steps, newton_iters=8):
    # Robertson's stiff chemical kinetics
    def f(y):
        return np.array([-k1 * y[0] + k3 * y[1] * y[2],
                         k1 * y[0] - k2 * y[1] ** 2 - k3 * y[1] * y[2],
                         k2 * y[1] ** 2])

    def jac(y):
        return np.array([[-k1, k3 * y[2], k3 * y[1]],
                         [k1, -2 * k2 * y[1] - k3 * y[2], -k3 * y[1]],
                         [0.0, 2 * k2 * y[1], 0.0]])
    y = np.array(y0, dtype=float)
    history = [y.copy()]
    for _ in range(steps):
        z = y.copy()
        for _ in range(newton_iters):
            g = z - y - h * f(z)
            J = np.eye(3) - h * jac(z)
            dz = np.linalg.solve(J, g)
            z -= dz
            if np.linalg.norm(dz) < 1e-12:
                break
        y = z
        history.append(y.copy())
    return np.array(history)

# ---- eigenvalues and Krylov ----

def qr_eigenvalues(A, iters=200, tol=1e-10):
    Ak = A.astype(float).copy()
    n = Ak.shape[0]
    for k in range(iters):
        mu = Ak[-1, -1]
        Q, R = np.linalg.qr(Ak - mu * np.eye(n))
        Ak = R @ Q + mu * np.eye(n)
        if np.max(np.abs(np.tril(Ak, -1))) < tol:
            break
    return np.sort(np.diag(Ak)), k

def inverse_iteration(A, shift, iters=50):
    n = A.shape[0]
    v = np.ones(n) / np.sqrt(n)
    M = A - shift * np.eye(n)
    lam = shift
    for i in range(iters):
        w = np.linalg.solve(M, v)
        v_new = w / np.linalg.norm(w)
        if v_new @ v < 0:
            v_new = -v_new
        lam = v_new @ A @ v_new
        if np.linalg.norm(v_new - v) < 1e-12:
            v = v_new
            break
        v = v_new
    return lam, v, i

def gmres(A, b, restart=5, max_outer=20, tol=1e-10):
    n = len(b)
    x = np.zeros(n)
    residuals = []
    for outer in range(max_outer):
        r = b - A @ x
        beta = np.linalg.norm(r)
        residuals.append(beta)
        if beta < tol:
            break
        m = min(restart, n)
        V = np.zeros((n, m + 1))
        H = np.zeros((m + 1, m))
        V[:, 0] = r / beta
        for j in range(m):
            w = A @ V[:, j]
            for i in range(j + 1):
                H[i, j] = w @ V[:, i]
                w = w - H[i, j] * V[:, i]
            H[j + 1, j] = np.linalg.norm(w)
            if H[j + 1, j] < 1e-14:
                m = j + 1
                break
            V[:, j + 1] = w / H[j + 1, j]
        e1 = np.zeros(m + 1)
        e1[0] = beta
        y = np.linalg.lstsq(H[:m + 1, :m], e1, rcond=None)[0]
        x = x + V[:, :m] @ y
    return x, residuals

# ---- number theory with digit arrays ----

def big_factorial_digits(n, max_digits=200):
    digits = np.zeros(max_digits, dtype=np.int64)
    digits[0] = 1
    length = 1
    for k in range(2, n + 1):
        carry = 0
        for i in range(length):
            prod = digits[i] * k + carry
            digits[i] = prod % 10
            carry = prod // 10
        while carry:
            digits[length] = carry % 10
            carry //= 10
            length += 1
    return digits[:length][::-1], int(digits[:length].sum())

def power_of_two_digits(exponent, base=10):
    size = int(exponent * math.log(2) / math.log(base)) + 2
    digits = np.zeros(size, dtype=np.int32)
    digits[0] = 1
    for _ in range(exponent):
        digits *= 2
        carry = digits // base
        digits %= base
        digits[1:] += carry[:-1]
        while np.any(digits >= base):
            carry = digits // base
            digits %= base
            digits[1:] += carry[:-1]
    top = np.nonzero(digits)[0].max()
    return digits[:top + 1][::-1]

def pi_spigot(n_digits):
    length = 10 * n_digits // 3 + 1
    a = np.full(length, 2, dtype=np.int64)
    out = []
    nines, predigit = 0, 0
    for _ in range(n_digits):
        q = 0
        for i in range(length - 1, 0, -1):
            x = 10 * a[i] + q * (i + 1)
            a[i] = x % (2 * i + 1)
            q = x // (2 * i + 1)
        x = 10 * a[0] + q
        a[0] = x % 10
        q = x // 10
        if q == 9:
            nines += 1
        elif q == 10:
            out.append(predigit + 1)
            out.extend([0] * nines)
            predigit, nines = 0, 0
        else:
            out.append(predigit)
            out.extend([9] * nines)
            predigit, nines = q, 0
    out.append(predigit)
    return np.array(out[1:])

def sqrt_continued_fraction(n, terms=12):
    a0 = int(math.isqrt(n))
    m, d, a = 0, 1, a0
    cf = np.zeros(terms, dtype=np.int64)
    cf[0] = a0
    for i in range(1, terms):
        if a0 * a0 == n:
            break
        m = d * a - m
        d = (n - m * m) // d
        a = (a0 + m) // d
        cf[i] = a
    h = np.zeros(terms, dtype=np.int64)
    k = np.zeros(terms, dtype=np.int64)
    h[0], k[0] = cf[0], 1
    h[1], k[1] = cf[1] * cf[0] + 1, cf[1]
    for i in range(2, terms):
        h[i] = cf[i] * h[i - 1] + h[i - 2]
        k[i] = cf[i] * k[i - 1] + k[i - 2]
    return cf, h / k

def n_queens(n):
    cols = np.zeros(n, dtype=bool)
    diag = np.zeros(2 * n - 1, dtype=bool)
    anti = np.zeros(2 * n - 1, dtype=bool)
    count = 0

    def place(row):
        nonlocal count
        if row == n:
            count += 1
            return
        for c in range(n):
            if not (cols[c] or diag[row + c] or anti[row - c + n - 1]):
                cols[c] = diag[row + c] = anti[row - c + n - 1] = True
                place(row + 1)
                cols[c] = diag[row + c] = anti[row - c + n - 1] = False
    place(0)
    return count

def pascal_mod(rows, p):
    tri = np.zeros((rows, rows), dtype=np.int64)
    tri[:, 0] = 1
    for r in range(1, rows):
        tri[r, 1:r + 1] = (tri[r - 1, :r] + tri[r - 1, 1:r + 1]) % p
    return tri, np.count_nonzero(tri, axis=1)

def extended_gcd(a, b):
    old_r, r = a.astype(np.int64), b.astype(np.int64)
    old_s, s = np.ones_like(old_r), np.zeros_like(old_r)
    old_t, t = np.zeros_like(old_r), np.ones_like(old_r)
    while np.any(r != 0):
        nz = r != 0
        q = np.where(nz, old_r // np.where(nz, r, 1), 0)
        old_r, r = np.where(nz, r, old_r), np.where(nz, old_r - q * r, r)
        old_s, s = np.where(nz, s, old_s), np.where(nz, old_s - q * s, s)
        old_t, t = np.where(nz, t, old_t), np.where(nz, old_t - q * t, t)
    return old_r, old_s, old_t


def rng(seed=0):
    return np.random.default_rng(seed)


def test_optimisation_and_roots():
    A = np.array([[1.0, 1.0], [2.0, 1.0], [1.0, 3.0]])
    check_calls(simplex_max, [(np.array([3.0, 2.0]), A, np.array([4.0, 6.0, 9.0])),
                              (np.array([1.0, 1.0, 1.0]), rng(1).random((4, 3)) + 0.1,
                               rng(2).random(4) + 1.0),
                              (np.array([1.0, -1.0]), np.array([[-1.0, 1.0]]),
                               np.array([1.0]))])
    check_calls(durand_kerner, [([1.0, -6.0, 11.0, -6.0],), ([2.0, 0.0, -3.0, 1.0, 5.0],)])


def test_interpolation_and_quadrature():
    xs = np.linspace(-1, 1, 7)
    check_calls(barycentric_lagrange, [(xs, np.cos(3 * xs), np.linspace(-1, 1, 15)),
                                       (xs[:4], xs[:4] ** 3, np.array([0.1, xs[2]]))])
    x = np.cumsum(rng(1).random(9) + 0.1)
    check_calls(pchip, [(x, np.cumsum(rng(2).random(9)), np.linspace(x[0], x[-1], 20)),
                        (np.arange(5.0), np.array([0.0, 1, 0, 2, 2]), np.array([0.5, 3.5]))])
    check_calls(clenshaw_curtis, [(np.exp, 8), (np.cos, 9), (np.exp, 12)])


def test_odes():
    check_calls(dormand_prince, [([2.0, 0.0], 2.0), ([0.5, 0.5], 1.0, 3.0, 1e-4)])
    check_calls(implicit_euler, [([1.0, 0.0, 0.0], 0.04, 3e7, 1e4, 0.01, 20),
                                 ([0.9, 0.05, 0.05], 0.04, 3e5, 1e3, 0.1, 8)])


def test_eigenvalues_and_krylov():
    def spd(seed, n):
        m = rng(seed).random((n, n))
        return m @ m.T + n * np.eye(n)
    check_calls(qr_eigenvalues, [(spd(1, 4),), (spd(2, 5),)])
    check_calls(inverse_iteration, [(spd(1, 4), 3.0), (spd(3, 6), 0.0)])
    check_calls(gmres, [(spd(1, 6), rng(4).random(6)), (spd(2, 4), np.ones(4), 2)])


def test_number_theory():
    check_calls(big_factorial_digits, [(10,), (25,), (30, 60)])
    check_calls(power_of_two_digits, [(50,), (64,), (20, 2)])
    check_calls(pi_spigot, [(12,), (20,)])
    check_calls(sqrt_continued_fraction, [(2,), (23,), (7, 8)])
    check_calls(n_queens, [(5,), (6,)])
    check_calls(pascal_mod, [(8, 2), (10, 3)])
    check_calls(extended_gcd, [(np.array([240, 46, 17, 0]), np.array([46, 240, 5, 7])),
                               (rng(1).integers(1, 1000, 9), rng(2).integers(1, 1000, 9))])
