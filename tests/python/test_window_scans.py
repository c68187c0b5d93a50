"""np.cumsum and np.cumprod of a slice whose bounds move with a captured loop's index
(`np.cumsum(x[:i])[-1]`, `out[i, i:] = np.cumprod(x[i:])`) were graph breaks that unrolled the
loop; they are scans of the whole axes with the identity outside the window now
(kiln._windows.scan)."""

import numpy as np

from test_numpy_programs_eleventh import check_captured


def prefix_totals(x):
    kind = np.result_type(x.dtype, np.int64) if x.dtype.kind in "biu" else x.dtype
    out = np.zeros(len(x), dtype=kind)
    for i in range(1, len(x)):
        out[i] = np.cumsum(x[:i])[-1]
    return out


def tail_growth(x):
    out = np.zeros((len(x), len(x)))
    for i in range(len(x)):
        out[i, i:] = np.cumprod(x[i:])
    return out


def block_running_sums(A):
    out = np.zeros(A.shape)
    for k in range(A.shape[0]):
        out[k:, :] += A[k:, :].cumsum(axis=0)
    return out


def test_running_totals_of_moving_slices_are_one_loop():
    rng = np.random.default_rng(6)
    check_captured(prefix_totals, rng.random(10))
    check_captured(prefix_totals, rng.integers(0, 5, 10).astype(np.int8))  # int64 as NumPy's
    check_captured(prefix_totals, rng.random(10) > 0.5)
    check_captured(tail_growth, rng.random(6) + 0.5)
    check_captured(block_running_sums, rng.random((4, 3)))
