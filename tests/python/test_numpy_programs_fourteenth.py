"""A fourteenth set of NumPy programs as people write them: image processing (Canny's
hysteresis by growing a mask, a Hough accumulator with np.add.at, adaptive thresholding of uint8
images, an image pyramid, template matching by SSD, a morphological gradient, connected
components by a union-find loop), signal loops (a biquad cascade, an LMS adaptive filter, an
integer CIC decimator, Savitzky-Golay by a pseudo-inverse, Welch's PSD over a list of segments,
a running median), finance (Black-Scholes greeks, Monte Carlo with antithetic variates, an
American option on a CRR tree, Wilder's RSI, drawdowns, VWAP bars) and physics (n-body
leapfrog, Ising Metropolis drawing from a Generator, heat with Dirichlet and Neumann ends,
a projectile with drag by a while loop). Each is compiled once and called with several inputs,
twice each, agreeing with NumPy on values, dtypes, shapes and updated arguments."""
import math

import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- image processing ----

def canny_hysteresis(mag, low, high, max_iter=50):
    strong = mag >= high
    weak = (mag >= low) & ~strong
    edges = strong.copy()
    for _ in range(max_iter):
        grown = edges.copy()
        grown[1:, :] |= edges[:-1, :]
        grown[:-1, :] |= edges[1:, :]
        grown[:, 1:] |= edges[:, :-1]
        grown[:, :-1] |= edges[:, 1:]
        new = edges | (grown & weak)
        if np.array_equal(new, edges):
            break
        edges = new
    return edges, int(edges.sum())

