"""Fifteenth set, images, signals, physics and learners as people write them: Zhang-Suen
thinning, histogram matching, RGB to HSV, a multi-level Haar transform, an orthonormal DCT by a
matrix, a Lomb-Scargle periodogram, a split-step Fourier Schrodinger solver in complex128, a
ray-sphere renderer, Kepler's equation by vectorised Newton, a bond's yield, duration and
convexity, quaternion integration of a spinning body, single-linkage clustering, NMF by
multiplicative updates, AdaBoost on stumps, a Gibbs sampler and a genetic algorithm drawing
from a Generator, an HPP lattice gas in uint8 bits and a big-endian binary header parsed by
np.frombuffer with a structured dtype. Each is compiled once and called with several inputs,
twice each, agreeing with NumPy."""
import numpy as np

from test_numpy_programs_eleventh import check_calls


# ---- images ----

def zhang_suen(img, max_iter=20):
    im = img.astype(np.uint8).copy()
    for it in range(max_iter):
        changed = 0
        for step in range(2):
            p = np.pad(im, 1)
            P2, P3, P4 = p[:-2, 1:-1], p[:-2, 2:], p[1:-1, 2:]
            P5, P6, P7 = p[2:, 2:], p[2:, 1:-1], p[2:, :-2]
            P8, P9 = p[1:-1, :-2], p[:-2, :-2]
            ring = [P2, P3, P4, P5, P6, P7, P8, P9, P2]
            B = sum(x.astype(np.int32) for x in ring[:8])
            A = sum(((ring[k] == 0) & (ring[k + 1] == 1)).astype(np.int32) for k in range(8))
            if step == 0:
                c1, c2 = P2 * P4 * P6, P4 * P6 * P8
            else:
                c1, c2 = P2 * P4 * P8, P2 * P6 * P8
            remove = (im == 1) & (B >= 2) & (B <= 6) & (A == 1) & (c1 == 0) & (c2 == 0)
            changed += int(remove.sum())
            im[remove] = 0
        if changed == 0:
            break
    return im, it

def histogram_match(source, template):
    s_values, s_idx, s_counts = np.unique(source.ravel(), return_inverse=True,
                                          return_counts=True)
    t_values, t_counts = np.unique(template.ravel(), return_counts=True)
    s_cdf = np.cumsum(s_counts).astype(np.float64) / source.size
    t_cdf = np.cumsum(t_counts).astype(np.float64) / template.size
    matched = np.interp(s_cdf, t_cdf, t_values)
    return matched[s_idx].reshape(source.shape)

def rgb_to_hsv(rgb):
    rgb = rgb.astype(np.float32) / 255
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = rgb.max(axis=-1)
    minc = rgb.min(axis=-1)
    v = maxc
    delta = maxc - minc
    s = np.where(maxc > 0, delta / np.where(maxc > 0, maxc, 1), 0)
    safe = np.where(delta > 0, delta, 1)
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    return np.stack([h, s, v], axis=-1)

def haar_levels(x, levels):
    coeffs = []
    a = x.astype(np.float64)
    for _ in range(levels):
        if len(a) % 2:
            a = np.append(a, a[-1])
        even, odd = a[0::2], a[1::2]
        coeffs.append((even - odd) / np.sqrt(2))
        a = (even + odd) / np.sqrt(2)
    energy = [float(np.sum(c ** 2)) for c in coeffs]
    return a, coeffs, energy

# ---- signals ----

def dct_matrix_transform(x):
    n = x.shape[-1]
    k = np.arange(n)[:, None]
    m = np.arange(n)[None, :]
    C = np.sqrt(2.0 / n) * np.cos(np.pi * (2 * m + 1) * k / (2 * n))
    C[0] /= np.sqrt(2.0)
    y = x @ C.T
    keep = np.abs(y) >= np.quantile(np.abs(y), 0.5, axis=-1, keepdims=True)
    return y, (y * keep) @ C

