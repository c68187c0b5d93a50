"""The benchmark workloads: each program written ONCE in plain NumPy.

That one function is what eager NumPy runs and what kiln.compile and torch.compile compile
unchanged. The hand translations for the other baselines (eager PyTorch, jax.numpy, Numba
loops) live in torch_kernels.py, jax_kernels.py and numba_kernels.py under the same names, so
that importing this module needs nothing but NumPy.

A workload also knows how to make its inputs (full and --quick sizes, from a fixed seed) and
how to compare a result with NumPy's (tolerance by dtype; integer results exactly, or with a
tiny fraction of labels allowed to flip where ties under rounding are possible).
"""
import dataclasses
from typing import Callable, Optional

import numpy as np

from .loop_programs import (  # noqa: F401 - kiln.bench.workloads.lu etc., as before
    reaction_diffusion, forward_substitution, row_recurrence, element_branch,
    newton_sqrt, jacobi_converge, _plate, cholesky, lu, gram_schmidt, covariance, _spd, crc32,
    sieve, lcs, levinson, _autocorrelation, mandelbrot, _complex_grid, pair_energy,
    logistic_losses, row_modes, outliers_to_median)

# ---- the NumPy programs ----------------------------------------------------------------------


def sin_cos(x):
    return np.sin(x) + np.cos(x)


def numpy_fn(X, Y):
    X_mean, X_std = X.mean(axis=0), X.std(axis=0)
    Y_mean, Y_std = Y.mean(axis=0), Y.std(axis=0)
    X_std[X_std == 0] = 1
    Y_std[Y_std == 0] = 1
    X_normalized = (X - X_mean) / X_std
    Y_normalized = (Y - Y_mean) / Y_std
    intermediate_result = np.sum(X_normalized[:, :, None] * Y_normalized[:, None, :], axis=(-2, -1))
    intermediate_result = np.clip(intermediate_result, -1, 1)
    result = np.exp(intermediate_result)
    regularization = 0.001 * np.sum(X_normalized ** 2)
    result += regularization
    return result


def kmeans(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    exponentials = np.exp(shifted)
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    variance = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-5) * gamma + beta


def pairwise_distances(A, B):
    difference = A[:, None, :] - B[None, :, :]
    return np.sqrt(np.sum(difference * difference, axis=-1))


def stencil(u):
    # One Jacobi sweep of the 2-D Laplace equation: the interior becomes the mean of its four
    # neighbours.
    return 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


HEAT_STEPS = 200


def heat_loop(u):
    # An explicit time-step loop, as NumPy users write one: 200 steps of the 1-D heat equation,
    # updating the interior in place. Tracers unroll it; compile time is what this measures.
    u = u.copy()
    for _ in range(HEAT_STEPS):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


# Black-Scholes parameters of the Monte-Carlo pricer: module constants, as users write them.
SPOT, STRIKE, RATE, VOLATILITY, MATURITY = 100.0, 105.0, 0.03, 0.2, 1.0


def option_pricer(z):
    drift = (RATE - 0.5 * VOLATILITY * VOLATILITY) * MATURITY
    final_price = SPOT * np.exp(drift + VOLATILITY * np.sqrt(MATURITY) * z)
    payoff = np.maximum(final_price - STRIKE, 0.0)
    return np.exp(-RATE * MATURITY) * np.mean(payoff)


def masked_reduction(x):
    mask = x > 0.5
    return np.sum(np.where(mask, x * x, 0.0)) / np.sum(mask)


def cumulative_sum(x):
    return np.cumsum(x)


def drawdown(prices):
    peak = np.maximum.accumulate(prices, axis=-1)
    return ((prices - peak) / peak).min(axis=-1)


def integer_hash(x):
    # A linear-congruential step and an xor-shift, bucketed: exact integer arithmetic.
    y = (x * 1103515245 + 12345) & 0x7FFFFFFF
    y = y ^ (y >> 7)
    return y % 1009


def mlp(X, W1, b1, W2, b2):
    hidden = np.maximum(X @ W1 + b1, 0.0)
    return np.tanh(hidden @ W2 + b2)


POLYNOMIAL_COEFFICIENTS = (0.3, -1.2, 0.5, 2.0, -0.7, 0.01, 0.25, -0.125, 0.0625)


def polynomial(x):
    result = np.zeros_like(x) + POLYNOMIAL_COEFFICIENTS[0]
    for coefficient in POLYNOMIAL_COEFFICIENTS[1:]:
        result = result * x + coefficient
    return result


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def logsumexp(x):
    largest = x.max(axis=-1)
    return largest + np.log(np.sum(np.exp(x - largest[:, None]), axis=-1))


