"""The tenth set's image processing (a separable Gaussian, a median filter by loops, histogram
equalisation, box filters through an integral image, bilinear resizing, Otsu's threshold, Sobel
by loops, erosion), hand-written sorting and searching (bubble and selection sort, binary search,
quickselect, merging two sorted arrays, run-length encoding, counting sort, two pointers) and
particles (Verlet with periodic boundaries, SPH density, cell lists, N-body pairs, bouncing balls,
a pendulum by RK4, random walks from a seeded default_rng). Each is compiled once and called with
several inputs, agreeing with NumPy on values, dtypes, shapes, Python types and the arrays updated
in place."""
import math

import numpy as np

from test_numpy_programs_seventh import check_calls


# ---- image processing ----

def gaussian_blur3(img):
    k = np.array([1., 2., 1.]) / 4
    p = np.pad(img, 1, mode="edge")
    h = k[0] * p[:, :-2] + k[1] * p[:, 1:-1] + k[2] * p[:, 2:]
    return k[0] * h[:-2] + k[1] * h[1:-1] + k[2] * h[2:]

def median3(img):
    H, W = img.shape
    out = img.copy()
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            out[i, j] = np.median(img[i - 1:i + 2, j - 1:j + 2])
    return out

def hist_equalize(img):
    hist = np.bincount(img.ravel(), minlength=256)
    cdf = hist.cumsum()
    cdf_min = cdf[cdf > 0].min()
    lut = np.round((cdf - cdf_min) / (img.size - cdf_min) * 255).clip(0, 255).astype(np.uint8)
    return lut[img]

def integral_image(img):
    S = np.zeros((img.shape[0] + 1, img.shape[1] + 1), dtype=np.int64)
    S[1:, 1:] = img.cumsum(0).cumsum(1)
    return S

def box_sum(S, r0, c0, r1, c1):
    return S[r1, c1] - S[r0, c1] - S[r1, c0] + S[r0, c0]

def box_filter_loops(img, r):
    S = integral_image(img)
    H, W = img.shape
    out = np.zeros((H, W))
    for i in range(H):
        for j in range(W):
            r0, r1 = max(i - r, 0), min(i + r + 1, H)
            c0, c1 = max(j - r, 0), min(j + r + 1, W)
            out[i, j] = box_sum(S, r0, c0, r1, c1) / ((r1 - r0) * (c1 - c0))
    return out

def bilinear_resize(img, H2, W2):
    H, W = img.shape
    ys = np.linspace(0, H - 1, H2); xs = np.linspace(0, W - 1, W2)
    y0 = np.floor(ys).astype(int); x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, H - 1); x1 = np.minimum(x0 + 1, W - 1)
    wy = (ys - y0)[:, None]; wx = (xs - x0)[None, :]
    a = img[y0][:, x0]; b = img[y0][:, x1]; c = img[y1][:, x0]; d = img[y1][:, x1]
    return (a * (1 - wx) * (1 - wy) + b * wx * (1 - wy) + c * (1 - wx) * wy + d * wx * wy)

def otsu_threshold(img):
    hist = np.bincount(img.ravel(), minlength=256).astype(np.float64)
    total = img.size
    sum_all = np.dot(np.arange(256), hist)
    wb = 0.0; sb = 0.0; best = 0.0; thr = 0
    for t in range(256):
        wb += hist[t]
        if wb == 0:
            continue
        wf = total - wb
        if wf == 0:
            break
        sb += t * hist[t]
        mb = sb / wb; mf = (sum_all - sb) / wf
        between = wb * wf * (mb - mf) ** 2
        if between > best:
            best = between; thr = t
    return thr

def sobel_loops(img):
    H, W = img.shape
    gx = np.zeros_like(img, dtype=np.float64); gy = np.zeros_like(gx)
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            gx[i, j] = (img[i-1, j+1] + 2*img[i, j+1] + img[i+1, j+1]) - (img[i-1, j-1] + 2*img[i, j-1] + img[i+1, j-1])
            gy[i, j] = (img[i+1, j-1] + 2*img[i+1, j] + img[i+1, j+1]) - (img[i-1, j-1] + 2*img[i-1, j] + img[i-1, j+1])
    return np.hypot(gx, gy)

def erode(mask, iterations):
    m = mask.copy()
    for _ in range(iterations):
        p = np.pad(m, 1, constant_values=False)
        m = p[1:-1, 1:-1] & p[:-2, 1:-1] & p[2:, 1:-1] & p[1:-1, :-2] & p[1:-1, 2:]
    return m

def test_a_float32_image_blurred_by_numpys_scalars_stays_float32():
    # k[0] * p: NumPy's float64 scalar times float32 is float32 (NEP 50; NumPy 1.x by value)
    image = np.random.default_rng(17).random((40, 30)).astype(np.float32)
    check_calls(gaussian_blur3, [(image,)])


