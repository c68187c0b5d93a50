"""The twelfth set's loop-heavy programs: fractals and cellular automata (a smooth-coloured Julia
set, a Newton fractal, Wireworld, Brian's brain), Monte Carlo with np.random.default_rng
(Metropolis-Hastings, Gillespie's SIR, Buffon's needle, a bootstrap particle filter with
systematic resampling), dynamic programming on arrays (Smith-Waterman, the longest common
substring, subset sum, weighted interval scheduling), sorting by hand (a bitonic network,
odd-even transposition, Shell sort, heap sort, LSD radix sort, bottom-up merge sort) and image
filters written with loops (bilateral, Harris corners, a chamfer distance transform, flood fill,
non-maximum suppression), each compiled once and called with several inputs, twice each,
agreeing with NumPy on values, dtypes, shapes, Python types and the arrays updated in place."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- fractals and cellular automata ----

def julia_smooth(zr, zi, c, maxiter=50, radius=4.0):
    z = zr + 1j * zi
    counts = np.zeros(z.shape)
    alive = np.ones(z.shape, dtype=bool)
    for n in range(maxiter):
        z = np.where(alive, z * z + c, z)
        escaped = alive & (np.abs(z) > radius)
        counts[escaped] = n + 1 - np.log2(np.log(np.abs(z[escaped])))
        alive &= ~escaped
        if not alive.any():
            break
    counts[alive] = maxiter
    return counts

def newton_fractal(zr, zi, maxiter=30, tol=1e-8):
    z = zr + 1j * zi
    roots = np.array([1.0, -0.5 + 0.8660254037844386j, -0.5 - 0.8660254037844386j])
    for _ in range(maxiter):
        dz = (z ** 3 - 1) / (3 * z ** 2)
        z = z - dz
        if np.all(np.abs(dz) < tol):
            break
    return np.argmin(np.abs(z[..., None] - roots), axis=-1)

def wireworld(grid, steps):
    EMPTY, HEAD, TAIL, WIRE = 0, 1, 2, 3
    g = grid.copy()
    for _ in range(steps):
        heads = np.pad(g == HEAD, 1).astype(np.int8)
        n = sum(heads[1 + di:heads.shape[0] - 1 + di, 1 + dj:heads.shape[1] - 1 + dj]
                for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)
        new = g.copy()
        new[g == HEAD] = TAIL
        new[g == TAIL] = WIRE
        new[(g == WIRE) & ((n == 1) | (n == 2))] = HEAD
        g = new
    return g

def brians_brain(on, dying, steps):
    history = []
    for _ in range(steps):
        p = np.pad(on, 1, mode="wrap").astype(np.int32)
        n = (p[:-2, :-2] + p[:-2, 1:-1] + p[:-2, 2:] + p[1:-1, :-2] + p[1:-1, 2:]
             + p[2:, :-2] + p[2:, 1:-1] + p[2:, 2:])
        born = ~on & ~dying & (n == 2)
        on, dying = born, on
        history.append(int(on.sum()))
    return on, dying, history

def test_fractals_and_cellular_automata():
    x = np.linspace(-1.5, 1.5, 24)
    zr, zi = np.meshgrid(x, x[:17])
    check_calls(julia_smooth, [(zr, zi, -0.8 + 0.156j), (zr[:1, :3], zi[:1, :3], 0.3 + 0.5j, 10)])
    check_calls(newton_fractal, [(zr + 0.01, zi + 0.01), (np.array([2.0]), np.array([0.5]), 5)])
    rng = np.random.default_rng(4)
    wires = rng.choice(np.array([0, 1, 2, 3, 3, 3]), size=(9, 11))
    check_calls(wireworld, [(wires, 6), (wires[:1, :1], 2), (np.zeros((3, 3), np.int64), 0)])
    on = rng.random((10, 12)) < 0.3
    check_calls(brians_brain, [(on, np.zeros_like(on), 5), (on[:3, :3], on[:3, :3] & False, 1)])


# ---- Monte Carlo ----

def metropolis(n, step, x0=0.0, seed=0):
    rng = np.random.default_rng(seed)
    def log_p(x):
        return -0.5 * x * x + np.log1p(0.5 * np.sin(3 * x))
    samples = np.empty(n)
    x, lp = x0, log_p(x0)
    accepted = 0
    for i in range(n):
        y = x + step * rng.standard_normal()
        ly = log_p(y)
        if np.log(rng.random()) < ly - lp:
            x, lp = y, ly
            accepted += 1
        samples[i] = x
    return samples, accepted / n

def gillespie_sir(s0, i0, beta, gamma, t_end, seed=1, max_events=5000):
    rng = np.random.default_rng(seed)
    s, i, r, t = s0, i0, 0, 0.0
    n = s0 + i0
    times, infected = [t], [i]
    while t < t_end and len(times) < max_events:
        rate_inf = beta * s * i / n
        rate_rec = gamma * i
        total = rate_inf + rate_rec
        if total == 0:
            break
        t += rng.exponential(1 / total)
        if rng.random() * total < rate_inf:
            s, i = s - 1, i + 1
        else:
            i, r = i - 1, r + 1
        times.append(t)
        infected.append(i)
    return np.array(times), np.array(infected), (s, i, r)

def buffon_needle(n, length=1.0, spacing=2.0, seed=2):
    rng = np.random.default_rng(seed)
    centre = rng.uniform(0, spacing / 2, n)
    angle = rng.uniform(0, np.pi / 2, n)
    hits = np.count_nonzero(centre <= length / 2 * np.sin(angle))
    if hits == 0:
        return np.inf, hits
    return 2 * length * n / (spacing * hits), hits

def particle_filter(obs, n_particles=200, q=0.5, r=1.0, seed=3):
    rng = np.random.default_rng(seed)
    particles = rng.standard_normal(n_particles)
    weights = np.full(n_particles, 1.0 / n_particles)
    means = np.zeros(len(obs))
    resamples = 0
    for k, z in enumerate(obs):
        particles = (0.5 * particles + 25 * particles / (1 + particles ** 2)
                     + q * rng.standard_normal(n_particles))
        weights = weights * np.exp(-0.5 * (z - particles ** 2 / 20) ** 2 / r)
        weights += 1e-300
        weights /= weights.sum()
        means[k] = weights @ particles
        if 1.0 / np.sum(weights ** 2) < n_particles / 2:
            positions = (rng.random() + np.arange(n_particles)) / n_particles
            idx = np.searchsorted(np.cumsum(weights), positions)
            particles = particles[np.minimum(idx, n_particles - 1)]
            weights = np.full(n_particles, 1.0 / n_particles)
            resamples += 1
    return means, resamples

def test_monte_carlo():
    check_calls(metropolis, [(300, 1.0), (50, 0.1, 2.0, 7), (1, 5.0)])
    check_calls(gillespie_sir, [(50, 2, 0.3, 0.1, 30.0), (10, 1, 0.0, 0.5, 5.0, 4),
                                (5, 0, 0.3, 0.1, 1.0)])
    check_calls(buffon_needle, [(1000,), (1, 1.0, 2.0, 5), (400, 1.5, 2.0)])
    rng = np.random.default_rng(8)
    obs = rng.standard_normal(15) ** 2
    check_calls(particle_filter, [(obs,), (obs[:3], 50, 1.0, 2.0, 9)])


# ---- dynamic programming ----

def smith_waterman(a, b, match=2, mismatch=-1, gap=-2):
    H = np.zeros((len(a) + 1, len(b) + 1), dtype=np.int64)
    best, where = 0, (0, 0)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            s = match if a[i - 1] == b[j - 1] else mismatch
            h = max(0, H[i - 1, j - 1] + s, H[i - 1, j] + gap, H[i, j - 1] + gap)
            H[i, j] = h
            if h > best:
                best, where = h, (i, j)
    return H, best, where

def longest_common_substring(a, b):
    prev = np.zeros(len(b) + 1, dtype=np.int32)
    best, end = 0, 0
    for i in range(len(a)):
        cur = np.zeros(len(b) + 1, dtype=np.int32)
        same = a[i] == b
        cur[1:][same] = prev[:-1][same] + 1
        m = cur.max()
        if m > best:
            best, end = int(m), i + 1
        prev = cur
    return a[end - best:end], best

def subset_sum(values, target):
    reachable = np.zeros(target + 1, dtype=bool)
    reachable[0] = True
    for v in values:
        if v > target:
            continue
        reachable[v:] |= reachable[:target + 1 - v]
        if reachable[target]:
            return True, reachable
    return bool(reachable[target]), reachable

def weighted_intervals(starts, ends, weights):
    order = np.argsort(ends, kind="stable")
    s, e, w = starts[order], ends[order], weights[order]
    prev = np.searchsorted(e, s, side="right")
    best = np.zeros(len(s) + 1)
    for k in range(1, len(s) + 1):
        best[k] = max(best[k - 1], w[k - 1] + best[prev[k - 1]])
    return best[-1], best

def test_dynamic_programming():
    a = np.frombuffer(b"GGTTGACTA", dtype=np.uint8)
    b = np.frombuffer(b"TGTTACGG", dtype=np.uint8)
    check_calls(smith_waterman, [(a, b), (a[:1], b[:2], 3, -3, -1)])
    x = np.array([1, 2, 3, 4, 5, 9, 9, 2, 3, 4])
    check_calls(longest_common_substring, [(x, np.array([7, 2, 3, 4, 1])), (a, b), (x[:1], x[1:2])])
    check_calls(subset_sum, [(np.array([3, 34, 4, 12, 5, 2]), 9), (np.array([3, 34, 4]), 30),
                             (np.array([50]), 7)])
    rng = np.random.default_rng(6)
    st = rng.integers(0, 20, 12)
    check_calls(weighted_intervals, [(st, st + rng.integers(1, 6, 12), rng.random(12)),
                                     (np.array([0]), np.array([1]), np.array([2.5]))])


# ---- sorting by hand ----

def bitonic_sort(x):
    a = x.copy()
    n = len(a)
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            idx = np.arange(n)
            partner = idx ^ j
            up = (idx & k) == 0
            lower = partner > idx
            lo, hi = np.minimum(a, a[partner]), np.maximum(a, a[partner])
            a = np.where(lower == up, lo, hi)
            j //= 2
        k *= 2
    return a

def odd_even_transposition(x):
    a = x.copy()
    n = len(a)
    for rounds in range(n):
        swapped = False
        for start in (0, 1):
            left = a[start:n - 1:2].copy()
            right = a[start + 1:n:2].copy()
            m = min(len(left), len(right))
            if m and np.any(left[:m] > right[:m]):
                swapped = True
            a[start:start + 2 * m:2] = np.minimum(left[:m], right[:m])
            a[start + 1:start + 2 * m:2] = np.maximum(left[:m], right[:m])
        if not swapped:
            return a, rounds
    return a, n

def shell_sort(x):
    a = x.copy()
    gap = len(a) // 2
    while gap > 0:
        for i in range(gap, len(a)):
            temp = a[i]
            j = i
            while j >= gap and a[j - gap] > temp:
                a[j] = a[j - gap]
                j -= gap
            a[j] = temp
        gap //= 2
    return a

def sift_down(a, start, end):
    root = start
    while 2 * root + 1 <= end:
        child = 2 * root + 1
        if child + 1 <= end and a[child] < a[child + 1]:
            child += 1
        if a[root] < a[child]:
            a[root], a[child] = a[child], a[root]
            root = child
        else:
            return

def heap_sort(x):
    a = x.copy()
    n = len(a)
    for start in range((n - 2) // 2, -1, -1):
        sift_down(a, start, n - 1)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        sift_down(a, 0, end - 1)
    return a

def radix_sort(x, base=10):
    a = x.copy()
    exp = 1
    biggest = a.max() if len(a) else 0
    while biggest // exp > 0:
        digit = (a // exp) % base
        a = a[np.argsort(digit, kind="stable")]
        exp *= base
    return a

def merge_sort_bottom_up(x):
    a = x.copy()
    width = 1
    n = len(a)
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            left, right = a[lo:mid].copy(), a[mid:hi].copy()
            i = j = 0
            k = lo
            while i < len(left) and j < len(right):
                if left[i] <= right[j]:
                    a[k] = left[i]; i += 1
                else:
                    a[k] = right[j]; j += 1
                k += 1
            a[k:k + len(left) - i] = left[i:]
            k += len(left) - i
            a[k:k + len(right) - j] = right[j:]
        width *= 2
    return a

def test_sorting_by_hand():
    rng = np.random.default_rng(10)
    x16, xi = rng.standard_normal(16), rng.integers(0, 1000, 13)
    check_calls(bitonic_sort, [(x16,), (x16[:1],), (rng.integers(-9, 9, 8).astype(np.int32),)])
    check_calls(odd_even_transposition, [(x16,), (xi,), (np.arange(5.0),), (x16[:1],)])
    check_calls(shell_sort, [(x16,), (xi,), (x16[:0],)])
    check_calls(heap_sort, [(x16.astype(np.float32),), (xi,), (np.array([2, 1]),)])
    check_calls(radix_sort, [(xi,), (xi[:0],), (np.array([5, 0, 5, 10]), 2)])
    check_calls(merge_sort_bottom_up, [(x16,), (xi[:7],), (xi[:1],)])
