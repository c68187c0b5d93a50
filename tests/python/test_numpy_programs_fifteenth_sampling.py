"""Fifteenth set, samplers and iterations as people write them, where a Generator's draws meet
Python numbers, early exits and in-place updates: Metropolis-Hastings accepting on
`min(1, ratio)`, particle swarm optimisation, the longest streak of coin flips, tau-leaping SIR
by binomial draws, a bootstrap of the median, epsilon decay by `max(0.01, eps * 0.99)`, Newton's
method falling back to least squares on LinAlgError, relaxation that writes its argument in
place until it converges, a power method that breaks out of `while True`, and a nested search
that returns from its inner loop. Each is compiled once and called with several inputs, twice
each, agreeing with NumPy on values, draws and updated arguments."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


def metropolis_1d(n, step, g, x0=0.0):
    def log_p(x):
        return -0.5 * x * x - 0.1 * x ** 4
    x = x0
    samples = np.empty(n)
    accepted = 0
    for i in range(n):
        proposal = x + step * g.normal()
        ratio = np.exp(log_p(proposal) - log_p(x))
        if g.random() < min(1, ratio):
            x = proposal
            accepted += 1
        samples[i] = x
    return samples.mean(), accepted / n

def particle_swarm(dim, n_particles, iters, g, w=0.7, c1=1.5, c2=1.5):
    def f(p):
        return np.sum((p - 1.0) ** 2, axis=-1) + np.sum(np.sin(3 * p), axis=-1)
    pos = g.uniform(-3, 3, (n_particles, dim))
    vel = np.zeros_like(pos)
    best_pos = pos.copy()
    best_val = f(pos)
    g_best = best_pos[np.argmin(best_val)].copy()
    for _ in range(iters):
        r1, r2 = g.random((2, n_particles, dim))
        vel = w * vel + c1 * r1 * (best_pos - pos) + c2 * r2 * (g_best - pos)
        pos = pos + vel
        val = f(pos)
        better = val < best_val
        best_pos[better] = pos[better]
        best_val = np.where(better, val, best_val)
        g_best = best_pos[np.argmin(best_val)].copy()
    return g_best, best_val.min()

def longest_streak(n, p, g):
    best = current = 0
    heads = 0
    for _ in range(n):
        if g.random() < p:
            current += 1
            heads += 1
            best = max(best, current)
        else:
            current = 0
    return best, heads

def tau_leap_sir(s, i, r, beta, gamma, dt, steps, g):
    history = np.zeros((steps + 1, 3), dtype=np.int64)
    history[0] = s, i, r
    n = s + i + r
    for k in range(steps):
        p_inf = 1 - np.exp(-beta * i / n * dt)
        p_rec = 1 - np.exp(-gamma * dt)
        new_inf = g.binomial(s, p_inf)
        new_rec = g.binomial(i, p_rec)
        s, i, r = s - new_inf, i + new_inf - new_rec, r + new_rec
        history[k + 1] = s, i, r
        if i == 0:
            history[k + 2:] = s, i, r
            break
    return history

def bootstrap_median(x, n_boot, g):
    meds = np.empty(n_boot)
    for b in range(n_boot):
        meds[b] = np.median(x[g.integers(0, len(x), len(x))])
    return np.percentile(meds, [2.5, 97.5]), meds.std()

def epsilon_decay(n_episodes, g, eps=1.0):
    q = np.zeros(3)
    counts = np.zeros(3)
    history = []
    for _ in range(n_episodes):
        a = g.integers(3) if g.random() < eps else int(np.argmax(q))
        reward = g.normal([0.2, 0.5, 0.1][a])
        counts[a] += 1
        q[a] += (reward - q[a]) / counts[a]
        eps = max(0.01, eps * 0.9)
        history.append(eps)
    return q, history[-1], counts

def newton_with_fallback(x0, iters=20):
    x = np.array(x0, dtype=float)
    fallbacks = 0
    for _ in range(iters):
        F = np.array([x[0] ** 2 + x[1] ** 2 - 4, x[0] * x[1] - 1])
        J = np.array([[2 * x[0], 2 * x[1]], [x[1], x[0]]])
        try:
            dx = np.linalg.solve(J, F)
        except np.linalg.LinAlgError:
            dx = np.linalg.lstsq(J, F, rcond=None)[0]
            fallbacks += 1
        x = x - dx
        if np.linalg.norm(dx) < 1e-12:
            break
    return x, fallbacks

def relax_in_place(u, tol=1e-6, max_sweeps=500):
    sweeps = 0
    while sweeps < max_sweeps:
        old = u[1:-1].copy()
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        sweeps += 1
        if np.max(np.abs(u[1:-1] - old)) < tol:
            break
    return sweeps

def power_method_until(A, tol=1e-10):
    v = np.ones(A.shape[0])
    lam = 0.0
    it = 0
    while True:
        w = A @ v
        new_lam = np.linalg.norm(w)
        v = w / new_lam
        it += 1
        if abs(new_lam - lam) < tol or it >= 1000:
            break
        lam = new_lam
    return new_lam, v, it

def first_pair_with_sum(a, target):
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if a[i] + a[j] == target:
                return i, j
    return None


def rng(seed=0):
    return np.random.default_rng(seed)


def test_samplers():
    check_calls(metropolis_1d, [(200, 1.0, rng(1)), (50, 0.3, rng(2), 2.0)])
    check_calls(particle_swarm, [(2, 10, 15, rng(1)), (3, 6, 5, rng(2), 0.5)])
    check_calls(longest_streak, [(100, 0.5, rng(1)), (40, 0.8, rng(2))])
    check_calls(tau_leap_sir, [(990, 10, 0, 0.3, 0.1, 1.0, 30, rng(1)),
                               (50, 1, 0, 0.1, 0.9, 1.0, 20, rng(2))])
    check_calls(bootstrap_median, [(rng(1).random(15), 40, rng(2)),
                                   (np.arange(8.0), 10, rng(3))])
    check_calls(epsilon_decay, [(40, rng(1)), (10, rng(2), 0.5)])


def test_iterations_with_exits():
    check_calls(newton_with_fallback, [([2.0, 0.5],), ([1.0, 1.0],), ([0.0, 0.0], 3)])
    check_calls(relax_in_place, [(np.concatenate([[1.0], np.zeros(8), [0.0]]),),
                                 (np.linspace(0, 1, 6) ** 2, 1e-3)])
    m = rng(1).random((4, 4))
    check_calls(power_method_until, [(m @ m.T,), (np.diag([3.0, 1.0, 0.5]),)])
    check_calls(first_pair_with_sum, [(np.array([3, 8, 1, 7, 5]), 12),
                                      (np.array([1, 2, 3]), 100), (rng(1).integers(0, 9, 10), 9)])
