"""A third set of real NumPy programs written by others, as their authors write them (session
42's npbench / PolyBench kernels are in test_numpy_programs.py, session 43's Rougier / Numba /
small ML ones in test_numpy_programs_more.py): Nicolas Rougier's "100 NumPy exercises"
(github.com/rougier/numpy-100, MIT) that are functions of arrays, scikit-learn's algorithms
written in plain NumPy the way tutorials and course notes write them, signal and image
processing, and small simulations. Each runs through kiln.compile and must agree with NumPy on
its first call (trace and compile) and a second (the cached graph), on results and on the
arrays it updates in place; what kiln cannot capture runs eagerly, still NumPy's answer."""

import numpy as np
import pytest
from numpy.lib import stride_tricks

import kiln
from test_numpy_programs import _breaks, check_program


# -- "100 NumPy exercises" (rougier/numpy-100), the answers as written ------------------------

def rolling(a, window):
    """#75: a sliding window by strides."""
    shape = (a.size - window + 1, window)
    strides = (a.strides[0], a.strides[0])
    return stride_tricks.as_strided(a, shape=shape, strides=strides)


def rolling_view(Z):
    """#75, the alternative answer (NumPy >= 1.20)."""
    return np.lib.stride_tricks.sliding_window_view(Z, window_shape=3)


def contiguous_blocks(Z):
    """#84: all the contiguous 3x3 blocks of a matrix."""
    n = 3
    i = 1 + (Z.shape[0] - 3)
    j = 1 + (Z.shape[1] - 3)
    C = stride_tricks.as_strided(Z, shape=(i, j, n, n), strides=Z.strides + Z.strides)
    return C


def accumulate_by_index(X, I):
    """#65: accumulate the elements of X into F by an index list I."""
    F = np.bincount(I, X)
    return F


def subset_means(D, S):
    """#68: the means of subsets of D given by S."""
    D_sums = np.bincount(S, weights=D)
    D_counts = np.bincount(S)
    D_means = D_sums / D_counts
    return D_means


def block_sum(Z, k):
    """#87: block sums of a matrix by np.add.reduceat."""
    S = np.add.reduceat(np.add.reduceat(Z, np.arange(0, Z.shape[0], k), axis=0),
                        np.arange(0, Z.shape[1], k), axis=1)
    return S


def block_sum_windows(Z, k):
    """#87, the alternative answer (sliding_window_view, then a stride)."""
    windows = np.lib.stride_tricks.sliding_window_view(Z, (k, k))
    S = windows[::k, ::k, ...].sum(axis=(-2, -1))
    return S


def unique_rows(Z):
    """#90: the unique rows of a 2-D array."""
    uZ = np.unique(Z, axis=0)
    return uZ


def unequal_rows(Z):
    """#93: the rows of a matrix whose values are not all equal."""
    E = np.all(Z[:, 1:] == Z[:, :-1], axis=1)
    U = Z[~E]
    return U


def n_largest(Z, n):
    """#89: the n largest values (argsort and argpartition answers)."""
    return Z[np.argsort(Z)[-n:]], np.sort(Z[np.argpartition(-Z, n)[:n]])


def repeat_from_bincount(C):
    """#72: A such that np.bincount(A) == C."""
    A = np.repeat(np.arange(len(C)), C)
    return A


def cauchy_determinant(X, Y):
    """#47: the Cauchy matrix C (Cij = 1/(xi - yj)) and its determinant."""
    C = 1.0 / np.subtract.outer(X, Y)
    return np.linalg.det(C)


def sum_of_products(M, V):
    """#84b: the sum of p matrix products at once, by np.tensordot."""
    S = np.tensordot(M, V, axes=[[0, 2], [0, 1]])
    return S


def einsum_variants(A, B):
    """#73: einsum equivalents of sum, mul, inner and outer."""
    return (np.einsum('i->', A), np.einsum('i,i->i', A, B), np.einsum('i,i', A, B),
            np.einsum('i,j->ij', A, B))


def rows_containing(A, B):
    """#87b: the rows of A that contain the elements of each row of B."""
    C = (A[..., np.newaxis, np.newaxis] == B)
    rows = np.where(C.any((3, 1)).all(1))[0]
    return rows


