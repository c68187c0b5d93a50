"""np.var and np.std of a slice whose bounds move with a captured loop's index (an expanding
z-score's `x[:i + 1].std()`, a tail's `np.var(x[i:], ddof=1)`) were graph breaks that unrolled
the loop; they are the window's two passes now (kiln._windows.variance)."""

import numpy as np

from test_numpy_programs_eleventh import check_captured


def expanding_zscores(x):
    out = np.zeros(len(x), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    for i in range(1, len(x)):
        w = x[:i + 1]
        out[i] = (x[i] - w.mean()) / w.std()
    return out


def tail_variances(x, ddof=1):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.var(x[i:], ddof=ddof)  # the last one has no degrees of freedom left
    return out


def complex_spreads(z):
    out = np.zeros(len(z))
    for i in range(1, len(z)):
        out[i] = np.std(z[:i + 1])
    return out


def column_spreads(A, keepdims=False):
    out = np.zeros((A.shape[0], A.shape[1]))
    for k in range(A.shape[0] - 1):
        s = A[k:, :].std(axis=0, keepdims=keepdims)
        out[k] = s.ravel() if keepdims else s
    return out


def row_variances_in_float64(A):
    total = np.zeros(A.shape[0])
    for k in range(A.shape[1] - 1):
        total += np.var(A[:, k:], axis=1, dtype=np.float64)
    return total


def test_expanding_and_tail_spreads_are_one_loop():
    rng = np.random.default_rng(4)
    check_captured(expanding_zscores, rng.standard_normal(30))
    check_captured(expanding_zscores, rng.standard_normal(20).astype(np.float32))
    check_captured(expanding_zscores, rng.integers(0, 9, 25))
    check_captured(tail_variances, rng.random(12))  # NaN at the end, as NumPy's 0/0
    check_captured(tail_variances, rng.random(12), 0)
    check_captured(complex_spreads, rng.random(10) + 1j * rng.random(10))


def test_spreads_along_an_axis_of_a_moving_block():
    rng = np.random.default_rng(5)
    check_captured(column_spreads, rng.random((6, 4)))
    check_captured(column_spreads, rng.random((6, 4)), True)
    check_captured(row_variances_in_float64, rng.random((3, 7)).astype(np.float32))