def lomb_scargle(t, y, freqs):
    y = y - y.mean()
    power = np.zeros(len(freqs))
    for i, f in enumerate(freqs):
        w = 2 * np.pi * f
        tau = np.arctan2(np.sum(np.sin(2 * w * t)), np.sum(np.cos(2 * w * t))) / (2 * w)
        c = np.cos(w * (t - tau))
        s = np.sin(w * (t - tau))
        power[i] = 0.5 * ((y @ c) ** 2 / (c @ c) + (y @ s) ** 2 / (s @ s))
    return power / y.var(), freqs[np.argmax(power)]

# ---- physics ----

def split_step_schrodinger(psi0, x, dt, steps, omega=1.0):
    psi = psi0.astype(np.complex128)
    dx = x[1] - x[0]
    k = 2 * np.pi * np.fft.fftfreq(len(x), d=dx)
    V = 0.5 * omega ** 2 * x ** 2
    half_v = np.exp(-0.5j * V * dt)
    kinetic = np.exp(-0.5j * k ** 2 * dt)
    norms = []
    for _ in range(steps):
        psi = half_v * psi
        psi = np.fft.ifft(kinetic * np.fft.fft(psi))
        psi = half_v * psi
        norms.append(np.sum(np.abs(psi) ** 2) * dx)
    return psi, np.array(norms), np.sum(x * np.abs(psi) ** 2) * dx

def render_spheres(width, height, centres, radii, light):
    ys, xs = np.mgrid[0:height, 0:width]
    dirs = np.stack([(xs - width / 2) / width, (ys - height / 2) / height,
                     np.ones_like(xs, dtype=float)], axis=-1)
    dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
    depth = np.full((height, width), np.inf)
    shade = np.zeros((height, width))
    light = light / np.linalg.norm(light)
    for c, r in zip(centres, radii):
        b = dirs @ c
        disc = b ** 2 - (c @ c - r ** 2)
        hit = disc > 0
        t = np.where(hit, b - np.sqrt(np.where(hit, disc, 0)), np.inf)
        closer = hit & (t > 0) & (t < depth)
        normal = dirs * t[..., None] - c
        normal /= r
        lambert = np.clip(normal @ light, 0, 1)
        depth = np.where(closer, t, depth)
        shade = np.where(closer, lambert, shade)
    return shade, np.isfinite(depth).sum()

def kepler_solve(M, e, tol=1e-13, max_iter=50):
    E = np.where(e < 0.8, M, np.pi * np.ones_like(M))
    for i in range(max_iter):
        dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E -= dE
        if np.max(np.abs(dE)) < tol:
            break
    nu = 2 * np.arctan2(np.sqrt(1 + e) * np.sin(E / 2), np.sqrt(1 - e) * np.cos(E / 2))
    return E, nu, i

def bond_analytics(price, coupon, years, freq=2, face=100.0):
    n = int(years * freq)
    times = np.arange(1, n + 1) / freq
    flows = np.full(n, coupon * face / freq)
    flows[-1] += face
    lo, hi = -0.5, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        pv = np.sum(flows / (1 + mid / freq) ** (times * freq))
        if pv > price:
            lo = mid
        else:
            hi = mid
    y = 0.5 * (lo + hi)
    disc = flows / (1 + y / freq) ** (times * freq)
    pv = disc.sum()
    duration = np.sum(times * disc) / pv
    convexity = np.sum(times * (times + 1 / freq) * disc) / (pv * (1 + y / freq) ** 2)
    return y, duration / (1 + y / freq), convexity

def quaternion_spin(omega, dt, steps):
    q = np.array([1.0, 0.0, 0.0, 0.0])
    for _ in range(steps):
        w, x, y, z = q
        ox, oy, oz = omega
        dq = 0.5 * np.array([-x * ox - y * oy - z * oz,
                             w * ox + y * oz - z * oy,
                             w * oy - x * oz + z * ox,
                             w * oz + x * oy - y * ox])
        q = q + dt * dq
        q /= np.linalg.norm(q)
    w, x, y, z = q
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return q, R