def histogram_weights(x):
    # np.histogram is a graph break: kiln runs it eagerly on the materialized value and
    # compiles the code around it once, whatever the data.
    counts, edges = np.histogram(x, bins=64)
    centers = (edges[:-1] + edges[1:]) * 0.5
    weights = counts / counts.sum()
    return (np.exp(-x * x) * x).sum() + (weights * centers).sum()


# ---- inputs ----------------------------------------------------------------------------------


def _normal(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _kmeans_inputs(dtype):
    def make(rng, count):
        means = np.array([[0.0, 0.0], [3.0, 3.0]], dtype=dtype)
        which = rng.integers(0, 2, count)
        X = (rng.standard_normal((count, 2)) + means[which].astype(np.float64)).astype(dtype)
        return (X, means)
    return make


def _label_check(maximum_flipped_fraction):
    """Argmin labels: exact, except that points within rounding of a tie may flip."""
    def check(expected, actual):
        if expected.shape != actual.shape:
            return False, f"shape {actual.shape} != expected {expected.shape}"
        differing = int(np.count_nonzero(expected != actual))
        allowed = int(maximum_flipped_fraction * expected.size)
        if differing > allowed:
            return False, f"{differing} of {expected.size} labels differ (allowed {allowed})"
        return True, f"{differing} labels differ" if differing else ""
    return check


# ---- the registry ----------------------------------------------------------------------------


@dataclasses.dataclass
class Workload:
    name: str
    description: str
    function: Callable  # the NumPy program
    make_inputs: Callable  # (rng, size) -> tuple of arrays
    full_size: object
    quick_size: object
    seed: bool = False  # one of the seed programs
    rtol: Optional[float] = None  # None: from the result dtype
    atol: Optional[float] = None
    check: Optional[Callable] = None  # (expected, actual) -> (ok, message); overrides tolerances
    # 0-d and other tiny workloads: timings loop the call this long so the timer resolves it.
    minimum_timing_seconds: float = 0.0
    loop: bool = False  # a Python loop program (--workloads loops)

    def inputs(self, quick, seed=0):
        rng = np.random.default_rng(seed)
        return self.make_inputs(rng, self.quick_size if quick else self.full_size)

    def size_text(self, quick):
        size = self.quick_size if quick else self.full_size
        if size == ():
            return "0-d"
        return "x".join(str(part) for part in size) if isinstance(size, tuple) else str(size)


_TOLERANCES = {  # (rtol, atol): fused and vectorised maths may differ by a few ulp
    np.dtype(np.float64): (1e-7, 1e-9),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float16): (1e-2, 1e-3),
}


def check_result(workload, expected, actual):
    """(ok, message): actual (converted to NumPy) against NumPy's result."""
    expected = np.asarray(expected)
    try:
        actual = np.asarray(actual)
    except Exception as error:  # an object that is no array at all
        return False, f"result is not an array: {type(actual).__name__} ({error})"
    if workload.check is not None:
        return workload.check(expected, actual)
    if expected.shape != actual.shape:
        return False, f"shape {actual.shape} != expected {expected.shape}"
    if expected.dtype.kind in "biu":
        if actual.dtype.kind not in "biu":
            return False, f"dtype {actual.dtype} where NumPy gives {expected.dtype}"
        differing = int(np.count_nonzero(expected != actual))
        return (differing == 0), (f"{differing} of {expected.size} values differ"
                                  if differing else "")
    rtol, atol = _TOLERANCES.get(expected.dtype, (1e-7, 1e-9))
    rtol = workload.rtol if workload.rtol is not None else rtol
    atol = workload.atol if workload.atol is not None else atol
    if np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True):
        return True, ""
    with np.errstate(all="ignore"):
        error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        worst = int(np.nanargmax(error)) if error.size else 0
    return False, (f"max |difference| {error.flat[worst]:.3g} at flat index {worst} "
                   f"(got {actual.flat[worst]!r}, NumPy {expected.flat[worst]!r}; "
                   f"rtol={rtol}, atol={atol})")


