"""Numba versions of the workloads (same names as in workloads.py), written the way Numba users
write them: explicit loops under njit(parallel=True) with prange over the outer axis. A workload
without an entry here is reported as "no Numba version" rather than forced into loop form.

The functions are compiled on their first call (that is the compile time the harness reports)
and return NumPy arrays of the dtype NumPy's own program returns."""
import math

import numpy as np
from numba import njit, prange

from . import workloads as _workloads

_parallel = njit(parallel=True, fastmath=False, cache=False)


@_parallel
def _sin_cos_array(x):
    out = np.empty_like(x)
    flat_in = x.ravel()
    flat_out = out.ravel()
    for index in prange(flat_in.size):
        flat_out[index] = math.sin(flat_in[index]) + math.cos(flat_in[index])
    return out


@njit
def _sin_cos_scalar(x):
    return np.sin(x) + np.cos(x)


def sin_cos_0d(x):
    # Numba has no 0-d array calls worth timing in a loop: the scalar is what its users pass.
    return _sin_cos_scalar(x[()])


sin_cos_16m = _sin_cos_array


@_parallel
def numpy_fn(X, Y):
    rows, columns = X.shape
    X_normalized = np.empty_like(X)
    Y_normalized = np.empty_like(Y)
    for column in prange(columns):
        for source, target in ((X, X_normalized), (Y, Y_normalized)):
            mean = 0.0
            for row in range(rows):
                mean += source[row, column]
            mean /= rows
            variance = 0.0
            for row in range(rows):
                variance += (source[row, column] - mean) ** 2
            std = math.sqrt(variance / rows)
            if std == 0.0:
                std = 1.0
            for row in range(rows):
                target[row, column] = (source[row, column] - mean) / std
    result = np.empty(rows)
    squares = 0.0
    for row in prange(rows):
        total = 0.0
        for j in range(columns):
            for k in range(columns):
                total += X_normalized[row, j] * Y_normalized[row, k]
        result[row] = math.exp(min(max(total, -1.0), 1.0))
        row_squares = 0.0
        for j in range(columns):
            row_squares += X_normalized[row, j] ** 2
        squares += row_squares
    return result + 0.001 * squares


@_parallel
def kmeans(X, means):
    count = X.shape[0]
    labels = np.empty(count, dtype=np.int64)
    for point in prange(count):
        best, best_distance = 0, np.inf
        for mean in range(means.shape[0]):
            distance = 0.0
            for axis in range(X.shape[1]):
                difference = X[point, axis] - means[mean, axis]
                distance += difference * difference
            distance = math.sqrt(distance)
            if distance < best_distance:
                best, best_distance = mean, distance
        labels[point] = best
    return labels


kmeans_f64 = kmeans
kmeans_f32 = kmeans


@_parallel
def softmax(x):
    out = np.empty_like(x)
    for row in prange(x.shape[0]):
        largest = x[row, 0]
        for column in range(1, x.shape[1]):
            largest = max(largest, x[row, column])
        total = 0.0
        for column in range(x.shape[1]):
            value = math.exp(x[row, column] - largest)
            out[row, column] = value
            total += value
        for column in range(x.shape[1]):
            out[row, column] /= total
    return out


@_parallel
def layer_norm(x, gamma, beta):
    out = np.empty_like(x)
    width = x.shape[1]
    for row in prange(x.shape[0]):
        mean = 0.0
        for column in range(width):
            mean += x[row, column]
        mean /= width
        variance = 0.0
        for column in range(width):
            variance += (x[row, column] - mean) ** 2
        scale = 1.0 / math.sqrt(variance / width + 1e-5)
        for column in range(width):
            out[row, column] = (x[row, column] - mean) * scale * gamma[column] + beta[column]
    return out


@_parallel
def pairwise_distances(A, B):
    out = np.empty((A.shape[0], B.shape[0]), dtype=A.dtype)
    for i in prange(A.shape[0]):
        for j in range(B.shape[0]):
            total = 0.0
            for axis in range(A.shape[1]):
                difference = A[i, axis] - B[j, axis]
                total += difference * difference
            out[i, j] = math.sqrt(total)
    return out


@_parallel
def stencil(u):
    rows, columns = u.shape
    out = np.empty((rows - 2, columns - 2), dtype=u.dtype)
    for i in prange(1, rows - 1):
        for j in range(1, columns - 1):
            out[i - 1, j - 1] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
    return out


_HEAT_STEPS = _workloads.HEAT_STEPS


@_parallel
def heat_loop(u):
    u, v = u.copy(), u.copy()
    for _ in range(_HEAT_STEPS):
        for i in prange(1, u.shape[0] - 1):
            v[i] = u[i] + 0.2 * (u[i + 1] - 2.0 * u[i] + u[i - 1])
        u, v = v, u
    return u