def hpp_lattice_gas(cells, steps):
    # bits: 1 east, 2 north, 4 west, 8 south
    c = cells.copy()
    for _ in range(steps):
        head_on = (c == 5) | (c == 10)
        c = np.where(head_on, c ^ 15, c).astype(np.uint8)
        east = np.roll(c & 1, 1, axis=1)
        west = np.roll(c & 4, -1, axis=1)
        north = np.roll(c & 2, -1, axis=0)
        south = np.roll(c & 8, 1, axis=0)
        c = east | west | north | south
    bits = np.unpackbits(c[..., None], axis=-1).sum()
    return c, int(bits)

# ---- learners ----

def single_linkage(points, k):
    n = len(points)
    d = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    labels = np.arange(n)
    merges = []
    for _ in range(n - k):
        i, j = np.unravel_index(np.argmin(d), d.shape)
        merges.append(d[i, j])
        li, lj = labels[i], labels[j]
        labels[labels == lj] = li
        same = labels[:, None] == labels[None, :]
        d[same] = np.inf
    _, labels = np.unique(labels, return_inverse=True)
    return labels, np.array(merges)

def nmf(V, rank, iters=100, eps=1e-9):
    n, m = V.shape
    W = np.full((n, rank), 0.5) + 0.1 * np.arange(n * rank).reshape(n, rank) / (n * rank)
    H = np.full((rank, m), 0.5) + 0.1 * np.arange(rank * m).reshape(rank, m) / (rank * m)
    for _ in range(iters):
        H *= (W.T @ V) / (W.T @ W @ H + eps)
        W *= (V @ H.T) / (W @ H @ H.T + eps)
    return W, H, np.linalg.norm(V - W @ H)

def adaboost_stumps(X, y, rounds=5):
    n, d = X.shape
    w = np.full(n, 1.0 / n)
    model = []
    for _ in range(rounds):
        best = (np.inf, 0, 0.0, 1)
        for f in range(d):
            for thr in np.unique(X[:, f]):
                for sign in (1, -1):
                    pred = np.where(sign * (X[:, f] - thr) >= 0, 1, -1)
                    err = w[pred != y].sum()
                    if err < best[0]:
                        best = (err, f, thr, sign)
        err, f, thr, sign = best
        err = min(max(err, 1e-10), 1 - 1e-10)
        alpha = 0.5 * np.log((1 - err) / err)
        pred = np.where(sign * (X[:, f] - thr) >= 0, 1, -1)
        w *= np.exp(-alpha * y * pred)
        w /= w.sum()
        model.append((f, thr, sign, alpha))
    score = sum(a * np.where(s * (X[:, f] - t) >= 0, 1, -1) for f, t, s, a in model)
    return model, np.mean(np.sign(score) == y)

def gibbs_bivariate(rho, n, g, burn=50):
    x = y = 0.0
    samples = np.empty((n, 2))
    sd = np.sqrt(1 - rho ** 2)
    for i in range(n + burn):
        x = g.normal(rho * y, sd)
        y = g.normal(rho * x, sd)
        if i >= burn:
            samples[i - burn] = x, y
    return samples.mean(axis=0), np.corrcoef(samples.T)[0, 1]

def genetic_onemax(n_bits, pop_size, g, generations=20, mutation=0.02):
    pop = g.random((pop_size, n_bits)) < 0.5
    best_history = []
    for _ in range(generations):
        fitness = pop.sum(axis=1)
        best_history.append(int(fitness.max()))
        a, b = g.integers(0, pop_size, (2, pop_size))
        parents = np.where((fitness[a] >= fitness[b])[:, None], pop[a], pop[b])
        cut = g.integers(1, n_bits, pop_size)
        mask = np.arange(n_bits)[None, :] < cut[:, None]
        children = np.where(mask, parents, np.roll(parents, 1, axis=0))
        flips = g.random(children.shape) < mutation
        pop = children ^ flips
    return pop.sum(axis=1).max(), best_history

# ---- binary formats ----

HEADER = np.dtype([("magic", ">u4"), ("version", ">u2"), ("count", ">u2"),
                   ("scale", ">f4")])

