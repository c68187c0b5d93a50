"""The benchmark's loop programs: Python loops as NumPy users write them, each captured by kiln as
one loop node (kiln.bench.workloads registers them, with their inputs, beside the whole-array
programs)."""
import numpy as np


REACTION_STEPS = 40


def reaction_diffusion(u, v):
    # 40 explicit steps of a Gray-Scott system on a periodic grid (np.roll Laplacians).
    for _ in range(REACTION_STEPS):
        lu = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        lv = np.roll(v, 1, 0) + np.roll(v, -1, 0) + np.roll(v, 1, 1) + np.roll(v, -1, 1) - 4 * v
        uvv = u * v * v
        u = u + (0.16 * lu - uvv + 0.035 * (1.0 - u))
        v = v + (0.08 * lv + uvv - 0.1 * v)
    return u - v


def forward_substitution(lower, b):
    # A triangular sweep: row i uses the solution so far (zero past i), one row per iteration.
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - lower[i] @ x) / lower[i, i]
    return x


def row_recurrence(x):
    # Each row of the result depends on the previous one: iterations are sequential.
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = 0.9 * out[i - 1] + x[i]
    return out


def element_branch(x):
    # One element per iteration with a data-dependent branch: Numba's home ground.
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            out[i] = np.sqrt(x[i])
        else:
            out[i] = -0.5 * x[i]
    return out


def newton_sqrt(a):
    # A while loop with a data-dependent exit: Newton's iteration until it stops moving.
    x = a.copy()
    err = 1.0
    while err > 1e-12:
        nx = 0.5 * (x + a / x)
        err = np.abs(nx - x).max()
        x = nx
    return x


def jacobi_converge(u, f):
    # Jacobi sweeps of the 2-D Poisson equation until the largest change is below a tolerance:
    # the textbook idiom converts the error to a Python float in the loop's test.
    err = 1.0
    while float(err) > 1e-4:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                  - f[1:-1, 1:-1])
        err = np.abs(new - u).max()
        u = new
    return u


def _plate(rng, n):
    u = np.zeros((n, n))
    u[0, :] = 1.0  # one hot edge
    return u, 1e-3 * rng.standard_normal((n, n))


def cholesky(a):
    # Slices whose bounds move with the loop index: row j's left part, the column below j.
    n = a.shape[0]
    lower = np.zeros_like(a)
    for j in range(n):
        lower[j, j] = np.sqrt(a[j, j] - np.dot(lower[j, :j], lower[j, :j]))
        lower[j + 1:, j] = (a[j + 1:, j] - lower[j + 1:, :j] @ lower[j, :j]) / lower[j, j]
    return lower


def lu(a):
    # In-place LU without pivoting: a column scaled and a trailing block updated per step.
    a = a.copy()
    for k in range(a.shape[0] - 1):
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def gram_schmidt(a):
    # Classical Gram-Schmidt: products with the columns found so far, Q[:, :j].
    m, n = a.shape
    q = np.zeros((m, n))
    r = np.zeros((n, n))
    for j in range(n):
        v = a[:, j].copy()
        r[:j, j] = q[:, :j].T @ a[:, j]
        v -= q[:, :j] @ r[:j, j]
        r[j, j] = np.linalg.norm(v)
        q[:, j] = v / r[j, j]
    return q, r


def covariance(data):
    # Upper triangle row by row, mirrored: d[:, i] @ d[:, i:] (PolyBench's covariance).
    m = data.shape[1]
    cov = np.empty((m, m))
    d = data - data.mean(axis=0)
    for i in range(m):
        cov[i, i:] = d[:, i] @ d[:, i:]
        cov[i:, i] = cov[i, i:]
    return cov / (data.shape[0] - 1)


def _spd(rng, n):
    m = rng.random((n, n))
    return m @ m.T + n * np.eye(n)


def crc32(data):
    # A CRC over bytes: a scalar recursion with a data-dependent branch in an inner loop.
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = crc ^ data[i]
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ np.uint32(0xEDB88320)
            else:
                crc = crc >> 1
    return crc ^ np.uint32(0xFFFFFFFF)


def sieve(flags):
    # The sieve of Eratosthenes as loops: an inner range stepped by the outer index, entered
    # where the flag the outer index reads is still set.
    s = flags.copy()
    n = s.shape[0]
    for i in range(2, n):
        if s[i]:
            for j in range(i * i, n, i):
                s[j] = False
    return s.sum()


def lcs(a, b):
    # Longest common subsequence by dynamic programming: a table filled element by element in
    # nested index loops, each element chosen by a data-dependent branch.
    n, m = a.shape[0], b.shape[0]
    table = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                table[i, j] = table[i - 1, j - 1] + 1
            else:
                table[i, j] = max(table[i - 1, j], table[i, j - 1])
    return table[n, m]


def levinson(r):
    # Levinson-Durbin recursion: inner loops bounded by the outer index, a rebound copy.
    order = r.shape[0] - 1
    a = np.zeros_like(r)
    a[0] = 1.0
    error = r[0]
    for k in range(1, order + 1):
        acc = r[k]
        for j in range(1, k):
            acc += a[j] * r[k - j]
        reflection = -acc / error
        updated = a.copy()
        for j in range(1, k):
            updated[j] = a[j] + reflection * a[k - j]
        updated[k] = reflection
        a = updated
        error = error * (1 - reflection * reflection)
    return a * error


def _autocorrelation(rng, n):
    # An AR(1) process's (well conditioned: the recursion stays stable in any summation order),
    # slightly perturbed so that each call gets new data.
    r = 0.6 ** np.arange(n)
    r[1:] *= 1 + 1e-3 * rng.random(n - 1)
    return r


def mandelbrot(c):
    # Complex arithmetic in a time-step loop: escape counts of z <- z**2 + c (complex128).
    z = np.zeros_like(c)
    counts = np.zeros_like(c, dtype=np.int64)
    for _ in range(64):
        inside = np.abs(z) <= 2
        z = np.where(inside, z * z + c, z)
        counts += inside
    return counts


def _complex_grid(n):
    return (np.linspace(-2, 0.6, n)[None, :] + 1j * np.linspace(-1.2, 1.2, n)[:, None])


def pair_energy(p):
    # Nested loops, the inner bound from the outer index: all pairs i > j of 3-D points.
    energy = 0.0
    for i in range(p.shape[0]):
        for j in range(i):
            d = p[i] - p[j]
            energy = energy + 1.0 / np.sqrt(np.sum(d * d) + 0.01)
    return energy


def logistic_losses(X, y):
    # Gradient descent that keeps its loss each epoch, as tutorials write it: a list appended
    # to in the loop's body, an array at the end.
    w = np.zeros(X.shape[1])
    losses = []
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        w = w - 0.5 * (X.T @ (p - y)) / len(y)
        losses.append(float(np.mean((p - y) ** 2)))
    return np.concatenate([w, np.array(losses)])


def row_modes(x):
    # The most frequent value of each row, as NumPy code finds it: np.unique's counts, whose
    # length the row's data decide (kiln._masked_selections keeps the loop one node).
    modes = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        values, counts = np.unique(x[i], return_counts=True)
        modes[i] = values[np.argmax(counts)]
    return modes


def outliers_to_median(x):
    # Each row's values more than two standard deviations out replaced by its median: np.where's
    # positions (a data-dependent count) written through.
    x = x.copy()
    for i in range(x.shape[0]):
        z = (x[i] - x[i].mean()) / x[i].std()
        far = np.where(np.abs(z) > 2)[0]
        x[i, far] = np.median(x[i])
    return x