def test_image_processing():
    rng = np.random.default_rng(16)
    img8 = lambda h, w: rng.integers(0, 256, (h, w)).astype(np.uint8)
    check_calls(gaussian_blur3, [(rng.random((5, 6)),), (rng.random((200, 300)),)])
    check_calls(median3, [(rng.random((5, 6)),), (rng.random((30, 30)),)])
    check_calls(hist_equalize, [(img8(8, 8),), (img8(200, 200),)])
    check_calls(box_filter_loops, [(rng.integers(0, 10, (5, 6)), 1), (rng.integers(0, 10, (40, 50)), 2)])
    check_calls(bilinear_resize, [(rng.random((4, 5)), 7, 9), (rng.random((100, 80)), 250, 200)])
    check_calls(otsu_threshold, [(img8(8, 8),), (img8(200, 200),)])
    check_calls(sobel_loops, [(rng.random((5, 6)),), (rng.random((60, 60)),), (rng.integers(0, 9, (7, 7)),)])
    check_calls(erode, [(rng.random((6, 6)) < .8, 1), (rng.random((100, 100)) < .9, 3)])


# ---- sorting and searching ----

def bubble_sort(a):
    a = a.copy(); n = len(a)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
                swapped = True
        if not swapped:
            break
    return a

def binary_search(sorted_x, target):
    lo, hi = 0, len(sorted_x) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if sorted_x[mid] == target:
            return mid
        elif sorted_x[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1

def quickselect(x, k):
    a = x.copy()
    lo, hi = 0, len(a) - 1
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1; j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return a[k]

def merge_sorted(a, b):
    out = np.empty(len(a) + len(b), dtype=np.result_type(a.dtype, b.dtype))
    i = j = k = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out[k] = a[i]; i += 1
        else:
            out[k] = b[j]; j += 1
        k += 1
    while i < len(a):
        out[k] = a[i]; i += 1; k += 1
    while j < len(b):
        out[k] = b[j]; j += 1; k += 1
    return out

def run_length_encode(x):
    n = len(x)
    values = np.empty(n, dtype=x.dtype); lengths = np.zeros(n, dtype=np.int64)
    m = 0; i = 0
    while i < n:
        j = i
        while j < n and x[j] == x[i]:
            j += 1
        values[m] = x[i]; lengths[m] = j - i; m += 1
        i = j
    return values[:m], lengths[:m]

def rle_vectorized(x):
    change = np.flatnonzero(np.diff(x)) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [len(x)])))
    return x[starts], lengths

def selection_sort_inplace(a):
    n = len(a)
    for i in range(n - 1):
        m = i
        for j in range(i + 1, n):
            if a[j] < a[m]:
                m = j
        if m != i:
            tmp = a[i]; a[i] = a[m]; a[m] = tmp

def counting_sort(x, k):
    counts = np.zeros(k, dtype=np.int64)
    for v in x:
        counts[v] += 1
    out = np.empty_like(x)
    pos = 0
    for v in range(k):
        for _ in range(counts[v]):
            out[pos] = v; pos += 1
    return out

def searchsorted_by_hand(edges, values):
    idx = np.empty(len(values), dtype=np.int64)
    for n in range(len(values)):
        lo, hi = 0, len(edges)
        while lo < hi:
            mid = (lo + hi) // 2
            if edges[mid] < values[n]:
                lo = mid + 1
            else:
                hi = mid
        idx[n] = lo
    return idx

def two_sum_sorted(x, target):
    i, j = 0, len(x) - 1
    while i < j:
        s = x[i] + x[j]
        if s == target:
            return i, j
        if s < target:
            i += 1
        else:
            j -= 1
    return None

def test_sorting_and_searching():
    rng = np.random.default_rng(21)
    sx = np.sort(rng.integers(0, 1000, 500))
    check_calls(bubble_sort, [(rng.random(8),), (rng.integers(0, 100, 150),), (np.arange(10),)])
    check_calls(binary_search, [(sx[:10], sx[3]), (sx, sx[333]), (sx, -5)])
    check_calls(quickselect, [(rng.random(9), 4), (rng.integers(0, 1000, 1001), 500)])
    check_calls(merge_sorted, [(np.sort(rng.random(5)), np.sort(rng.random(7))), (np.sort(rng.integers(0, 99, 300)), np.sort(rng.random(200)))])
    check_calls(run_length_encode, [(np.array([1, 1, 2, 2, 2, 3]),), (rng.integers(0, 3, 500),)])
    check_calls(rle_vectorized, [(np.array([1, 1, 2, 2, 2, 3]),), (rng.integers(0, 3, 500),)])
    check_calls(selection_sort_inplace, [(rng.random(8),), (rng.random(100)[::2],)])
    check_calls(counting_sort, [(rng.integers(0, 5, 10), 5), (rng.integers(0, 50, 1000), 50)])
    check_calls(searchsorted_by_hand, [(np.sort(rng.random(10)), rng.random(5)), (np.sort(rng.random(1000)), rng.random(500))])
    check_calls(two_sum_sorted, [(np.array([1, 2, 4, 7, 11]), 15), (np.sort(rng.integers(0, 10000, 500)), 10001), (np.array([1, 2]), 9)])