def gaussian_2d():
    """#56: a generic 2-D Gaussian-like array on a meshgrid."""
    X, Y = np.meshgrid(np.linspace(-1, 1, 10), np.linspace(-1, 1, 10))
    D = np.sqrt(X * X + Y * Y)
    sigma, mu = 1.0, 0.0
    G = np.exp(-((D - mu) ** 2 / (2.0 * sigma ** 2)))
    return G


def circle_mask(image, cx, cy, r):
    """A disc mask from np.ogrid, the image zeroed outside it."""
    h, w = image.shape
    y, x = np.ogrid[:h, :w]
    mask = (x - cx) ** 2 + (y - cy) ** 2 <= r ** 2
    out = image.copy()
    out[~mask] = 0
    return out


def pairwise_distances(Z):
    """#53: point by point distances of coordinates."""
    X, Y = np.atleast_2d(Z[:, 0], Z[:, 1])
    D = np.sqrt((X - X.T) ** 2 + (Y - Y.T) ** 2)
    return D


def add_at_repeated(Z, I):
    """#64: add 1 to each element indexed by I (repeated indices counted)."""
    Z = Z.copy()
    Z += np.bincount(I, minlength=len(Z))
    W = np.zeros_like(Z)
    np.add.at(W, I, 1)
    return Z, W


def normalise_and_center(Z):
    """#22 and #58: normalise a matrix, subtract each row's mean."""
    N = (Z - np.mean(Z)) / (np.std(Z))
    Y = Z - Z.mean(axis=1, keepdims=True)
    return N, Y


def closest_value(Z, v):
    """#61: the closest value to a scalar."""
    index = (np.abs(Z - v)).argmin()
    return Z[index]


def most_frequent(Z):
    """#66: the most frequent value."""
    return np.bincount(Z).argmax()


def matrix_rank(Z):
    """#83: a matrix rank by SVD."""
    U, S, V = np.linalg.svd(Z)
    rank = np.sum(S > 1e-10)
    return rank


def multinomial_rows(X, n):
    """#99: the rows that can be draws of a multinomial with n degrees."""
    M = np.logical_and.reduce(np.mod(X, 1) == 0, axis=-1)
    M &= (X.sum(axis=-1) == n)
    return X[M]


def binary_matrix(I):
    """#95: ints as a matrix of their bits."""
    B = ((I.reshape(-1, 1) & (2 ** np.arange(8))) != 0).astype(int)
    return B[:, ::-1]


def swap_rows(A):
    """#72b: swap two rows in place."""
    A[[0, 1]] = A[[1, 0]]
    return A


def sort_by_column(Z, n):
    """#59: sort an array by its n-th column; by the first column, then the n-th (lexsort)."""
    return Z[Z[:, n].argsort()], Z[np.lexsort((Z[:, n], Z[:, 0]))]


def bootstrap_mean(X, rng, N):
    """#100: bootstrapped 95% confidence intervals of the mean."""
    idx = rng.integers(0, X.size, (N, X.size))
    means = X[idx].mean(axis=1)
    confint = np.percentile(means, [2.5, 97.5])
    return confint


def diff_cumsum(Z):
    """#82 and friends: differences and cumulative sums, and run starts."""
    d = np.diff(Z)
    starts = np.flatnonzero(np.diff(np.concatenate(([0], Z))) != 0)
    return d, np.cumsum(Z), np.cumsum(d), starts


# -- scikit-learn's algorithms in plain NumPy -------------------------------------------------