WORKLOADS = [
    Workload("sin_cos_0d", "sin(x)+cos(x) on a 0-d float64 array: per-call overhead",
             sin_cos, lambda rng, size: (np.array(rng.uniform(0.0, 1.0)),), (), (), seed=True,
             minimum_timing_seconds=0.02),
    Workload("sin_cos_16m", "sin(x)+cos(x) on 16M float32: memory bandwidth",
             sin_cos, lambda rng, n: (_normal(rng, n, np.float32),), 16 * 1024 * 1024, 100_000,
             seed=True),
    Workload("numpy_fn", "normalise, broadcast-multiply-sum, clip, exp (float64)",
             numpy_fn, lambda rng, shape: (_normal(rng, shape, np.float64),
                                           _normal(rng, shape, np.float64)),
             (1024, 640), (64, 40), seed=True, rtol=1e-6),
    Workload("kmeans_f64", "argmin of distances to 2 means, 2-D points (float64)",
             kmeans, _kmeans_inputs(np.float64), 20_000_000, 100_000, seed=True,
             check=_label_check(1e-6)),
    Workload("kmeans_f32", "argmin of distances to 2 means, 2-D points (float32)",
             kmeans, _kmeans_inputs(np.float32), 20_000_000, 100_000, seed=True,
             check=_label_check(1e-5)),
    Workload("softmax", "row softmax (float32)",
             softmax, lambda rng, shape: (_normal(rng, shape, np.float32),),
             (4096, 1024), (64, 128)),
    Workload("layer_norm", "layer normalisation with scale and shift (float32)",
             layer_norm, lambda rng, shape: (_normal(rng, shape, np.float32),
                                             _normal(rng, shape[1], np.float32),
                                             _normal(rng, shape[1], np.float32)),
             (8192, 1024), (64, 128), rtol=1e-3, atol=1e-4),
    Workload("pairwise_distances", "all-pairs Euclidean distances by broadcasting (float64)",
             pairwise_distances, lambda rng, shape: (_normal(rng, shape, np.float64),
                                                     _normal(rng, shape, np.float64)),
             (2048, 8), (128, 8)),
    Workload("stencil", "one 5-point Jacobi sweep on a 2-D grid (float32)",
             stencil, lambda rng, shape: (_normal(rng, shape, np.float32),),
             (4096, 4096), (128, 128)),
    Workload("heat_loop", "200 in-place time steps of the 1-D heat equation (float64)",
             heat_loop, lambda rng, n: (rng.uniform(0, 1, n),), 1_000_000, 10_000,
             rtol=1e-9),
    Workload("option_pricer", "Monte-Carlo European call price, Black-Scholes (float64)",
             option_pricer, lambda rng, n: (rng.standard_normal(n),), 10_000_000, 100_000,
             rtol=1e-9),
    Workload("masked_reduction", "mean of squares where x > 0.5 (float64)",
             masked_reduction, lambda rng, n: (rng.standard_normal(n),), 16 * 1024 * 1024,
             100_000, rtol=1e-9),
    Workload("cumulative_sum", "prefix sum of 16M positive float64",
             cumulative_sum, lambda rng, n: (rng.random(n),), 16 * 1024 * 1024, 100_000,
             rtol=1e-9),
    Workload("drawdown", "maximum drawdown of 1024 price series: a running maximum "
             "(np.maximum.accumulate) along rows (float64)",
             drawdown, lambda rng, shape: (100 + np.cumsum(rng.standard_normal(shape), axis=-1),),
             (1024, 8192), (8, 128), rtol=1e-12),
    Workload("integer_hash", "LCG step, xor-shift and modulo on int64 (exact)",
             integer_hash, lambda rng, n: (rng.integers(0, 2**31, n, dtype=np.int64),),
             16 * 1024 * 1024, 100_000),
    Workload("mlp", "2-layer MLP: matmul, bias, relu, matmul, tanh (float32)",
             mlp, lambda rng, shape: (_normal(rng, (shape[0], shape[1]), np.float32),
                                      _normal(rng, (shape[1], shape[2]), np.float32) * 0.05,
                                      _normal(rng, shape[2], np.float32) * 0.1,
                                      _normal(rng, (shape[2], shape[3]), np.float32) * 0.05,
                                      _normal(rng, shape[3], np.float32) * 0.1),
             (4096, 512, 1024, 256), (64, 32, 64, 16), rtol=1e-3, atol=1e-4),
    Workload("polynomial", "degree-8 polynomial by Horner's rule on 16M float32",
             polynomial, lambda rng, n: (_normal(rng, n, np.float32),), 16 * 1024 * 1024,
             100_000, rtol=1e-4, atol=1e-4),
    Workload("gelu", "tanh-approximated GELU activation on 16M float32",
             gelu, lambda rng, n: (_normal(rng, n, np.float32),), 16 * 1024 * 1024, 100_000),
    Workload("logsumexp", "row-wise log-sum-exp (float64)",
             logsumexp, lambda rng, shape: (_normal(rng, shape, np.float64),),
             (4096, 2048), (64, 128)),
    Workload("histogram_weights", "a graph break (np.histogram) between fused code (float64)",
             histogram_weights, lambda rng, n: (_normal(rng, n, np.float64),), 1_000_000,
             10_000),
    Workload("reaction_diffusion", "40 Gray-Scott steps on a periodic 2-D grid (float64)",
             reaction_diffusion, lambda rng, n: (1 - 0.1 * rng.random((n, n)),
                                                 0.1 * rng.random((n, n))), 256, 32, loop=True),
    Workload("forward_substitution", "triangular solve, one row per iteration (float64)",
             forward_substitution,
             lambda rng, n: (np.tril(rng.random((n, n))) + n * np.eye(n), rng.random(n)),
             1000, 64, loop=True, rtol=1e-9),
    Workload("row_recurrence", "out[i] = 0.9 * out[i - 1] + x[i], row by row (float64)",
             row_recurrence, lambda rng, shape: (rng.random(shape),), (4000, 256), (64, 16),
             loop=True, rtol=1e-9),
    Workload("element_branch", "one element per iteration with a branch (float64)",
             element_branch, lambda rng, n: (rng.standard_normal(n),), 200_000, 2_000,
             loop=True),
    Workload("newton_sqrt", "Newton's square root until converged: a while loop (float64)",
             newton_sqrt, lambda rng, n: (1 + 100 * rng.random(n),), 1_000_000, 10_000,
             loop=True),
    Workload("jacobi_converge", "Jacobi sweeps until max change < 1e-4, float(err) in the "
             "while test (float64)", jacobi_converge, _plate, 128, 32, loop=True),
    Workload("cholesky", "Cholesky factorisation with moving slices A[j+1:, :j] (float64)",
             cholesky, lambda rng, n: (_spd(rng, n),), 200, 16, loop=True, rtol=1e-9),
    Workload("lu", "LU factorisation updating the trailing block a[k+1:, k+1:] (float64)",
             lu, lambda rng, n: (rng.random((n, n)) + n * np.eye(n),), 200, 16, loop=True,
             rtol=1e-9),
    Workload("gram_schmidt", "Gram-Schmidt QR with products over Q[:, :j] (float64)",
             gram_schmidt, lambda rng, n: (rng.random((n, n)) + n * np.eye(n),), 200, 16,
             loop=True, rtol=1e-8),
    Workload("covariance", "covariance matrix row by row, d[:, i] @ d[:, i:] (float64)",
             covariance, lambda rng, n: (rng.standard_normal((2 * n, n)),), 200, 16, loop=True,
             rtol=1e-9),
    Workload("crc32", "CRC-32 over bytes, bit by bit with a branch (uint32, exact)",
             crc32, lambda rng, n: (rng.integers(0, 256, n, dtype=np.uint32),), 20_000, 64,
             loop=True),
    Workload("sieve", "sieve of Eratosthenes as loops, range(i * i, n, i) under if s[i] "
             "(bool)", sieve, lambda rng, n: (rng.random(n) > 0.01,), 100_000, 1_000,
             loop=True),
    Workload("lcs", "longest common subsequence: a DP table filled element by element, a "
             "branch per element (int64)", lcs,
             lambda rng, n: (rng.integers(0, 4, n), rng.integers(0, 4, n)), 300, 32, loop=True),
    Workload("levinson", "Levinson-Durbin recursion of order n-1 (float64)",
             levinson, lambda rng, n: (_autocorrelation(rng, n),), 200, 16, loop=True, rtol=1e-7),
    Workload("mandelbrot", "64 steps of z <- z**2 + c on a complex grid (complex128)",
             mandelbrot, lambda rng, n: (_complex_grid(n) + 1e-3 * rng.random((n, n)),), 500, 32,
             loop=True),
    Workload("pair_energy", "nested loops over all pairs of 3-D points (float64)",
             pair_energy, lambda rng, n: (rng.random((n, 3)),), 300, 24, loop=True, rtol=1e-9),
    Workload("row_modes", "each row's most frequent value by np.unique's counts (int64)",
             row_modes, lambda rng, shape: (rng.integers(0, 50, shape),), (2000, 200), (64, 16),
             loop=True),
    Workload("outliers_to_median", "each row's outliers (|z| > 2, np.where's positions) set "
             "to its median (float64)", outliers_to_median,
             lambda rng, shape: (rng.standard_normal(shape),), (2000, 200), (64, 16), loop=True),
    Workload("logistic_losses", "200 epochs of logistic regression keeping each epoch's loss "
             "in a list (float64)", logistic_losses,
             lambda rng, n: (rng.standard_normal((n, 10)), (rng.random(n) > 0.5).astype(float)),
             1000, 64, loop=True, rtol=1e-9),
]

BY_NAME = {workload.name: workload for workload in WORKLOADS}


def select(names):
    """The workloads named in a comma list ('all', or empty: every one; 'seed': the seed
    table's; 'loops': the Python loop programs); unknown names are an error."""
    if not names or names.strip() == "all":
        return list(WORKLOADS)
    chosen = []
    for name in (part.strip() for part in names.split(",")):
        if not name:
            continue
        if name in ("seed", "loops"):
            chosen.extend(w for w in WORKLOADS
                          if (w.seed if name == "seed" else w.loop) and w not in chosen)
        elif name in BY_NAME:
            if BY_NAME[name] not in chosen:
                chosen.append(BY_NAME[name])
        else:
            raise ValueError(f"unknown workload {name!r}; known: all, seed, loops, "
                             + ", ".join(BY_NAME))
    return chosen