# ---- particles and physics ----

def verlet_periodic(pos, vel, L, dt, steps):
    pos = pos.copy(); vel = vel.copy()
    def forces(p):
        d = p[:, None, :] - p[None, :, :]
        d -= L * np.round(d / L)
        r2 = (d ** 2).sum(-1) + np.eye(len(p))
        inv6 = 1.0 / r2 ** 3
        f = (24 * (2 * inv6 ** 2 - inv6) / r2)[:, :, None] * d
        np.einsum('iik->ik', f)[...] = 0
        return f.sum(axis=1)
    f = forces(pos)
    for _ in range(steps):
        vel += 0.5 * dt * f
        pos = (pos + dt * vel) % L
        f = forces(pos)
        vel += 0.5 * dt * f
    ke = 0.5 * (vel ** 2).sum()
    return pos, vel, ke

def sph_density(pos, h, mass):
    n = len(pos)
    rho = np.zeros(n)
    for i in range(n):
        for j in range(n):
            r = np.sqrt(((pos[i] - pos[j]) ** 2).sum())
            q = r / h
            if q < 1:
                rho[i] += mass * (1 - 1.5 * q * q + 0.75 * q ** 3)
            elif q < 2:
                rho[i] += mass * 0.25 * (2 - q) ** 3
    return rho / (math.pi * h ** 3)

def cell_list_pairs(pos, L, rc):
    nc = int(L // rc)
    cell = np.floor(pos / (L / nc)).astype(np.int64) % nc
    cid = cell[:, 0] * nc + cell[:, 1]
    count = 0
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            dx = abs(cell[i, 0] - cell[j, 0]); dy = abs(cell[i, 1] - cell[j, 1])
            dx = min(dx, nc - dx); dy = min(dy, nc - dy)
            if dx <= 1 and dy <= 1:
                d = pos[i] - pos[j]
                d -= L * np.round(d / L)
                if d @ d < rc * rc:
                    count += 1
    return count, cid

def nbody_pairs(pos, mass, eps):
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    for i in range(n):
        for j in range(n):
            if i != j:
                d = pos[j] - pos[i]
                r2 = d[0] ** 2 + d[1] ** 2 + d[2] ** 2 + eps ** 2
                acc[i] += mass[j] * d / r2 ** 1.5
    return acc

def bouncing_balls(y, v, g, dt, steps, restitution):
    y = y.copy(); v = v.copy()
    bounces = np.zeros(len(y), dtype=np.int64)
    for _ in range(steps):
        v -= g * dt
        y += v * dt
        hit = y < 0
        y[hit] = -y[hit]
        v[hit] = -restitution * v[hit]
        bounces += hit
    return y, v, bounces

def pendulum_rk4(theta0, omega0, dt, steps):
    def f(th, om):
        return om, -9.81 * math.sin(th)
    th, om = theta0, omega0
    out = np.empty((steps, 2))
    for n in range(steps):
        k1 = f(th, om)
        k2 = f(th + 0.5 * dt * k1[0], om + 0.5 * dt * k1[1])
        k3 = f(th + 0.5 * dt * k2[0], om + 0.5 * dt * k2[1])
        k4 = f(th + dt * k3[0], om + dt * k3[1])
        th += dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        om += dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        out[n] = th, om
    return out

def random_walk_msd(n_walkers, steps, seed):
    gen = np.random.default_rng(seed)
    pos = np.zeros((n_walkers, 2))
    msd = np.empty(steps)
    for t in range(steps):
        pos += gen.choice([-1.0, 1.0], size=(n_walkers, 2))
        msd[t] = (pos ** 2).sum(axis=1).mean()
    return msd

def test_particles_and_physics():
    rng = np.random.default_rng(21)
    check_calls(verlet_periodic, [(rng.random((4, 2)) * 5, np.zeros((4, 2)), 5.0, 0.001, 5), (rng.random((30, 2)) * 20, rng.standard_normal((30, 2)) * 0.1, 20.0, 0.0005, 100)])
    check_calls(sph_density, [(rng.random((5, 2)), 0.3, 1.0), (rng.random((60, 2)), 0.2, 0.5)])
    check_calls(cell_list_pairs, [(rng.random((8, 2)) * 4, 4.0, 1.0), (rng.random((100, 2)) * 10, 10.0, 1.0)])
    check_calls(nbody_pairs, [(rng.random((4, 3)), rng.random(4), 0.1), (rng.random((40, 3)), rng.random(40), 0.1)])
    check_calls(bouncing_balls, [(rng.random(4) * 10, np.zeros(4), 9.81, 0.01, 100, 0.9), (rng.random(1000) * 10, np.zeros(1000), 9.81, 0.01, 500, 0.9)])
    check_calls(pendulum_rk4, [(1.0, 0.0, 0.01, 10), (2.0, 0.5, 0.01, 2000)])
    check_calls(random_walk_msd, [(5, 10, 1), (1000, 200, 2)])


