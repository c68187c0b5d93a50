"""np.where, np.clip, np.ptp and np.nansum of a slice whose bounds move with a captured loop's
index (an expanding window's `np.where(w > t, w, 0).sum()`, `np.ptp(w)`) were graph breaks
that unrolled the loop; they keep the window now (kiln._windows.elementwise)."""
import numpy as np

import kiln
from test_numpy_programs_eleventh import assert_same, check_captured


def expanding(x, t=0.5):
    out = np.zeros((len(x), 4))
    for i in range(1, len(x)):
        w = x[:i + 1]
        out[i, 0] = np.where(w > t, w, 0).sum()
        out[i, 1] = np.clip(w, t / 2, t).sum()
        out[i, 2] = np.ptp(w)
        out[i, 3] = np.nansum(w)
    return out


def tail_gains(prices):
    out = np.zeros(len(prices))
    for i in range(len(prices) - 1):
        moves = prices[i + 1:] - prices[i]
        out[i] = np.where(moves > 0, moves, 0.0).mean()
    return out


def test_selections_of_moving_slices_are_one_loop():
    rng = np.random.default_rng(7)
    check_captured(expanding, rng.random(12))
    x = rng.random(12)
    x[[3, 7]] = np.nan  # nansum skips them; where, clip and ptp carry them as NumPy does
    check_captured(expanding, x)
    check_captured(expanding, rng.integers(0, 9, 10), 4)
    check_captured(tail_gains, 100 + np.cumsum(rng.standard_normal(15)))


def expanding_moves(x):
    out = np.zeros((len(x), 3))
    for i in range(1, len(x)):
        w = x[:i + 1]
        out[i, 0] = np.abs(np.diff(w)).sum()
        out[i, 1] = np.average(w)
        out[i, 2] = np.all(np.diff(w) > -0.5)
    return out


def block_changes(A, flags):
    total = np.zeros(A.shape[1])
    switches = 0
    for k in range(A.shape[0] - 1):
        total += np.diff(A[k:, :], axis=0).sum(axis=0)
        switches += np.count_nonzero(np.diff(flags[k:]).sum() > 1)
    return total, switches


def test_differences_and_averages_of_moving_slices_are_one_loop():
    rng = np.random.default_rng(8)
    check_captured(expanding_moves, rng.random(12))
    check_captured(expanding_moves, rng.integers(0, 5, 9).astype(np.int16))
    check_captured(block_changes, rng.random((6, 3)), rng.random(6) > 0.5)  # bool: not_equal


def expanding_nanmeans(x):
    out = np.zeros(len(x), dtype=x.dtype if x.dtype.kind == "f" else np.float64)
    for i in range(len(x)):
        out[i] = np.nanmean(x[:i + 1])
    return out


def test_nan_means_of_moving_slices_are_one_loop():
    x = np.array([np.nan, 1.0, 2.0, np.nan, 4.0, 7.0])  # NaN first: a mean of nothing
    check_captured(expanding_nanmeans, x)
    check_captured(expanding_nanmeans, x.astype(np.float32))
    check_captured(expanding_nanmeans, np.arange(6))


def tail_counts(x, A):
    counts = np.zeros(len(x), dtype=np.int64)
    rows = np.zeros((A.shape[0], A.shape[1]), dtype=np.int64)
    for i in range(len(x)):
        counts[i] = np.count_nonzero(x[i:] > 0.5)
    for k in range(A.shape[0]):
        rows[k] = np.count_nonzero(A[k:, :], axis=0)
    return counts, rows


def test_counts_of_moving_slices_are_one_loop():
    rng = np.random.default_rng(9)
    x, A = rng.random(10), rng.integers(0, 2, (5, 3))
    report = kiln.explain(kiln.compile(tail_counts))(x.copy(), A.copy())
    assert [loop.kind for loop in report.loops if loop.kind != "select"] == ["loop", "loop"]
    assert_same(kiln.compile(tail_counts)(x.copy(), A.copy()), tail_counts(x, A), "tail_counts")