def kmeans_pp_init(X, k, seed):
    """k-means++ seeding with a Generator (sklearn's _kmeans_plusplus, one trial a centre)."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    centers = np.empty((k, X.shape[1]))
    centers[0] = X[rng.integers(n)]
    closest = ((X - centers[0]) ** 2).sum(axis=1)
    for c in range(1, k):
        probs = closest / closest.sum()
        idx = np.searchsorted(np.cumsum(probs), rng.random())
        idx = min(idx, n - 1)
        centers[c] = X[idx]
        closest = np.minimum(closest, ((X - centers[c]) ** 2).sum(axis=1))
    return centers


def gaussian_nb(X, y, X_test, n_classes):
    """Gaussian naive Bayes: fit the class means and variances, predict by log likelihood."""
    theta = np.zeros((n_classes, X.shape[1]))
    var = np.zeros((n_classes, X.shape[1]))
    prior = np.zeros(n_classes)
    for c in range(n_classes):
        Xc = X[y == c]
        theta[c] = Xc.mean(axis=0)
        var[c] = Xc.var(axis=0) + 1e-9
        prior[c] = Xc.shape[0] / X.shape[0]
    jll = []
    for c in range(n_classes):
        n_ij = -0.5 * np.sum(np.log(2.0 * np.pi * var[c]))
        n_ij -= 0.5 * np.sum(((X_test - theta[c]) ** 2) / var[c], axis=1)
        jll.append(np.log(prior[c]) + n_ij)
    jll = np.array(jll).T
    return np.argmax(jll, axis=1), jll


def normal_equations(X, y):
    """Linear regression: lstsq, pinv and solve on the normal equations."""
    Xb = np.c_[np.ones((X.shape[0], 1)), X]
    w_lstsq = np.linalg.lstsq(Xb, y, rcond=None)[0]
    w_pinv = np.linalg.pinv(Xb) @ y
    w_solve = np.linalg.solve(Xb.T @ Xb, Xb.T @ y)
    return w_lstsq, w_pinv, w_solve


def ridge_path(X, y, alphas):
    """Ridge regression with a loop over the regularisation strengths."""
    n_features = X.shape[1]
    coefs = []
    for alpha in alphas:
        A = X.T @ X + alpha * np.eye(n_features)
        coefs.append(np.linalg.solve(A, X.T @ y))
    return np.array(coefs)


def one_hot(labels, n_classes):
    """One-hot encoding by indexing the identity."""
    return np.eye(n_classes)[labels]


def decision_stump(X, y):
    """The best single-feature threshold by sorting each feature (Gini impurity)."""
    n, d = X.shape
    best = (np.inf, 0, 0.0)
    for j in range(d):
        order = np.argsort(X[:, j])
        xs, ys = X[order, j], y[order]
        left_pos = np.cumsum(ys)[:-1]
        left_n = np.arange(1, n)
        right_pos = ys.sum() - left_pos
        right_n = n - left_n
        p_l = left_pos / left_n
        p_r = right_pos / right_n
        gini = (left_n * 2 * p_l * (1 - p_l) + right_n * 2 * p_r * (1 - p_r)) / n
        i = np.argmin(gini)
        if gini[i] < best[0]:
            best = (gini[i], j, (xs[i] + xs[i + 1]) / 2)
    return best


def dbscan_core(X, eps, min_samples):
    """DBSCAN's neighbour counting: the core samples."""
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1))
    neighbours = D <= eps
    counts = neighbours.sum(axis=1)
    core = counts >= min_samples
    return counts, np.flatnonzero(core)


def cosine_top_k(Q, D, k):
    """Cosine similarity of queries to documents, the top k of each."""
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    Dn = D / np.linalg.norm(D, axis=1, keepdims=True)
    S = Qn @ Dn.T
    top = np.argsort(-S, axis=1)[:, :k]
    return top, np.take_along_axis(S, top, axis=1)


def tsne_step(X, Y, perplexity_beta, lr):
    """t-SNE: the affinities P (fixed precision), Q from the embedding, one gradient step."""
    sum_X = np.sum(np.square(X), 1)
    D = np.add(np.add(-2 * np.dot(X, X.T), sum_X).T, sum_X)
    P = np.exp(-D * perplexity_beta)
    np.fill_diagonal(P, 0)
    P = P / np.sum(P, axis=1, keepdims=True)
    P = (P + P.T) / (2 * X.shape[0])
    sum_Y = np.sum(np.square(Y), 1)
    num = -2. * np.dot(Y, Y.T)
    num = 1. / (1. + np.add(np.add(num, sum_Y).T, sum_Y))
    num[range(Y.shape[0]), range(Y.shape[0])] = 0.
    Q = num / np.sum(num)
    Q = np.maximum(Q, 1e-12)
    PQ = P - Q
    dY = np.zeros_like(Y)
    for i in range(Y.shape[0]):
        dY[i, :] = np.sum(np.tile(PQ[:, i] * num[:, i], (Y.shape[1], 1)).T * (Y[i, :] - Y), 0)
    return Y - lr * dY