_SPOT, _STRIKE = _workloads.SPOT, _workloads.STRIKE
_RATE, _VOLATILITY, _MATURITY = _workloads.RATE, _workloads.VOLATILITY, _workloads.MATURITY


@_parallel
def option_pricer(z):
    drift = (_RATE - 0.5 * _VOLATILITY * _VOLATILITY) * _MATURITY
    diffusion = _VOLATILITY * math.sqrt(_MATURITY)
    total = 0.0
    for index in prange(z.size):
        total += max(_SPOT * math.exp(drift + diffusion * z[index]) - _STRIKE, 0.0)
    return math.exp(-_RATE * _MATURITY) * (total / z.size)


@_parallel
def masked_reduction(x):
    total = 0.0
    count = 0
    for index in prange(x.size):
        if x[index] > 0.5:
            total += x[index] * x[index]
            count += 1
    return total / count


@njit
def cumulative_sum(x):
    # A prefix sum is sequential in plain loop form; Numba users write exactly this.
    out = np.empty_like(x)
    total = 0.0
    for index in range(x.size):
        total += x[index]
        out[index] = total
    return out


@_parallel
def integer_hash(x):
    out = np.empty_like(x)
    for index in prange(x.size):
        y = (x[index] * 1103515245 + 12345) & 0x7FFFFFFF
        y = y ^ (y >> 7)
        out[index] = y % 1009
    return out


@_parallel
def mlp(X, W1, b1, W2, b2):
    # The matmuls go to BLAS as in NumPy; relu is an in-place loop, because np.maximum with a
    # Python float would widen float32 to float64 under Numba's typing.
    hidden = X @ W1 + b1
    for row in prange(hidden.shape[0]):
        for column in range(hidden.shape[1]):
            if hidden[row, column] < 0:
                hidden[row, column] = 0
    return np.tanh(hidden @ W2 + b2)


_COEFFICIENTS = np.array(_workloads.POLYNOMIAL_COEFFICIENTS)


@_parallel
def polynomial(x):
    out = np.empty_like(x)
    coefficients = _COEFFICIENTS.astype(x.dtype)
    for index in prange(x.size):
        value = coefficients[0]
        for power in range(1, coefficients.size):
            value = value * x[index] + coefficients[power]
        out[index] = value
    return out


@_parallel
def gelu(x):
    out = np.empty_like(x)
    for index in prange(x.size):
        value = x[index]
        out[index] = 0.5 * value * (1.0 + math.tanh(
            0.7978845608028654 * (value + 0.044715 * value * value * value)))
    return out


@_parallel
def logsumexp(x):
    out = np.empty(x.shape[0], dtype=x.dtype)
    for row in prange(x.shape[0]):
        largest = x[row, 0]
        for column in range(1, x.shape[1]):
            largest = max(largest, x[row, column])
        total = 0.0
        for column in range(x.shape[1]):
            total += math.exp(x[row, column] - largest)
        out[row] = largest + math.log(total)
    return out


# The loop programs: Numba compiles them as written (njit of the NumPy function itself), which is
# how its users write such code. reaction_diffusion uses np.roll with an axis, which Numba lacks.
forward_substitution = njit(_workloads.forward_substitution)
row_recurrence = njit(_workloads.row_recurrence)
element_branch = njit(_workloads.element_branch)
newton_sqrt = njit(_workloads.newton_sqrt)
jacobi_converge = njit(_workloads.jacobi_converge)
pair_energy = njit(_workloads.pair_energy)
mandelbrot = njit(_workloads.mandelbrot)
cholesky = njit(_workloads.cholesky)
lu = njit(_workloads.lu)
gram_schmidt = njit(_workloads.gram_schmidt)
outliers_to_median = njit(_workloads.outliers_to_median)


@njit
def row_modes(x):  # Numba's np.unique takes no return_counts: the sorted row's runs by hand
    modes = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        ordered = np.sort(x[i])
        best, best_count, run = ordered[0], 0, 0
        for j in range(ordered.shape[0]):
            run = run + 1 if j > 0 and ordered[j] == ordered[j - 1] else 1
            if run > best_count:  # (a tie keeps the smaller value, as np.argmax's first)
                best, best_count = ordered[j], run
        modes[i] = best
    return modes


@njit
def covariance(data):  # Numba's mean takes no axis: the column means by hand, the rest as written
    m = data.shape[1]
    mean = np.zeros(m)
    for row in range(data.shape[0]):
        mean += data[row]
    d = data - mean / data.shape[0]
    cov = np.empty((m, m))
    for i in range(m):
        cov[i, i:] = d[:, i] @ d[:, i:]
        cov[i:, i] = cov[i, i:]
    return cov / (data.shape[0] - 1)
crc32 = njit(_workloads.crc32)
sieve = njit(_workloads.sieve)
lcs = njit(_workloads.lcs)
levinson = njit(_workloads.levinson)