def parse_records(blob):
    header = np.frombuffer(blob, dtype=HEADER, count=1)[0]
    body = np.frombuffer(blob, dtype=">i2", offset=HEADER.itemsize, count=int(header["count"]))
    values = body.astype(np.float32) * header["scale"]
    return int(header["magic"]), int(header["version"]), values, values.astype("<f4").tobytes()


def rng(seed=0):
    return np.random.default_rng(seed)


def blob(version, values, scale):
    head = np.array([(0x4B494C4E, version, len(values), scale)], dtype=HEADER).tobytes()
    return head + np.asarray(values, dtype=">i2").tobytes()


def test_images():
    shape = np.zeros((10, 12), dtype=np.uint8)
    shape[2:8, 2:10] = 1
    check_calls(zhang_suen, [(shape,), (rng(1).random((9, 9)) < 0.6,)])
    src = rng(1).integers(0, 255, (6, 7)).astype(np.uint8)
    check_calls(histogram_match, [(src, rng(2).integers(50, 100, (5, 5))),
                                  (rng(3).random((4, 4)), rng(4).random(30))])
    check_calls(rgb_to_hsv, [(rng(1).integers(0, 256, (5, 6, 3)),),
                             (np.array([[[255, 0, 0], [0, 0, 0], [9, 9, 9]]], np.uint8),)])
    check_calls(haar_levels, [(rng(1).random(16), 3), (np.arange(11), 2)])


def test_signals():
    check_calls(dct_matrix_transform, [(rng(1).random(16),), (rng(2).random((3, 8)),)])
    t = np.sort(rng(1).random(40)) * 10
    check_calls(lomb_scargle, [(t, np.sin(2 * np.pi * 0.7 * t), np.linspace(0.1, 2, 30)),
                               (t[:20], rng(2).random(20), np.array([0.3, 0.5]))])


def test_physics():
    x = np.linspace(-8, 8, 64, endpoint=False)
    check_calls(split_step_schrodinger, [(np.exp(-(x - 1) ** 2), x, 0.01, 20),
                                         (np.exp(-x ** 2 + 0.5j * x), x, 0.05, 5, 2.0)])
    centres = [np.array([0.0, 0.0, 5.0]), np.array([1.0, 0.5, 7.0])]
    check_calls(render_spheres, [(16, 12, centres, [1.5, 2.0], np.array([1.0, -1.0, -1.0])),
                                 (8, 8, centres[:1], [0.5], np.array([0.0, 0.0, -1.0]))])
    check_calls(kepler_solve, [(np.linspace(0, 2 * np.pi, 9), 0.3),
                               (rng(1).random(5) * 6, np.array([0.1, 0.5, 0.9, 0.95, 0.0]))])
    check_calls(bond_analytics, [(98.5, 0.05, 5), (103.0, 0.06, 10.5, 1)])
    check_calls(quaternion_spin, [(np.array([0.0, 0.0, 1.0]), 0.01, 100),
                                  (np.array([0.3, -0.2, 0.5]), 0.05, 40)])
    gas = (rng(1).random((8, 10)) * 16).astype(np.uint8)
    check_calls(hpp_lattice_gas, [(gas, 5), (gas[:4, :4].copy(), 12)])


def test_learners():
    pts = np.concatenate([rng(1).random((5, 2)), rng(2).random((5, 2)) + 3])
    check_calls(single_linkage, [(pts, 2), (rng(3).random((7, 3)), 3)])
    check_calls(nmf, [(rng(1).random((6, 5)), 2), (rng(2).random((4, 8)), 3, 30)])
    X = rng(4).random((20, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0.8, 1, -1)
    check_calls(adaboost_stumps, [(X, y), (X[:12, :2], y[:12], 3)])
    check_calls(gibbs_bivariate, [(0.8, 200, rng(1)), (-0.3, 100, rng(2), 10)])
    check_calls(genetic_onemax, [(16, 20, rng(1)), (10, 8, rng(2), 5, 0.1)])


def test_binary_formats():
    check_calls(parse_records, [(blob(3, [1, -2, 300, 4], 0.5),), (blob(1, [7], 2.0),),
                                (blob(2, np.arange(-20, 20, 3), 0.25),)])