def scalers(X):
    """StandardScaler and MinMaxScaler fit_transform."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0.0] = 1.0
    standard = (X - mean) / scale
    data_min = X.min(axis=0)
    data_range = X.max(axis=0) - data_min
    minmax = (X - data_min) / data_range
    return standard, minmax


def confusion_matrix(y_true, y_pred, n_classes):
    """A confusion matrix by np.add.at."""
    cm = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(cm, (y_true, y_pred), 1)
    return cm


def roc_auc(y_true, y_score):
    """ROC AUC by sorting the scores (sklearn's _binary_clf_curve, ties ignored)."""
    desc = np.argsort(y_score)[::-1]
    y_true = y_true[desc]
    tps = np.cumsum(y_true)
    fps = np.cumsum(1 - y_true)
    tpr = np.r_[0, tps / tps[-1]]
    fpr = np.r_[0, fps / fps[-1]]
    return np.trapz(tpr, fpr) if hasattr(np, "trapz") else np.trapezoid(tpr, fpr)


# -- signal and image processing --------------------------------------------------------------

def convolve_modes(a, v):
    """np.convolve and np.correlate in their three modes."""
    return (np.convolve(a, v), np.convolve(a, v, mode='same'), np.convolve(a, v, mode='valid'),
            np.correlate(a, v, mode='full'), np.correlate(a, v, mode='same'),
            np.correlate(a, v))


def convolve2d_loops(image, kernel):
    """A 2-D 'valid' convolution by a loop over the kernel taps, each a shifted slice."""
    kh, kw = kernel.shape
    h, w = image.shape
    out = np.zeros((h - kh + 1, w - kw + 1))
    k = kernel[::-1, ::-1]
    for i in range(kh):
        for j in range(kw):
            out += k[i, j] * image[i:i + h - kh + 1, j:j + w - kw + 1]
    return out


def sobel(image):
    """Sobel edge magnitude on a padded image."""
    p = np.pad(image, 1, mode='edge')
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return np.hypot(gx, gy), np.arctan2(gy, gx)


def gaussian_kernel(sigma, radius):
    x = np.arange(-radius, radius + 1)
    k = np.exp(-x ** 2 / (2 * sigma ** 2))
    return k / k.sum()


def gaussian_blur(image, sigma, radius):
    """A separable Gaussian blur: pad, then filter the rows and the columns (three pad modes)."""
    k = gaussian_kernel(sigma, radius)
    results = []
    for mode in ('reflect', 'edge', 'constant'):
        p = np.pad(image, radius, mode=mode)
        rows = np.zeros((p.shape[0], image.shape[1]))
        for i, w in enumerate(k):
            rows += w * p[:, i:i + image.shape[1]]
        out = np.zeros(image.shape)
        for i, w in enumerate(k):
            out += w * rows[i:i + image.shape[0], :]
        results.append(out)
    return results


def median_filter(image, size):
    """A median filter: the windows of the padded image, their median."""
    p = np.pad(image, size // 2, mode='reflect')
    windows = np.lib.stride_tricks.sliding_window_view(p, (size, size))
    return np.median(windows, axis=(-2, -1))


def histogram_equalise(image):
    """Histogram equalisation of an 8-bit image by the cumulative histogram and np.interp."""
    hist, bins = np.histogram(image.flatten(), 256, [0, 256])
    cdf = hist.cumsum()
    cdf_normalized = cdf * 255 / cdf[-1]
    out = np.interp(image.flatten(), bins[:-1], cdf_normalized)
    return out.reshape(image.shape)


def bilinear_resize(image, out_h, out_w):
    """Bilinear resize by index arithmetic."""
    in_h, in_w = image.shape
    ys = np.linspace(0, in_h - 1, out_h)
    xs = np.linspace(0, in_w - 1, out_w)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, in_h - 1)
    x1 = np.minimum(x0 + 1, in_w - 1)
    wy = (ys - y0)[:, None]
    wx = (xs - x0)[None, :]
    a = image[y0][:, x0]
    b = image[y0][:, x1]
    c = image[y1][:, x0]
    d = image[y1][:, x1]
    return (a * (1 - wy) * (1 - wx) + b * (1 - wy) * wx + c * wy * (1 - wx) + d * wy * wx)


def otsu_threshold(image):
    """Otsu's threshold: the between-class variance over all 256 thresholds."""
    hist = np.bincount(image.ravel(), minlength=256).astype(np.float64)
    prob = hist / hist.sum()
    omega = np.cumsum(prob)
    mu = np.cumsum(prob * np.arange(256))
    mu_t = mu[-1]
    with np.errstate(divide='ignore', invalid='ignore'):
        sigma_b = (mu_t * omega - mu) ** 2 / (omega * (1 - omega))
    sigma_b = np.nan_to_num(sigma_b)
    t = np.argmax(sigma_b)
    return t, image > t


def connected_components(mask):
    """Connected components by label propagation: each pixel takes its neighbours' smallest
    label until nothing changes."""
    h, w = mask.shape
    big = h * w + 1
    labels = np.where(mask, np.arange(1, h * w + 1).reshape(h, w), big)
    changed = True
    while changed:
        p = np.pad(labels, 1, mode='constant', constant_values=big)
        smallest = np.minimum.reduce([p[1:-1, 1:-1], p[:-2, 1:-1], p[2:, 1:-1],
                                      p[1:-1, :-2], p[1:-1, 2:]])
        new = np.where(mask, smallest, big)
        changed = np.any(new != labels)
        labels = new
    labels[~mask] = 0
    return labels


# -- simulations ------------------------------------------------------------------------------

def ising(spins, beta, sweeps, seed):
    """Metropolis sweeps of the 2-D Ising model, checkerboard updates."""
    rng = np.random.default_rng(seed)
    n = spins.shape[0]
    i, j = np.indices((n, n))
    for _ in range(sweeps):
        for parity in (0, 1):
            mask = (i + j) % 2 == parity
            nb = (np.roll(spins, 1, 0) + np.roll(spins, -1, 0) +
                  np.roll(spins, 1, 1) + np.roll(spins, -1, 1))
            dE = 2 * spins * nb
            accept = (dE <= 0) | (rng.random((n, n)) < np.exp(-beta * dE))
            spins = np.where(mask & accept, -spins, spins)
    return spins, spins.mean()


def sir(beta, gamma, S0, I0, R0, dt, steps):
    """The SIR epidemic by Euler steps in a Python loop."""
    S, I, R = [S0], [I0], [R0]
    for _ in range(steps):
        s, i, r = S[-1], I[-1], R[-1]
        new_inf = beta * s * i * dt
        new_rec = gamma * i * dt
        S.append(s - new_inf)
        I.append(i + new_inf - new_rec)
        R.append(r + new_rec)
    return np.array(S), np.array(I), np.array(R)


def pic_deposit(x, q, n_cells, length):
    """Particle-in-cell charge deposit (cloud in cell) by np.add.at."""
    dx = length / n_cells
    rho = np.zeros(n_cells)
    j = np.floor(x / dx).astype(int)
    w = x / dx - j
    np.add.at(rho, j % n_cells, q * (1 - w))
    np.add.at(rho, (j + 1) % n_cells, q * w)
    return rho / dx


def lotka_volterra(z, t):
    x, y = z
    return np.array([1.1 * x - 0.4 * x * y, 0.1 * x * y - 0.4 * y])


def lotka_volterra_rk4(z0, dt, steps):
    """Lotka-Volterra by classic RK4."""
    z = z0.copy()
    out = np.empty((steps + 1, 2))
    out[0] = z
    t = 0.0
    for n in range(steps):
        k1 = lotka_volterra(z, t)
        k2 = lotka_volterra(z + dt / 2 * k1, t + dt / 2)
        k3 = lotka_volterra(z + dt / 2 * k2, t + dt / 2)
        k4 = lotka_volterra(z + dt * k3, t + dt)
        z = z + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
        out[n + 1] = z
    return out


def brownian_paths(rng, n_paths, n_steps, dt):
    """Brownian paths: Gaussian increments, cumsum along time."""
    dW = rng.normal(0.0, np.sqrt(dt), size=(n_paths, n_steps))
    W = np.concatenate([np.zeros((n_paths, 1)), np.cumsum(dW, axis=1)], axis=1)
    return W, W[:, -1].mean(), W[:, -1].var()


def lbm_step(F, cxs, cys, weights, tau, steps):
    """Lattice Boltzmann D2Q9 (Philip Mocz's version): stream by rolls, BGK collision."""
    for _ in range(steps):
        for i, cx, cy in zip(range(9), cxs, cys):
            F[:, :, i] = np.roll(F[:, :, i], cx, axis=1)
            F[:, :, i] = np.roll(F[:, :, i], cy, axis=0)
        rho = np.sum(F, 2)
        ux = np.sum(F * cxs, 2) / rho
        uy = np.sum(F * cys, 2) / rho
        Feq = np.zeros(F.shape)
        for i, cx, cy, w in zip(range(9), cxs, cys, weights):
            Feq[:, :, i] = rho * w * (1 + 3 * (cx * ux + cy * uy) + 9 * (cx * ux + cy * uy) ** 2 / 2
                                      - 3 * (ux ** 2 + uy ** 2) / 2)
        F += -(1.0 / tau) * (F - Feq)
    return F


def navier_stokes_step(u, v, p, dt, dx, nu):
    """One explicit Navier-Stokes step on a periodic grid by slices and rolls."""
    def lap(f):
        return (np.roll(f, 1, 0) + np.roll(f, -1, 0) + np.roll(f, 1, 1) + np.roll(f, -1, 1)
                - 4 * f) / dx ** 2

    def ddx(f):
        return (np.roll(f, -1, 1) - np.roll(f, 1, 1)) / (2 * dx)

    def ddy(f):
        return (np.roll(f, -1, 0) - np.roll(f, 1, 0)) / (2 * dx)

    un = u - dt * (u * ddx(u) + v * ddy(u)) - dt * ddx(p) + nu * dt * lap(u)
    vn = v - dt * (u * ddx(v) + v * ddy(v)) - dt * ddy(p) + nu * dt * lap(v)
    un[0, :] = un[-1, :] = 0
    vn[:, 0] = vn[:, -1] = 0
    return un, vn


def queue_simulation(arrivals, services):
    """A single-server queue: a while loop over the customers, waiting times by Lindley."""
    n = len(arrivals)
    wait = np.zeros(n)
    t_free = 0.0
    k = 0
    while k < n:
        start = max(arrivals[k], t_free)
        wait[k] = start - arrivals[k]
        t_free = start + services[k]
        k += 1
    return wait, wait.mean()


def _lbm(rng, ny, nx):
    F = np.ones((ny, nx, 9)) + 0.01 * rng.random((ny, nx, 9))
    F[:, :, 3] += 2.3
    cxs = np.array([0, 0, 1, 1, 1, 0, -1, -1, -1])
    cys = np.array([0, 1, 1, 0, -1, -1, -1, 0, 1])
    weights = np.array([4 / 9, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36, 1 / 9, 1 / 36])
    return F, cxs, cys, weights, 0.6, 3


def _queue(rng, n):
    arrivals = np.cumsum(rng.exponential(1.0, n))
    return arrivals, rng.exponential(0.9, n)


def _blobs(rng, n):
    centres = np.array([[0.0, 0.0], [3.0, 3.0], [0.0, 4.0]])
    X = centres[rng.integers(0, 3, n)] + 0.5 * rng.normal(size=(n, 2))
    return X


def _labelled(rng, n, d, classes):
    X = rng.normal(size=(n, d))
    y = rng.integers(0, classes, n)
    X += y[:, None]
    return X, y


CASES = {
    # 100 NumPy exercises
    "rolling_as_strided": (rolling, lambda r: (np.arange(10), 3)),
    "rolling_window_view": (rolling_view, lambda r: (r.random(12),)),
    "contiguous_blocks": (contiguous_blocks, lambda r: (r.integers(0, 5, (10, 10)),)),
    "bincount_weights": (accumulate_by_index, lambda r: (r.random(12), r.integers(0, 6, 12))),
    "subset_means": (subset_means, lambda r: (r.random(40), np.r_[0:6, r.integers(0, 6, 34)])),
    "add_reduceat_blocks": (block_sum, lambda r: (r.random((16, 16)), 4)),
    "window_view_blocks": (block_sum_windows, lambda r: (r.random((16, 16)), 4)),
    "unique_rows": (unique_rows, lambda r: (r.integers(0, 2, (12, 3)),)),
    "unequal_rows": (unequal_rows, lambda r: (r.integers(0, 3, (12, 3)),)),
    "n_largest": (n_largest, lambda r: (r.permutation(40).astype(np.float64), 5)),
    "repeat_counts": (repeat_from_bincount, lambda r: (np.bincount([1, 1, 2, 3, 4, 4, 6]),)),
    "cauchy_outer_det": (cauchy_determinant, lambda r: (np.arange(8) + 0.5, np.arange(8.0))),
    "tensordot_products": (sum_of_products, lambda r: (r.random((5, 6, 6)), r.random((5, 6, 1)))),
    "einsum_variants": (einsum_variants, lambda r: (r.random(7), r.random(7))),
    "rows_containing": (rows_containing, lambda r: (r.integers(0, 5, (8, 3)),
                                                    r.integers(0, 5, (2, 2)))),
    "meshgrid_gaussian": (gaussian_2d, lambda r: ()),
    "ogrid_disc": (circle_mask, lambda r: (r.random((12, 14)), 6, 5, 4)),
    "atleast_2d_distances": (pairwise_distances, lambda r: (r.random((10, 2)),)),
    "add_at_repeated": (add_at_repeated, lambda r: (np.ones(10), r.integers(0, 10, 20))),
    "normalise_center": (normalise_and_center, lambda r: (r.random((5, 5)),)),
    "closest_value": (closest_value, lambda r: (np.arange(100.0), r.uniform(0, 100))),
    "most_frequent": (most_frequent, lambda r: (r.integers(0, 10, 50),)),
    "matrix_rank": (matrix_rank, lambda r: (r.random((6, 3)) @ r.random((3, 6)),)),
    "multinomial_rows": (multinomial_rows,
                         lambda r: (np.asarray([[1.0, 0.0, 3.0, 8.0], [2.0, 0.0, 1.0, 1.0],
                                                [1.5, 2.5, 1.0, 0.0]]), 4)),
    "binary_matrix": (binary_matrix, lambda r: (np.array([0, 1, 2, 3, 15, 16, 32, 64, 128]),)),
    "swap_rows": (swap_rows, lambda r: (np.arange(25).reshape(5, 5),)),
    # column 1 without ties: NumPy's default argsort leaves their order to its algorithm
    "sort_by_column": (sort_by_column, lambda r: (np.c_[r.integers(0, 4, 10), r.permutation(10),
                                                        r.integers(0, 4, 10)], 1)),
    "bootstrap_mean": (bootstrap_mean, lambda r: (r.normal(size=30), np.random.default_rng(4),
                                                  50)),
    "diff_cumsum": (diff_cumsum, lambda r: (r.integers(0, 2, 20),)),
    # scikit-learn style
    "kmeans_pp_init": (kmeans_pp_init, lambda r: (_blobs(r, 40), 3, 11)),
    "gaussian_nb": (gaussian_nb, lambda r: (*_labelled(r, 40, 3, 3), r.normal(size=(8, 3)) + 1, 3)),
    "normal_equations": (normal_equations, lambda r: (r.normal(size=(20, 3)), r.normal(size=20))),
    "ridge_path": (ridge_path, lambda r: (r.normal(size=(20, 4)), r.normal(size=20),
                                          [0.01, 0.1, 1.0, 10.0])),
    "one_hot_eye": (one_hot, lambda r: (r.integers(0, 4, 10), 4)),
    "decision_stump": (decision_stump, lambda r: (r.normal(size=(24, 3)),
                                                  r.integers(0, 2, 24).astype(float))),
    "dbscan_core": (dbscan_core, lambda r: (_blobs(r, 30), 0.8, 4)),
    "cosine_top_k": (cosine_top_k, lambda r: (r.normal(size=(4, 6)), r.normal(size=(15, 6)), 3)),
    "tsne_step": (tsne_step, lambda r: (r.normal(size=(12, 5)), r.normal(size=(12, 2)), 0.5,
                                        10.0)),
    "scalers": (scalers, lambda r: (r.normal(size=(10, 4)),)),
    "confusion_matrix": (confusion_matrix, lambda r: (r.integers(0, 3, 30), r.integers(0, 3, 30),
                                                      3)),
    "roc_auc": (roc_auc, lambda r: (r.integers(0, 2, 30), r.random(30))),
    # signal and image processing
    "convolve_modes": (convolve_modes, lambda r: (r.random(12), r.random(4))),
    "convolve2d_loops": (convolve2d_loops, lambda r: (r.random((10, 12)), r.random((3, 3)))),
    "sobel": (sobel, lambda r: (r.random((10, 12)),)),
    "gaussian_blur": (gaussian_blur, lambda r: (r.random((10, 12)), 1.0, 2)),
    "median_filter": (median_filter, lambda r: (r.random((8, 9)), 3)),
    "histogram_equalise": (histogram_equalise,
                           lambda r: (r.integers(40, 120, (8, 8)).astype(np.uint8),)),
    "bilinear_resize": (bilinear_resize, lambda r: (r.random((6, 7)), 11, 9)),
    "otsu_threshold": (otsu_threshold,
                       lambda r: (np.clip(np.r_[r.normal(60, 10, 40), r.normal(180, 15, 40)],
                                          0, 255).astype(np.uint8).reshape(8, 10),)),
    "connected_components": (connected_components, lambda r: (r.random((10, 10)) < 0.45,)),
    # simulations
    "ising": (ising, lambda r: (np.where(r.random((8, 8)) < 0.5, -1, 1), 0.6, 3, 5)),
    "sir_euler": (sir, lambda r: (0.3, 0.1, 0.99, 0.01, 0.0, 0.5, 40)),
    "pic_deposit": (pic_deposit, lambda r: (r.random(50) * 10.0, 0.1, 16, 10.0)),
    "lotka_volterra_rk4": (lotka_volterra_rk4, lambda r: (np.array([10.0, 5.0]), 0.05, 40)),
    "brownian_paths": (brownian_paths, lambda r: (np.random.default_rng(2), 5, 30, 0.01)),
    "lattice_boltzmann": (lbm_step, lambda r: _lbm(r, 6, 10)),
    "navier_stokes_step": (navier_stokes_step, lambda r: (r.random((10, 10)), r.random((10, 10)),
                                                          r.random((10, 10)), 0.001, 0.1, 0.1)),
    "queue_while": (queue_simulation, lambda r: _queue(r, 30)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_agrees_with_numpy(name):
    function, make = CASES[name]
    check_program(function, make(np.random.default_rng(7)))


@pytest.mark.parametrize("name", ["rolling_as_strided", "contiguous_blocks", "add_reduceat_blocks",
                                  "sort_by_column", "connected_components"])
def test_programs_traced_whole(name):
    # as_strided (x.strides raised TypeError), ufunc.reduceat and np.lexsort (graph breaks),
    # a while loop on a flag the body rebinds (an internal error)
    function, make = CASES[name]
    assert _breaks(function, *make(np.random.default_rng(5))) == (0, [])


def reduceats(x):
    return (np.add.reduceat(x, [0, 4, 1, 5]), np.maximum.reduceat(x, [0, 3, 3, 7]),
            np.multiply.reduceat(x, np.array([2, 5])), np.logical_or.reduceat(x > 3, [0, 1]),
            np.add.reduceat(x.reshape(2, 4).astype(np.int8), [0, 1, 3], axis=-1))


def test_reduceat_at_indices_the_trace_knows():
    # segments where the indices rise, single elements where they do not; int8 sums as NumPy's
    x = np.arange(1.0, 9.0)
    check_program(reduceats, (x,))
    assert _breaks(reduceats, x) == (0, [])
    with pytest.raises(IndexError, match="out-of-bounds"):
        kiln.compile(lambda x: np.add.reduceat(x, [0, 9]))(x)
    indices = np.array([0, 3, 5])  # an argument: the trace does not know its values
    check_program(lambda x, i: np.add.reduceat(x, i), (x, indices))

    def uneven(x):  # 20 short segments and a long one: padded rows too big, eager
        return np.add.reduceat(x, np.arange(20))
    y = np.arange(200.0)
    check_program(uneven, (y,))
    assert _breaks(uneven, y)[0] == 1


@pytest.mark.parametrize("function", [
    lambda X, v: np.c_[np.ones((X.shape[0], 1)), X],
    lambda X, v: np.r_[0, v / v[-1]],
    lambda X, v: np.r_[v, 0:3, [7, 8], v.max()],
    lambda X, v: np.c_[v, v * 2, X],
    lambda X, v: np.r_[X, X[:1]],
    lambda X, v: np.r_[(v * 8).astype(np.int8), 1],
])
def test_r_and_c_of_traced_arrays(function):
    # NumPy's concatenators made each item an ndarray: a graph break at each
    rng = np.random.default_rng(3)
    arguments = (rng.random((5, 3)), rng.random(5))
    check_program(function, arguments)
    assert _breaks(function, *arguments) == (0, [])


def test_a_tensordot_sums_over_the_axes_it_merged(compile_logged):
    # passes/canonicalize_matmul.cpp: tensordot's matrix-vector product reduced over the merged
    # (p, k) axis, reading M at i // n and i % n (3x NumPy's time at 50x100x100); it sums over
    # p and k as loops of their own now, the inner one with stride 1
    rng = np.random.default_rng(8)
    arguments = (rng.random((6, 20, 30)), rng.random((6, 30, 1)))
    log, _ = compile_logged(sum_of_products, arguments, "schedule")
    reductions = [line for line in log.splitlines() if line.lstrip().startswith("reduce")]
    assert reductions and not any("//" in line or "%" in line for line in reductions), log
    check_program(sum_of_products, arguments)
