"""The eleventh set's loop-heavy programs: simulations (a forest fire, the Nagel-Schreckenberg
traffic model, the Bak-Tang-Wiesenfeld sandpile, Kuramoto oscillators, Langton's ant,
Schelling-style relaxation on a fixed schedule, a damped spring chain), algorithms on arrays
and bytes (matrix-chain order, the longest palindromic substring, the KMP prefix function, the
Z-function, Luhn checks, popcounts and Morton codes by bit tricks, base64 by table, bracket
depth, run-length decoding, the maximum-sum rectangle) and small stateful classes and closures
(an online Welford accumulator, a ring buffer, a PID controller, a Kalman filter object), each
compiled once and called with several inputs, agreeing with NumPy on values, dtypes, shapes,
Python types and the arrays updated in place."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- simulations ----

def forest_fire(grid, p_grow, p_fire, steps, seed=0):
    rng = np.random.default_rng(seed)
    EMPTY, TREE, FIRE = 0, 1, 2
    g = grid.copy()
    burned = np.zeros(steps, dtype=np.int64)
    for s in range(steps):
        fire = g == FIRE
        near = np.zeros_like(fire)
        near[1:, :] |= fire[:-1, :]; near[:-1, :] |= fire[1:, :]
        near[:, 1:] |= fire[:, :-1]; near[:, :-1] |= fire[:, 1:]
        r = rng.random(g.shape)
        new = g.copy()
        new[fire] = EMPTY
        new[(g == TREE) & (near | (r < p_fire))] = FIRE
        new[(g == EMPTY) & (r < p_grow)] = TREE
        burned[s] = fire.sum()
        g = new
    return g, burned

def nagel_schreckenberg(pos, vel, road_len, vmax, p_slow, steps, seed=0):
    rng = np.random.default_rng(seed)
    pos = pos.copy(); vel = vel.copy()
    flow = 0
    for _ in range(steps):
        order = np.argsort(pos)
        pos, vel = pos[order], vel[order]
        gaps = (np.roll(pos, -1) - pos - 1) % road_len
        vel = np.minimum(vel + 1, vmax)
        vel = np.minimum(vel, gaps)
        slow = rng.random(len(vel)) < p_slow
        vel = np.where(slow, np.maximum(vel - 1, 0), vel)
        new_pos = pos + vel
        flow += int(np.sum(new_pos >= road_len))
        pos = new_pos % road_len
    return pos, vel, flow

def sandpile(h, threshold=4, max_topples=100000):
    h = h.copy()
    topples = 0
    while topples < max_topples:
        unstable = np.argwhere(h >= threshold)
        if len(unstable) == 0:
            break
        i, j = unstable[0]
        h[i, j] -= 4
        if i > 0: h[i - 1, j] += 1
        if i < h.shape[0] - 1: h[i + 1, j] += 1
        if j > 0: h[i, j - 1] += 1
        if j < h.shape[1] - 1: h[i, j + 1] += 1
        topples += 1
    return h, topples

def sandpile_parallel(h, threshold=4):
    h = h.astype(np.int32)
    rounds = 0
    while True:
        over = h >= threshold
        if not over.any():
            break
        spill = np.where(over, h // 4, 0)
        h -= 4 * spill
        h[1:, :] += spill[:-1, :]; h[:-1, :] += spill[1:, :]
        h[:, 1:] += spill[:, :-1]; h[:, :-1] += spill[:, 1:]
        rounds += 1
    return h, rounds

def kuramoto(theta, omega, K, dt, steps):
    theta = theta.astype(np.float64)
    n = len(theta)
    order = np.empty(steps)
    for s in range(steps):
        diff = theta[None, :] - theta[:, None]
        theta = theta + dt * (omega + K / n * np.sin(diff).sum(axis=1))
        order[s] = np.abs(np.exp(1j * theta).mean())
    return np.mod(theta, 2 * np.pi), order

def langtons_ant(size, steps):
    grid = np.zeros((size, size), dtype=np.uint8)
    r, c = size // 2, size // 2
    d = 0  # 0 up, 1 right, 2 down, 3 left
    dr = np.array([-1, 0, 1, 0]); dc = np.array([0, 1, 0, -1])
    for _ in range(steps):
        if grid[r, c] == 0:
            d = (d + 1) % 4
        else:
            d = (d - 1) % 4
        grid[r, c] ^= 1
        r = (r + dr[d]) % size
        c = (c + dc[d]) % size
    return grid, r, c

def spring_chain(x, v, k, damping, dt, steps, fixed_ends=True):
    x = x.astype(np.float64).copy(); v = v.astype(np.float64).copy()
    energy = np.zeros(steps)
    for s in range(steps):
        f = np.zeros_like(x)
        f[1:-1] = k * (x[2:] - 2 * x[1:-1] + x[:-2])
        if not fixed_ends:
            f[0] = k * (x[1] - x[0]); f[-1] = k * (x[-2] - x[-1])
        f -= damping * v
        v += dt * f
        if fixed_ends:
            v[0] = v[-1] = 0.0
        x += dt * v
        energy[s] = 0.5 * np.sum(v ** 2) + 0.5 * k * np.sum(np.diff(x) ** 2)
    return x, v, energy

def test_simulations():
    rng = np.random.default_rng(13)
    g = rng.integers(0, 3, (16, 16)).astype(np.int8)
    check_calls(forest_fire, [(g, 0.05, 0.001, 10), (g[:8], 0.1, 0.01, 5, 2)])
    pos = np.sort(rng.choice(100, 20, replace=False)); vel = rng.integers(0, 3, 20)
    check_calls(nagel_schreckenberg, [(pos, vel, 100, 5, 0.2, 30), (pos[:10], vel[:10], 100, 3, 0.0, 10)])
    h = rng.integers(0, 6, (6, 6))
    check_calls(sandpile, [(h,), (np.full((4, 4), 3),)])
    check_calls(sandpile_parallel, [(rng.integers(0, 8, (10, 10)),), (np.full((5, 5), 3, dtype=np.int64),)])
    check_calls(kuramoto, [(rng.random(20) * 6, rng.normal(0, 0.5, 20), 2.0, 0.05, 40),
                           (rng.random(8) * 6, rng.normal(0, 0.1, 8), 0.5, 0.1, 10)])
    check_calls(langtons_ant, [(11, 200), (21, 1000)])
    x0 = np.sin(np.linspace(0, np.pi, 12))
    check_calls(spring_chain, [(x0, np.zeros(12), 4.0, 0.1, 0.05, 100),
                               (x0.astype(np.float32), np.zeros(12, np.float32), 2.0, 0.0, 0.1, 30, False)])


# ---- algorithms on arrays and bytes ----

def matrix_chain_order(dims):
    n = len(dims) - 1
    m = np.zeros((n, n), dtype=np.int64)
    split = np.zeros((n, n), dtype=np.int64)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            m[i, j] = np.iinfo(np.int64).max
            for k in range(i, j):
                cost = m[i, k] + m[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost < m[i, j]:
                    m[i, j] = cost
                    split[i, j] = k
    return m[0, n - 1], split

def longest_palindrome(data):
    s = np.frombuffer(data, dtype=np.uint8)
    n = len(s)
    P = np.zeros((n, n), dtype=bool)
    best_start, best_len = 0, 1 if n else 0
    for i in range(n):
        P[i, i] = True
    for i in range(n - 1):
        if s[i] == s[i + 1]:
            P[i, i + 1] = True
            if best_len < 2:
                best_start, best_len = i, 2
    for length in range(3, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            if s[i] == s[j] and P[i + 1, j - 1]:
                P[i, j] = True
                if length > best_len:
                    best_start, best_len = i, length
    return bytes(s[best_start:best_start + best_len])

def prefix_function(s):
    n = len(s)
    pi = np.zeros(n, dtype=np.int32)
    for i in range(1, n):
        k = pi[i - 1]
        while k > 0 and s[i] != s[k]:
            k = pi[k - 1]
        if s[i] == s[k]:
            k += 1
        pi[i] = k
    return pi

def z_function(s):
    n = len(s)
    z = np.zeros(n, dtype=np.int64)
    l = r = 0
    for i in range(1, n):
        if i < r:
            z[i] = min(r - i, z[i - l])
        while i + z[i] < n and s[z[i]] == s[i + z[i]]:
            z[i] += 1
        if i + z[i] > r:
            l, r = i, i + z[i]
    return z

def luhn_valid(digits):
    d = digits[:, ::-1].astype(np.int64)
    doubled = d[:, 1::2] * 2
    doubled = np.where(doubled > 9, doubled - 9, doubled)
    total = d[:, ::2].sum(axis=1) + doubled.sum(axis=1)
    return total % 10 == 0

def popcount32(x):
    x = x.astype(np.uint32)
    x = x - ((x >> 1) & np.uint32(0x55555555))
    x = (x & np.uint32(0x33333333)) + ((x >> 2) & np.uint32(0x33333333))
    x = (x + (x >> 4)) & np.uint32(0x0F0F0F0F)
    return ((x * np.uint32(0x01010101)) >> 24).astype(np.uint8)

def morton_encode(x, y):
    def spread(v):
        v = v.astype(np.uint64) & np.uint64(0xFFFF)
        v = (v | (v << np.uint64(8))) & np.uint64(0x00FF00FF)
        v = (v | (v << np.uint64(4))) & np.uint64(0x0F0F0F0F)
        v = (v | (v << np.uint64(2))) & np.uint64(0x33333333)
        v = (v | (v << np.uint64(1))) & np.uint64(0x55555555)
        return v
    return spread(x) | (spread(y) << np.uint64(1))

B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)

def base64_encode(data):
    b = np.frombuffer(data, dtype=np.uint8)
    pad = (-len(b)) % 3
    b = np.concatenate([b, np.zeros(pad, dtype=np.uint8)]).reshape(-1, 3).astype(np.uint32)
    n = (b[:, 0] << 16) | (b[:, 1] << 8) | b[:, 2]
    idx = np.stack([(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63], axis=1).ravel()
    out = B64[idx]
    if pad:
        out[-pad:] = ord("=")
    return out.tobytes()

def bracket_depth(data):
    s = np.frombuffer(data, dtype=np.uint8)
    step = np.where(s == ord("("), 1, 0) - np.where(s == ord(")"), 1, 0)
    depth = np.cumsum(step)
    balanced = bool(depth[-1] == 0 and depth.min() >= 0) if len(s) else True
    return depth.max(initial=0), balanced

def rle_decode(values, counts):
    out = np.empty(counts.sum(), dtype=values.dtype)
    pos = 0
    for v, c in zip(values, counts):
        out[pos:pos + c] = v
        pos += c
    return out

def max_sum_rectangle(M):
    rows, cols = M.shape
    best = -np.inf
    best_box = (0, 0, 0, 0)
    for top in range(rows):
        acc = np.zeros(cols)
        for bottom in range(top, rows):
            acc += M[bottom]
            cur, start = 0.0, 0
            for j in range(cols):
                if cur <= 0:
                    cur, start = acc[j], j
                else:
                    cur += acc[j]
                if cur > best:
                    best = cur
                    best_box = (top, bottom, start, j)
    return best, best_box

def test_algorithms():
    rng = np.random.default_rng(17)
    check_calls(matrix_chain_order, [(np.array([10, 30, 5, 60]),), (rng.integers(1, 50, 12),)])
    check_calls(longest_palindrome, [(b"forgeeksskeegfor",), (b"abacdfgdcabaracecar",)])
    s = np.frombuffer(b"abacabadabacaba", dtype=np.uint8)
    check_calls(prefix_function, [(s,), (rng.integers(0, 2, 60),)])
    check_calls(z_function, [(s,), (rng.integers(0, 2, 60).astype(np.int8),)])
    check_calls(luhn_valid, [(np.array([[4, 5, 3, 9, 1, 4, 8, 8, 0, 3, 4, 3, 6, 4, 6, 7]]),),
                             (rng.integers(0, 10, (20, 16)).astype(np.uint8),)])
    check_calls(popcount32, [(rng.integers(0, 2 ** 32, 50, dtype=np.uint64),), (np.arange(-5, 5, dtype=np.int32),)])
    check_calls(morton_encode, [(rng.integers(0, 65536, 20), rng.integers(0, 65536, 20)),
                                (np.arange(8, dtype=np.uint16), np.arange(8, dtype=np.uint16)[::-1])])
    check_calls(base64_encode, [(b"Man is distinguished",), (b"any carnal pleasure.",), (b"ab",)])
    check_calls(bracket_depth, [(b"(a(b)c)((d))",), (b"())(",), (b"",)])
    check_calls(rle_decode, [(np.array([3, 1, 4]), np.array([2, 0, 3])), (rng.random(5).astype(np.float32), rng.integers(1, 4, 5))])
    check_calls(max_sum_rectangle, [(rng.standard_normal((4, 5)),), (rng.standard_normal((7, 6)),)])


# ---- small stateful classes and closures ----

class Welford:
    def __init__(self, dim):
        self.n = 0
        self.mean = np.zeros(dim)
        self.m2 = np.zeros(dim)

    def update(self, x):
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def variance(self, ddof=1):
        return self.m2 / (self.n - ddof) if self.n > ddof else np.full_like(self.m2, np.nan)

def online_stats(X, ddof=1):
    acc = Welford(X.shape[1])
    for row in X:
        acc.update(row)
    return acc.mean, acc.variance(ddof)

def make_ring_smoother(size):
    buf = np.zeros(size)
    def smooth(x):
        out = np.empty_like(x, dtype=np.float64)
        for i in range(len(x)):
            buf[i % size] = x[i]
            out[i] = buf[:min(i + 1, size)].mean()
        return out
    return smooth

def ring_smooth(x, size=4):
    return make_ring_smoother(size)(x)

class PID:
    def __init__(self, kp, ki, kd, dt):
        self.kp, self.ki, self.kd, self.dt = kp, ki, kd, dt
        self.integral = 0.0
        self.prev_error = 0.0

    def __call__(self, error):
        self.integral += error * self.dt
        derivative = (error - self.prev_error) / self.dt
        self.prev_error = error
        return self.kp * error + self.ki * self.integral + self.kd * derivative

def pid_tank(setpoints, kp=2.0, ki=0.5, kd=0.1, dt=0.1):
    pid = PID(kp, ki, kd, dt)
    level = np.zeros(len(setpoints) + 1, dtype=np.float32)
    for t, target in enumerate(setpoints):
        u = pid(target - level[t])
        inflow = min(max(u, 0.0), 5.0)
        level[t + 1] = level[t] + dt * (inflow - 0.3 * np.sqrt(max(level[t], 0.0)))
    return level

class ConstantVelocityKalman:
    def __init__(self, dt, q=1e-2, r=0.5):
        self.F = np.array([[1.0, dt], [0.0, 1.0]])
        self.H = np.array([[1.0, 0.0]])
        self.Q = q * np.array([[dt ** 3 / 3, dt ** 2 / 2], [dt ** 2 / 2, dt]])
        self.R = np.array([[r]])

    def run(self, zs):
        x = np.array([zs[0], 0.0]); P = np.eye(2)
        out = np.zeros((len(zs), 2))
        for k, z in enumerate(zs):
            x = self.F @ x
            P = self.F @ P @ self.F.T + self.Q
            S = self.H @ P @ self.H.T + self.R
            K = P @ self.H.T / S[0, 0]
            x = x + (K * (z - self.H @ x)).ravel()
            P = (np.eye(2) - K @ self.H) @ P
            out[k] = x
        return out

def kalman_track(zs, dt=0.1):
    return ConstantVelocityKalman(dt).run(zs)

def test_stateful_classes_and_closures():
    rng = np.random.default_rng(23)
    check_calls(online_stats, [(rng.standard_normal((30, 3)),), (rng.standard_normal((1, 2)),), (rng.random((5, 4)), 0)])
    check_calls(ring_smooth, [(rng.random(20),), (rng.integers(0, 9, 12), 3)])
    check_calls(pid_tank, [(np.full(50, 2.0),), (np.r_[np.ones(20), 3 * np.ones(30)], 1.0, 0.2, 0.0)])
    zs = np.cumsum(np.full(40, 0.1)) + 0.3 * rng.standard_normal(40)
    check_calls(kalman_track, [(zs,), (zs[:10], 0.5)])
