"""A fourth set of NumPy programs as their authors write them (textbook numerics, tutorials):
ODE integrators keeping their trajectories in lists, with the right-hand side an inner function
or a closure, simulations counting time in a while loop, iterative solvers stopping at a
tolerance, dynamic programming and graph algorithms by loops. Each
agrees with NumPy on its first call and a cached one (check_program), with no graph break."""
import numpy as np
import pytest

from test_numpy_programs import _breaks, check_program


def lorenz_rk4(y0, dt, n):
    sigma, rho, beta = 10.0, 28.0, 8.0 / 3.0

    def f(t, y):
        x, yy, z = y
        return np.array([sigma * (yy - x), x * (rho - z) - yy, x * yy - beta * z])
    y = y0.copy()
    t = 0.0
    ys = [y.copy()]
    for i in range(n):
        k1 = f(t, y)
        k2 = f(t + dt / 2, y + dt / 2 * k1)
        k3 = f(t + dt / 2, y + dt / 2 * k2)
        k4 = f(t + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
        ys.append(y.copy())
    return np.array(ys)


def make_integrator(sigma, rho, beta):
    def rhs(t, y):
        return np.array([sigma * (y[1] - y[0]), y[0] * (rho - y[2]) - y[1],
                         y[0] * y[1] - beta * y[2]])

    def run(y0, dt, n):
        y = y0
        traj = []
        for i in range(n):
            t = i * dt
            k1 = rhs(t, y)
            k2 = rhs(t + 0.5 * dt, y + 0.5 * dt * k1)
            k3 = rhs(t + 0.5 * dt, y + 0.5 * dt * k2)
            k4 = rhs(t + dt, y + dt * k3)
            y = y + (dt / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
            traj.append(y.copy())
        return np.array(traj)
    return run


lorenz_closure = make_integrator(10.0, 28.0, 8.0 / 3.0)


def verlet_lists(x0, v0, dt, n):
    x, v = x0.copy(), v0.copy()
    xs, vs = [], []
    a = -x
    for _ in range(n):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = -x
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
        xs.append(x.copy())
        vs.append(v.copy())
    return np.array(xs), np.array(vs)


def leapfrog_until(x, v, dt, T):
    t = 0.0
    while t < T:
        v = v + 0.5 * dt * (-x)
        x = x + dt * v
        v = v + 0.5 * dt * (-x)
        t += dt
    return x, v, t


def fixed_point_cos(x, tol):
    it = 0
    err = 1.0
    while err > tol and it < 1000:
        x_new = np.cos(x)
        err = float(np.max(np.abs(x_new - x)))
        x = x_new
        it += 1
    return x, it, err


def kalman_2d(zs, F, H, Q, R):
    x = np.zeros(2)
    P = np.eye(2)
    out = []
    for z in zs:
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        x = x + K @ (z - H @ x)
        P = (np.eye(2) - K @ H) @ P
        out.append(x)
    return np.array(out)


def gradient_descent(X, y, lr, maxit, tol):
    w = np.zeros(X.shape[1])
    prev = np.inf
    for it in range(maxit):
        r = X @ w - y
        loss = 0.5 * np.mean(r ** 2)
        if prev - loss < tol:
            break
        prev = loss
        w = w - lr * X.T @ r / len(y)
    return w, it


def floyd_warshall_loops(D):
    D = D.copy()
    n = len(D)
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if D[i, k] + D[k, j] < D[i, j]:
                    D[i, j] = D[i, k] + D[k, j]
    return D


def edit_distance(a, b):
    n, m = len(a), len(b)
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[n, m]


def sieve_while(n):
    flags = np.ones(n + 1, dtype=bool)
    flags[:2] = False
    p = 2
    while p * p <= n:
        if flags[p]:
            flags[p * p::p] = False
        p += 1
    return flags.sum()


CASES = {
    "lorenz_rk4": (lorenz_rk4, lambda r: (r.random(3), 0.01, 200)),
    "lorenz_closure": (lorenz_closure, lambda r: (r.random(3), 0.01, 200)),
    "verlet_lists": (verlet_lists, lambda r: (r.random(3), r.random(3), 0.01, 100)),
    "leapfrog_until": (leapfrog_until, lambda r: (r.random(3), r.random(3), 0.01, 2.0)),
    "fixed_point_cos": (fixed_point_cos, lambda r: (r.random(4), 1e-10)),
    "kalman_2d": (kalman_2d, lambda r: (r.random((30, 1)), np.array([[1, 1.0], [0, 1]]),
                                        np.array([[1.0, 0]]), 1e-3 * np.eye(2),
                                        np.array([[0.1]]))),
    "gradient_descent": (gradient_descent, lambda r: (r.random((50, 3)), r.random(50), 0.5,
                                                      300, 1e-10)),
    "floyd_warshall_loops": (floyd_warshall_loops, lambda r: (r.random((8, 8)) * 10,)),
    "edit_distance": (edit_distance, lambda r: (np.array(list(b"intention")),
                                                np.array(list(b"execution")))),
    "sieve_while": (sieve_while, lambda r: (500,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_agrees_with_numpy_without_graph_breaks(name):
    function, make = CASES[name]
    check_program(function, make(np.random.default_rng(11)))
    assert _breaks(function, *make(np.random.default_rng(12))) == (0, [])
