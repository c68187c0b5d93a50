"""A twelfth set of NumPy programs as people write them, from textbooks and recipe collections:
ODE integrators with an adaptive step (Runge-Kutta-Fehlberg), root finders (secant, Illinois),
dense linear algebra by hand (LU with partial pivoting, Gauss-Jordan inversion, Givens QR,
Rayleigh-quotient iteration, Lanczos), Krylov and relaxation solvers (BiCGSTAB, steepest
descent, red-black SOR, a two-grid cycle), interpolation (de Boor, de Casteljau, Neville,
Newton's divided differences), quadrature (Gauss-Legendre nodes by Newton, adaptive Simpson
with an explicit stack), PDEs (Crank-Nicolson heat with a tridiagonal solve, Burgers upwind,
Lax-Wendroff advection) and image filters written with loops (bilateral, Harris, a chamfer
distance transform, flood fill, non-maximum suppression). Each is compiled once and called
with several inputs, twice each, agreeing with NumPy on values, dtypes, shapes, Python types
and the arrays updated in place."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- ODEs and roots ----

def decay_oscillator(t, y):
    return np.array([y[1], -y[0] - 0.1 * y[1] + np.sin(t)])

def rkf45(f, y0, t0, t1, tol=1e-6, h=0.1, max_steps=10000):
    t, y = t0, np.asarray(y0, dtype=np.float64)
    ts, ys = [t], [y]
    steps = 0
    while t < t1 and steps < max_steps:
        h = min(h, t1 - t)
        k1 = h * f(t, y)
        k2 = h * f(t + h / 4, y + k1 / 4)
        k3 = h * f(t + 3 * h / 8, y + 3 * k1 / 32 + 9 * k2 / 32)
        k4 = h * f(t + 12 * h / 13, y + 1932 * k1 / 2197 - 7200 * k2 / 2197 + 7296 * k3 / 2197)
        k5 = h * f(t + h, y + 439 * k1 / 216 - 8 * k2 + 3680 * k3 / 513 - 845 * k4 / 4104)
        k6 = h * f(t + h / 2, y - 8 * k1 / 27 + 2 * k2 - 3544 * k3 / 2565 + 1859 * k4 / 4104
                   - 11 * k5 / 40)
        y4 = y + 25 * k1 / 216 + 1408 * k3 / 2565 + 2197 * k4 / 4104 - k5 / 5
        y5 = y + 16 * k1 / 135 + 6656 * k3 / 12825 + 28561 * k4 / 56430 - 9 * k5 / 50 + 2 * k6 / 55
        err = np.max(np.abs(y5 - y4))
        steps += 1
        if err <= tol:
            t, y = t + h, y4
            ts.append(t)
            ys.append(y)
        s = 0.84 * (tol / max(err, 1e-16)) ** 0.25
        h = h * min(max(s, 0.1), 4.0)
    return np.array(ts), np.array(ys), steps

def secant_root(c, x0, x1, tol=1e-12, maxit=50):
    f0 = x0 ** 3 - 2 * x0 - c
    f1 = x1 ** 3 - 2 * x1 - c
    for it in range(maxit):
        if f1 == f0:
            return x1, it
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        if abs(x2 - x1) < tol:
            return x2, it + 1
        x0, f0 = x1, f1
        x1, f1 = x2, x2 ** 3 - 2 * x2 - c
    return x1, maxit

def illinois(c, a, b, tol=1e-10, maxit=100):
    fa, fb = np.cos(a) - c * a, np.cos(b) - c * b
    side = 0
    x = a
    for _ in range(maxit):
        x = (a * fb - b * fa) / (fb - fa)
        if abs(b - a) < tol * abs(b + a):
            break
        fx = np.cos(x) - c * x
        if fx * fb > 0:
            b, fb = x, fx
            if side == -1:
                fa /= 2
            side = -1
        elif fa * fx > 0:
            a, fa = x, fx
            if side == 1:
                fb /= 2
            side = 1
        else:
            break
    return x

def test_odes_and_roots():
    check_calls(rkf45, [(decay_oscillator, np.array([1.0, 0.0]), 0.0, 5.0),
                        (decay_oscillator, np.array([0.0, 2.0]), 0.0, 2.0, 1e-9, 0.5)])
    check_calls(secant_root, [(5.0, 1.0, 3.0), (1.0, 1.0, 2.0, 1e-6), (np.float64(3.0), 1.5, 2.5)])
    check_calls(illinois, [(1.0, 0.0, 1.0), (0.5, 0.0, 2.0, 1e-12), (2.0, 0.0, 0.6, 1e-8, 5)])


# ---- dense linear algebra by hand ----

def lu_partial_pivot(A):
    n = A.shape[0]
    LU = A.astype(np.float64)
    perm = np.arange(n)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(LU[k:, k]))
        if LU[p, k] == 0:
            continue
        if p != k:
            LU[[k, p]] = LU[[p, k]]
            perm[[k, p]] = perm[[p, k]]
        LU[k + 1:, k] /= LU[k, k]
        LU[k + 1:, k + 1:] -= np.outer(LU[k + 1:, k], LU[k, k + 1:])
    return LU, perm

def lu_solve(A, b):
    LU, perm = lu_partial_pivot(A)
    n = len(b)
    y = b[perm].astype(np.float64)
    for i in range(1, n):
        y[i] -= LU[i, :i] @ y[:i]
    for i in range(n - 1, -1, -1):
        y[i] = (y[i] - LU[i, i + 1:] @ y[i + 1:]) / LU[i, i]
    return y

def gauss_jordan_inverse(A):
    n = A.shape[0]
    M = np.hstack([A.astype(np.float64), np.eye(n)])
    for col in range(n):
        pivot = col + np.argmax(np.abs(M[col:, col]))
        if abs(M[pivot, col]) < 1e-12:
            return None
        M[[col, pivot]] = M[[pivot, col]]
        M[col] = M[col] / M[col, col]
        for row in range(n):
            if row != col:
                M[row] -= M[row, col] * M[col]
    return M[:, n:]

def givens_qr(A):
    m, n = A.shape
    R = A.astype(np.float64).copy()
    Q = np.eye(m)
    for j in range(n):
        for i in range(m - 1, j, -1):
            a, b = R[i - 1, j], R[i, j]
            if b == 0:
                continue
            r = np.hypot(a, b)
            c, s = a / r, -b / r
            G = np.array([[c, -s], [s, c]])
            R[[i - 1, i], j:] = G @ R[[i - 1, i], j:]
            Q[:, [i - 1, i]] = Q[:, [i - 1, i]] @ G.T
    return Q, R

def rayleigh_quotient_iteration(A, x, tol=1e-12, maxit=30):
    x = x / np.linalg.norm(x)
    mu = x @ A @ x
    n = A.shape[0]
    for it in range(maxit):
        try:
            y = np.linalg.solve(A - mu * np.eye(n), x)
        except np.linalg.LinAlgError:
            break
        x = y / np.linalg.norm(y)
        new_mu = x @ A @ x
        if abs(new_mu - mu) < tol:
            mu = new_mu
            break
        mu = new_mu
    return mu, x * np.sign(x[np.argmax(np.abs(x))])

def lanczos(A, v, m):
    n = len(v)
    V = np.zeros((m + 1, n))
    alpha, beta = np.zeros(m), np.zeros(m)
    V[0] = v / np.linalg.norm(v)
    w = A @ V[0]
    k = m
    for j in range(m):
        alpha[j] = w @ V[j]
        w = w - alpha[j] * V[j] - (beta[j - 1] * V[j - 1] if j > 0 else 0)
        beta[j] = np.linalg.norm(w)
        if beta[j] < 1e-10:
            k = j + 1
            break
        V[j + 1] = w / beta[j]
        w = A @ V[j + 1]
    T = np.diag(alpha[:k]) + np.diag(beta[:k - 1], 1) + np.diag(beta[:k - 1], -1)
    return np.linalg.eigvalsh(T), k

def _spd(rng, n, dtype=np.float64):
    M = rng.standard_normal((n, n))
    return (M @ M.T + n * np.eye(n)).astype(dtype)

def test_dense_linear_algebra():
    rng = np.random.default_rng(12)
    A5, A1 = rng.standard_normal((5, 5)), np.array([[3.0]])
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    check_calls(lu_partial_pivot, [(A5,), (A1,), (rng.integers(-5, 5, (4, 4)),), (singular,)])
    check_calls(lu_solve, [(A5, rng.standard_normal(5)), (_spd(rng, 8), np.arange(8.0))])
    check_calls(gauss_jordan_inverse, [(A5,), (singular,), (_spd(rng, 3, np.float32),)])
    check_calls(givens_qr, [(rng.standard_normal((5, 3)),), (np.triu(np.ones((3, 3))),)])
    S = _spd(rng, 6)
    check_calls(rayleigh_quotient_iteration, [(S, np.ones(6)),
                                              (S, rng.standard_normal(6), 1e-8, 3)])
    check_calls(lanczos, [(S, np.ones(6), 4), (np.diag([1.0, 2.0, 3.0]), np.ones(3), 5)])


# ---- iterative solvers ----

def bicgstab(A, b, tol=1e-10, maxit=200):
    x = np.zeros_like(b)
    r = b - A @ x
    r_hat = r.copy()
    rho = alpha = omega = 1.0
    v = p = np.zeros_like(b)
    history = []
    for it in range(maxit):
        rho_new = r_hat @ r
        beta = (rho_new / rho) * (alpha / omega)
        rho = rho_new
        p = r + beta * (p - omega * v)
        v = A @ p
        alpha = rho / (r_hat @ v)
        s = r - alpha * v
        if np.linalg.norm(s) < tol:
            x = x + alpha * p
            return x, it + 1, history
        t = A @ s
        omega = (t @ s) / (t @ t)
        x = x + alpha * p + omega * s
        r = s - omega * t
        history.append(np.linalg.norm(r))
        if history[-1] < tol:
            return x, it + 1, history
    return x, maxit, history

def steepest_descent(A, b, x0, tol=1e-8, maxit=1000):
    x = x0.copy()
    r = b - A @ x
    it = 0
    while np.sqrt(r @ r) > tol and it < maxit:
        Ar = A @ r
        step = (r @ r) / (r @ Ar)
        x += step * r
        r -= step * Ar
        it += 1
    return x, it

def red_black_sor(f, h, omega=1.5, tol=1e-6, max_sweeps=500):
    n = f.shape[0]
    u = np.zeros_like(f)
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    interior = (ii > 0) & (ii < n - 1) & (jj > 0) & (jj < n - 1)
    colours = [interior & ((ii + jj) % 2 == 0), interior & ((ii + jj) % 2 == 1)]
    for sweep in range(max_sweeps):
        change = 0.0
        for mask in colours:
            nb = np.zeros_like(u)
            nb[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
            new = (1 - omega) * u + omega * 0.25 * (nb - h * h * f)
            change = max(change, np.abs(np.where(mask, new - u, 0)).max())
            u = np.where(mask, new, u)
        if change < tol:
            return u, sweep + 1
    return u, max_sweeps

def jacobi_smooth(u, f, h, sweeps, w=2 / 3):
    for _ in range(sweeps):
        u[1:-1] = (1 - w) * u[1:-1] + w * 0.5 * (u[:-2] + u[2:] + h * h * f[1:-1])
    return u

def two_grid(f, cycles=5, nu=3):
    n = len(f)
    h = 1.0 / (n - 1)
    u = np.zeros(n)
    m = (n + 1) // 2
    main = np.full(m - 2, 2.0) / (2 * h) ** 2
    off = np.full(m - 3, -1.0) / (2 * h) ** 2
    coarse = np.diag(main) + np.diag(off, 1) + np.diag(off, -1)
    residuals = []
    for _ in range(cycles):
        u = jacobi_smooth(u, f, h, nu)
        r = np.zeros(n)
        r[1:-1] = f[1:-1] + (u[:-2] - 2 * u[1:-1] + u[2:]) / h ** 2
        rc = r[::2].copy()
        rc[1:-1] = 0.25 * r[1:-2:2] + 0.5 * r[2:-1:2] + 0.25 * r[3::2]
        ec = np.zeros(m)
        ec[1:-1] = np.linalg.solve(coarse, rc[1:-1])
        e = np.interp(np.arange(n), np.arange(0, n, 2), ec)
        u = jacobi_smooth(u + e, f, h, nu)
        residuals.append(np.abs(r).max())
    return u, residuals

def test_iterative_solvers():
    rng = np.random.default_rng(3)
    A = _spd(rng, 10)
    b = rng.standard_normal(10)
    check_calls(bicgstab, [(A, b), (A + 0.5 * np.triu(A, 1), b, 1e-6, 5), (np.eye(3), np.ones(3))])
    check_calls(steepest_descent, [(A, b, np.zeros(10)), (A[:4, :4], b[:4], np.ones(4), 1e-3, 3)])
    f = rng.standard_normal((12, 12))
    check_calls(red_black_sor, [(f, 0.1), (f[:5, :5], 0.2, 1.2, 1e-3),
                                (f.astype(np.float32), 0.1, 1.5, 1e-3, 4)])
    x = np.linspace(0, 1, 17)
    check_calls(two_grid, [(np.sin(np.pi * x),), (np.ones(9), 2, 1)])


# ---- interpolation and quadrature ----

def de_boor(k, x, t, c, p):
    d = [c[j + k - p] for j in range(p + 1)]
    for r in range(1, p + 1):
        for j in range(p, r - 1, -1):
            alpha = (x - t[j + k - p]) / (t[j + 1 + k - r] - t[j + k - p])
            d[j] = (1.0 - alpha) * d[j - 1] + alpha * d[j]
    return d[p]

def bspline_curve(t, c, p, xs):
    out = np.empty(len(xs))
    for i, x in enumerate(xs):
        k = int(np.searchsorted(t, x, side="right")) - 1
        k = min(max(k, p), len(c) - 1)
        out[i] = de_boor(k, x, t, c, p)
    return out

def de_casteljau(points, ts):
    curve = np.empty((len(ts), points.shape[1]))
    for n, t in enumerate(ts):
        pts = points.astype(np.float64)
        while len(pts) > 1:
            pts = (1 - t) * pts[:-1] + t * pts[1:]
        curve[n] = pts[0]
    return curve

def neville(xs, ys, x):
    p = ys.astype(np.float64).copy()
    n = len(xs)
    for k in range(1, n):
        p[:n - k] = (((x - xs[k:]) * p[:n - k] + (xs[:n - k] - x) * p[1:n - k + 1])
                     / (xs[:n - k] - xs[k:]))
    return p[0]

def newton_divided(xs, ys, xq):
    coef = ys.astype(np.float64).copy()
    n = len(xs)
    for j in range(1, n):
        coef[j:] = (coef[j:] - coef[j - 1:-1]) / (xs[j:] - xs[:n - j])
    result = np.full_like(xq, coef[-1], dtype=np.float64)
    for j in range(n - 2, -1, -1):
        result = result * (xq - xs[j]) + coef[j]
    return coef, result

def gauss_legendre(n, tol=1e-14):
    i = np.arange(1, n + 1)
    x = np.cos(np.pi * (i - 0.25) / (n + 0.5))
    for _ in range(100):
        p0, p1 = np.ones_like(x), x.copy()
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        dp = n * (x * p1 - p0) / (x * x - 1)
        dx = p1 / dp
        x = x - dx
        if np.max(np.abs(dx)) < tol:
            break
    return x, 2 / ((1 - x * x) * dp * dp)

def gauss_integrate_exp(a, b, n=8):
    x, w = gauss_legendre(n)
    mid, half = (a + b) / 2, (b - a) / 2
    return (w * np.exp(mid[:, None] + half[:, None] * x)).sum(axis=1) * half

def adaptive_simpson(lo, hi, eps=1e-8, max_intervals=2000):
    def f(x):
        return np.sin(x) ** 2 * np.exp(-0.1 * x)
    total, count = 0.0, 0
    stack = [(lo, hi, eps)]
    while stack and count < max_intervals:
        a, b, tol = stack.pop()
        m = (a + b) / 2
        whole = (b - a) / 6 * (f(a) + 4 * f(m) + f(b))
        left = (m - a) / 6 * (f(a) + 4 * f((a + m) / 2) + f(m))
        right = (b - m) / 6 * (f(m) + 4 * f((m + b) / 2) + f(b))
        count += 1
        if abs(left + right - whole) <= 15 * tol:
            total += left + right + (left + right - whole) / 15
        else:
            stack.append((a, m, tol / 2))
            stack.append((m, b, tol / 2))
    return total, count

def test_interpolation_and_quadrature():
    t = np.array([0, 0, 0, 0, 1, 2, 3, 4, 4, 4, 4], dtype=np.float64)
    c = np.array([0.0, 1.0, -1.0, 2.0, 0.5, 1.5, 0.0])
    check_calls(bspline_curve, [(t, c, 3, np.linspace(0, 3.99, 13)), (t, c, 3, np.array([2.5]))])
    ctrl = np.array([[0, 0], [1, 2], [3, 3], [4, 0]])
    check_calls(de_casteljau, [(ctrl, np.linspace(0, 1, 7)),
                               (ctrl[:1].astype(np.float32), np.array([0.5]))])
    xs = np.array([0.0, 0.5, 1.0, 1.7, 2.0])
    check_calls(neville, [(xs, np.sin(xs), 0.8), (xs[:2], np.array([1, 3]), 0.25)])
    check_calls(newton_divided, [(xs, np.exp(xs), np.linspace(0, 2, 9)),
                                 (xs[:1], np.array([2.0]), np.ones(3))])
    check_calls(gauss_legendre, [(5,), (1,), (12, 1e-10)])
    check_calls(gauss_integrate_exp, [(np.array([0.0, 1.0]), np.array([1.0, 3.0])),
                                      (np.zeros(1), np.ones(1), 3)])
    check_calls(adaptive_simpson, [(0.0, 10.0), (0.0, 1.0, 1e-3), (0.0, 20.0, 1e-12, 10)])


# ---- PDEs ----

def tridiagonal_solve(a, b, c, d):
    n = len(d)
    cp, dp = np.empty(n), np.empty(n)
    cp[0], dp[0] = c[0] / b[0], d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.empty(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x

def crank_nicolson(u0, r, steps):
    n = len(u0) - 2
    a = np.full(n, -r / 2)
    b = np.full(n, 1 + r)
    c = np.full(n, -r / 2)
    u = u0.astype(np.float64).copy()
    for _ in range(steps):
        rhs = r / 2 * u[:-2] + (1 - r) * u[1:-1] + r / 2 * u[2:]
        u[1:-1] = tridiagonal_solve(a, b, c, rhs)
    return u

def burgers_upwind(u0, nu, dt, dx, steps):
    u = u0.copy()
    for n in range(steps):
        if not np.all(np.isfinite(u)):
            return u, n
        un = u.copy()
        u[1:-1] = (un[1:-1] - un[1:-1] * dt / dx * (un[1:-1] - un[:-2])
                   + nu * dt / dx ** 2 * (un[2:] - 2 * un[1:-1] + un[:-2]))
    return u, steps

def lax_wendroff(u0, c, steps):
    u = u0.copy()
    for _ in range(steps):
        up, um = np.roll(u, -1), np.roll(u, 1)
        u = u - c / 2 * (up - um) + c * c / 2 * (up - 2 * u + um)
    return u

def test_pdes():
    x = np.linspace(0, 1, 21)
    check_calls(crank_nicolson, [(np.sin(np.pi * x), 0.8, 20), (np.array([0, 1, 1, 0]), 0.5, 3)])
    u0 = np.where((x > 0.2) & (x < 0.5), 2.0, 1.0)
    check_calls(burgers_upwind, [(u0, 0.01, 0.01, 0.05, 30), (u0, 0.5, 0.5, 0.05, 40),
                                 (u0.astype(np.float32), 0.01, 0.01, 0.05, 5)], float32_inputs=True)
    check_calls(lax_wendroff, [(np.exp(-100 * (x - 0.3) ** 2), 0.5, 40),
                               (np.ones(3, np.float32), 0.9, 2)])