def hough_lines(edges, n_theta=36):
    ys, xs = np.nonzero(edges)
    thetas = np.deg2rad(np.arange(0, 180, 180 // n_theta))
    diag = int(np.ceil(np.hypot(*edges.shape)))
    acc = np.zeros((2 * diag + 1, len(thetas)), dtype=np.int64)
    for j, t in enumerate(thetas):
        rho = np.round(xs * np.cos(t) + ys * np.sin(t)).astype(int) + diag
        np.add.at(acc[:, j], rho, 1)
    best = np.unravel_index(np.argmax(acc), acc.shape)
    return acc, best[0] - diag, thetas[best[1]]

def adaptive_threshold(img, block=5, c=2.0):
    pad = block // 2
    p = np.pad(img.astype(np.float64), pad, mode="reflect")
    s = np.zeros_like(img, dtype=np.float64)
    for dy in range(block):
        for dx in range(block):
            s += p[dy:dy + img.shape[0], dx:dx + img.shape[1]]
    mean = s / (block * block)
    return (img > mean - c).astype(np.uint8) * 255

def downsample_pyramid(img, levels=3):
    out = [img]
    cur = img.astype(np.float32)
    for _ in range(levels):
        if min(cur.shape) < 2:
            break
        h, w = cur.shape[0] // 2 * 2, cur.shape[1] // 2 * 2
        cur = 0.25 * (cur[0:h:2, 0:w:2] + cur[1:h:2, 0:w:2] + cur[0:h:2, 1:w:2] + cur[1:h:2, 1:w:2])
        out.append(cur)
    return [o.sum() for o in out], out[-1]

def template_ssd(img, tpl):
    H, W = img.shape
    h, w = tpl.shape
    best = np.inf
    pos = (0, 0)
    for i in range(H - h + 1):
        for j in range(W - w + 1):
            d = np.sum((img[i:i + h, j:j + w] - tpl) ** 2)
            if d < best:
                best = d
                pos = (i, j)
    return pos, best

def morph_gradient(binary):
    p = np.pad(binary, 1, constant_values=False)
    dil = np.zeros_like(binary)
    ero = np.ones_like(binary)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            win = p[dy:dy + binary.shape[0], dx:dx + binary.shape[1]]
            dil |= win
            ero &= win
    return dil & ~ero

def uf_components(mask):
    h, w = mask.shape
    parent = np.arange(h * w)
    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    for i in range(h):
        for j in range(w):
            if not mask[i, j]:
                continue
            k = i * w + j
            if i > 0 and mask[i - 1, j]:
                ra, rb = find(k), find(k - w)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
            if j > 0 and mask[i, j - 1]:
                ra, rb = find(k), find(k - 1)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    labels = np.array([find(k) for k in range(h * w)]).reshape(h, w)
    labels[~mask] = -1
    return labels, len(np.unique(labels[mask]))


# ---- signal processing ----

def biquad_cascade(x, sos):
    y = x.astype(np.float64)
    for b0, b1, b2, a1, a2 in sos:
        z1 = z2 = 0.0
        out = np.empty_like(y)
        for n in range(len(y)):
            xn = y[n]
            yn = b0 * xn + z1
            z1 = b1 * xn - a1 * yn + z2
            z2 = b2 * xn - a2 * yn
            out[n] = yn
        y = out
    return y

def lms_filter(x, d, taps=4, mu=0.05):
    w = np.zeros(taps)
    e = np.zeros(len(x))
    for n in range(taps, len(x)):
        u = x[n - taps:n][::-1]
        y = w @ u
        e[n] = d[n] - y
        w += 2 * mu * e[n] * u
    return w, e

def cic_decimate(x, r=4, stages=2):
    y = x.astype(np.int64)
    for _ in range(stages):
        y = np.cumsum(y)
    y = y[::r]
    for _ in range(stages):
        y = np.diff(y, prepend=0)
    return y

def savgol_smooth(x, window=5, order=2):
    half = window // 2
    A = np.vander(np.arange(-half, half + 1), order + 1, increasing=True).astype(float)
    coeffs = np.linalg.pinv(A)[0]
    padded = np.concatenate([x[half:0:-1], x, x[-2:-half - 2:-1]])
    out = np.zeros(len(x))
    for k in range(window):
        out += coeffs[k] * padded[k:k + len(x)]
    return out

def welch_psd(x, nperseg=16):
    step = nperseg // 2
    win = np.hanning(nperseg)
    scale = 1.0 / (win ** 2).sum()
    segs = []
    for start in range(0, len(x) - nperseg + 1, step):
        seg = x[start:start + nperseg]
        seg = seg - seg.mean()
        segs.append(np.abs(np.fft.rfft(seg * win)) ** 2 * scale)
    return np.mean(segs, axis=0)

def median_filter_1d(x, k=5):
    h = k // 2
    p = np.pad(x, h, mode="edge")
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = np.median(p[i:i + k])
    return out


# ---- finance ----

def _ncdf(x):  # the tanh approximation of the normal CDF
    return 0.5 * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

def bs_greeks(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    pdf = np.exp(-0.5 * d1 ** 2) / np.sqrt(2 * np.pi)
    call = S * _ncdf(d1) - K * np.exp(-r * T) * _ncdf(d2)
    delta = _ncdf(d1)
    gamma = pdf / (S * sigma * np.sqrt(T))
    vega = S * pdf * np.sqrt(T)
    theta = -S * pdf * sigma / (2 * np.sqrt(T)) - r * K * np.exp(-r * T) * _ncdf(d2)
    return np.stack([call, delta, gamma, vega, theta])

def mc_antithetic(S0, K, T, r, sigma, rng, n=2000):
    z = rng.standard_normal(n // 2)
    z = np.concatenate([z, -z])
    ST = S0 * np.exp((r - 0.5 * sigma ** 2) * T + sigma * np.sqrt(T) * z)
    pay = np.maximum(ST - K, 0.0)
    disc = np.exp(-r * T) * pay
    return disc.mean(), disc.std(ddof=1) / np.sqrt(n)

def crr_american(S, K, T, r, sigma, steps=50, call=False):
    dt = T / steps
    u = math.exp(sigma * math.sqrt(dt))
    d = 1 / u
    p = (math.exp(r * dt) - d) / (u - d)
    disc = math.exp(-r * dt)
    j = np.arange(steps + 1)
    prices = S * u ** (steps - j) * d ** j
    vals = np.maximum(prices - K, 0) if call else np.maximum(K - prices, 0)
    for i in range(steps - 1, -1, -1):
        prices = prices[:i + 1] * d
        cont = disc * (p * vals[:i + 1] + (1 - p) * vals[1:i + 2])
        ex = prices - K if call else K - prices
        vals = np.maximum(cont, ex)
    return vals[0]

def rsi(prices, period=14):
    delta = np.diff(prices)
    gain = np.where(delta > 0, delta, 0.0)
    loss = np.where(delta < 0, -delta, 0.0)
    avg_g = gain[:period].mean()
    avg_l = loss[:period].mean()
    out = [100.0 - 100.0 / (1 + avg_g / avg_l) if avg_l > 0 else 100.0]
    for i in range(period, len(delta)):
        avg_g = (avg_g * (period - 1) + gain[i]) / period
        avg_l = (avg_l * (period - 1) + loss[i]) / period
        if avg_l == 0:
            out.append(100.0)
        else:
            out.append(100.0 - 100.0 / (1.0 + avg_g / avg_l))
    return np.array(out)

def underwater(equity):
    peak = equity[0]
    dd = np.zeros_like(equity)
    longest = cur = 0
    for i, v in enumerate(equity):
        if v > peak:
            peak = v
            cur = 0
        else:
            cur += 1
            longest = max(longest, cur)
        dd[i] = (v - peak) / peak
    return dd, longest

def vwap_bars(price, volume, bar=5):
    n = len(price) // bar
    p = price[:n * bar].reshape(n, bar)
    v = volume[:n * bar].reshape(n, bar)
    return (p * v).sum(axis=1) / v.sum(axis=1), p.max(axis=1), p.min(axis=1)

# ---- physics ----

def nbody_leapfrog(pos, vel, mass, dt=0.01, steps=20, soft=0.1):
    def acc(p):
        d = p[None, :, :] - p[:, None, :]
        r2 = (d ** 2).sum(-1) + soft ** 2
        inv = r2 ** -1.5
        np.fill_diagonal(inv, 0.0)
        return (d * (inv * mass[None, :])[:, :, None]).sum(axis=1)
    a = acc(pos)
    for _ in range(steps):
        vel = vel + 0.5 * dt * a
        pos = pos + dt * vel
        a = acc(pos)
        vel = vel + 0.5 * dt * a
    ke = 0.5 * (mass * (vel ** 2).sum(1)).sum()
    return pos, vel, ke

def ising_metropolis(spins, beta, rng, sweeps=3):
    n = spins.shape[0]
    s = spins.copy()
    for _ in range(sweeps):
        for _k in range(n * n):
            i = rng.integers(n)
            j = rng.integers(n)
            nb = s[(i + 1) % n, j] + s[i - 1, j] + s[i, (j + 1) % n] + s[i, j - 1]
            dE = 2 * s[i, j] * nb
            if dE <= 0 or rng.random() < math.exp(-beta * dE):
                s[i, j] = -s[i, j]
    return s, s.mean()

def heat_dirichlet_neumann(u0, alpha=0.2, steps=100, left=1.0):
    u = u0.copy()
    for _ in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] + alpha * (un[2:] - 2 * un[1:-1] + un[:-2])
        u[0] = left
        u[-1] = u[-2]
    return u

def projectile_drag(v0, angle, k=0.1, dt=0.01):
    x, y = 0.0, 0.0
    vx, vy = v0 * math.cos(angle), v0 * math.sin(angle)
    xs = [x]
    ys = [y]
    while y >= 0.0:
        v = math.sqrt(vx * vx + vy * vy)
        vx -= k * v * vx * dt
        vy -= (9.81 + k * v * vy) * dt
        x += vx * dt
        y += vy * dt
        xs.append(x)
        ys.append(y)
    return np.array(xs), np.array(ys)


def rng(seed=0):
    return np.random.default_rng(seed)

def image(seed, h=12, w=14):
    return rng(seed).random((h, w))

def blobs(seed):
    return rng(seed).random((8, 9)) > 0.55

def edge_map(seed):
    edges = np.zeros((10, 12), bool)
    edges[3, 2:9] = True
    edges[1:8, 5] = True
    return edges | (rng(seed).random((10, 12)) > 0.93)

def signal(seed, n=64):
    return np.sin(np.arange(n) * 0.3) + 0.1 * rng(seed).standard_normal(n)

def prices(seed, n=60):
    return 100 * np.exp(np.cumsum(0.01 * rng(seed).standard_normal(n)))


def test_image_processing():
    check_calls(canny_hysteresis, [(image(1), 0.3, 0.8),
                                   (image(2).astype(np.float32), 0.2, 0.9)])
    check_calls(hough_lines, [(edge_map(1),), (edge_map(2),)])
    bytes_image = (image(1) * 255).astype(np.uint8)
    check_calls(adaptive_threshold, [(bytes_image,),
                                     ((image(3, 9, 7) * 255).astype(np.uint8), 3, 5.0)])
    check_calls(downsample_pyramid, [(image(1, 16, 16),), (image(2, 9, 13),)])
    check_calls(template_ssd, [(image(1, 8, 9), image(1, 8, 9)[2:5, 3:6].copy()),
                               (image(2, 7, 7), image(5, 3, 3))])
    check_calls(morph_gradient, [(blobs(1),), (blobs(2),)])
    check_calls(uf_components, [(blobs(1),), (blobs(3),)])


def test_signal_processing():
    sections = [(0.2, 0.4, 0.2, -0.5, 0.3), (1.0, -1.8, 0.81, -1.6, 0.7)]
    check_calls(biquad_cascade, [(signal(1), sections),
                                 (signal(2).astype(np.float32), sections[:1])])
    check_calls(lms_filter, [(signal(1), signal(2)), (signal(3), 0.5 * signal(3), 3, 0.1)])
    check_calls(cic_decimate, [(rng(1).integers(-5, 5, 40),),
                               (rng(2).integers(0, 100, 33).astype(np.int16), 3, 3)])
    check_calls(savgol_smooth, [(signal(1, 30),), (signal(2, 20), 7, 3)])
    check_calls(welch_psd, [(signal(1, 64),), (signal(2, 50).astype(np.float32), 8)],
                float32_inputs=True)  # a float32 segment's mean: float32's precision
    check_calls(median_filter_1d, [(signal(1, 30),), (rng(2).integers(0, 9, 20), 3)])


def test_finance():
    check_calls(bs_greeks, [(np.linspace(80, 120, 7), 100.0, 0.5, 0.02, 0.25)])
    # float32 prices: NumPy's float32 log and kiln's differ in the last bit
    check_calls(bs_greeks, [(np.float32([90, 100]), 95, 1.0, 0.01, 0.3)], float32_inputs=True)
    check_calls(mc_antithetic, [(100.0, 105.0, 1.0, 0.03, 0.2, rng(9)),
                                (50.0, 50.0, 0.5, 0.0, 0.4, rng(10), 400)])
    check_calls(crr_american, [(100.0, 100.0, 1.0, 0.05, 0.2),
                               (50.0, 55.0, 0.5, 0.01, 0.3, 30, True)])
    check_calls(rsi, [(prices(1),), (prices(2, 40), 5)])
    check_calls(underwater, [(prices(1),), (prices(3, 30).astype(np.float32),)])
    check_calls(vwap_bars, [(prices(1), rng(1).integers(1, 100, 60)),
                            (prices(2, 23), rng(2).random(23), 4)])


def test_physics():
    check_calls(nbody_leapfrog, [(rng(1).random((5, 3)), np.zeros((5, 3)), np.ones(5)),
                                 (rng(2).random((4, 2)), rng(3).random((4, 2)), rng(4).random(4),
                                  0.005, 10)])
    spins = np.where(rng(1).random((6, 6)) > 0.5, 1, -1)
    check_calls(ising_metropolis, [(spins, 0.4, rng(11)),
                                   (np.ones((5, 5), np.int8), 1.0, rng(12), 2)])
    check_calls(heat_dirichlet_neumann, [(np.zeros(20),),
                                         (rng(1).random(15).astype(np.float32), 0.4, 50, 0.0)])
    check_calls(projectile_drag, [(20.0, 0.7), (10.0, 1.2, 0.05)])
