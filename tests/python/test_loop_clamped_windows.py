"""Moving windows clamped to their array's ends (a trailing mean's x[max(0, i - k + 1):i + 1],
a centred window's x[max(0, i - h):min(n, i + h + 1)], a forward x[i:min(i + w, n)]) in a
Python loop: the bounds are a loop's index clamped by constants (kiln._clamped_bounds), the
loop one loop node. They were "slice bounds computed from data": the loop unrolled into a
source past the bound, and then ran eagerly."""

import numpy as np
import pytest

import kiln
from test_numpy_programs_eleventh import check_captured, check_repeated_calls


def moving_mean(x, k):
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = x[max(0, i - k + 1):i + 1].mean()
    return out


def trailing_stats(x, k):
    n = len(x)
    out = np.zeros((4, n))
    for i in range(n):
        w = x[max(0, i - k + 1):i + 1]
        out[0, i] = w.sum()
        out[1, i] = w.max()
        out[2, i] = np.min(w)
        out[3, i] = w.std()
    return out


def centred_mean(x, h):
    n = len(x)
    out = np.zeros(n)
    for i in range(n):
        out[i] = x[max(0, i - h):min(n, i + h + 1)].mean()
    return out


def forward_max(x, w):
    n = len(x)
    out = np.zeros(n)
    for i in range(n):
        out[i] = x[i:min(i + w, n)].max()
    return out


def shape_window_mean(x):
    k = max(1, len(x) // 8)  # a window computed from the data's shape
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.mean(x[np.maximum(i - k + 1, 0):i + 1])
    return out


def row_window_means(X, k):
    out = np.zeros_like(X)
    for i in range(X.shape[0]):
        out[i] = X[max(0, i - k + 1):i + 1].mean(axis=0)
    return out


def column_window_sums(X, h):
    n = X.shape[1]
    out = np.zeros_like(X)
    for j in range(n):
        out[:, j] = X[:, max(0, j - h):min(n, j + h + 1)].sum(axis=1)
    return out


@pytest.mark.parametrize("k", [1, 3, 7, 40])  # 40 > n: every window starts at 0
def test_trailing_windows_are_one_loop(k):
    rng = np.random.default_rng(1)
    check_captured(moving_mean, rng.standard_normal(25), k)
    check_captured(trailing_stats, rng.standard_normal(25), k)


def test_trailing_windows_of_other_dtypes():
    rng = np.random.default_rng(2)
    check_captured(moving_mean, rng.standard_normal(20).astype(np.float32), 4)
    check_captured(trailing_stats, rng.integers(-9, 9, 20), 5)


@pytest.mark.parametrize("h", [0, 2, 30])
def test_centred_and_forward_windows_are_one_loop(h):
    rng = np.random.default_rng(3)
    check_captured(centred_mean, rng.standard_normal(21), h)
    check_captured(forward_max, rng.standard_normal(21), h + 1)


def test_window_length_from_the_shape_and_numpy_maximum():
    rng = np.random.default_rng(4)
    check_captured(shape_window_mean, rng.standard_normal(40))


def test_windows_of_rows_and_columns():
    rng = np.random.default_rng(5)
    check_captured(row_window_means, rng.standard_normal((12, 3)), 4)
    check_captured(column_window_sums, rng.standard_normal((3, 11)), 2)


def test_empty_input_agrees_with_numpy():
    check_repeated_calls(moving_mean, (np.zeros(0), 3))
    check_repeated_calls(centred_mean, (np.zeros(0), 2))


def two_different_windows(x):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = (x[max(0, i - 1):i + 1] * x[max(0, i - 2):i + 1]).sum()
    return out


def test_windows_of_different_clamps_never_meet():
    """Their lengths agree on some iterations only: NumPy's answer, or its error, never a
    window moved onto the other."""
    check_repeated_calls(two_different_windows, (np.array([1.0, 2.0]),))
    with pytest.raises(ValueError):
        two_different_windows(np.arange(5.0))
    with pytest.raises(ValueError):
        kiln.compile(two_different_windows)(np.arange(5.0))


def window_ends_and_inner_slices(x, k):
    out = np.zeros((3, len(x)))
    for i in range(len(x)):
        w = x[max(0, i - k + 1):i + 1]
        out[0, i] = w[0] + 2.0 * w[-1]
        out[1, i] = w[1:].sum()
        out[2, i] = ((w - w.mean()) ** 2).sum() + np.dot(w, w)
    return out


def growing_clamped_argmax(x, w):
    out = np.zeros(len(x), dtype=np.int64)
    for i in range(len(x)):
        out[i] = np.argmax(x[:min(i + w, len(x))])
    return out


def clamped_window_update(x, k):
    x = x.copy()
    for i in range(len(x)):
        x[max(0, i - k + 1):i + 1] += 1.0
    return x


def test_elements_slices_and_updates_of_clamped_windows():
    rng = np.random.default_rng(6)
    check_captured(window_ends_and_inner_slices, rng.standard_normal(15), 3)
    check_captured(growing_clamped_argmax, rng.standard_normal(15), 4)
    check_captured(clamped_window_update, rng.standard_normal(15), 3)


def clamped_stencil(x, taps):
    n, width = len(x), len(taps)
    out = np.zeros(n)
    for i in range(n):
        lo = min(max(i - width // 2, 0), n - width)  # a window of fixed length kept inside
        out[i] = x[lo:lo + width] @ taps
    return out


def test_a_clamped_start_of_fixed_length_is_a_fixed_view():
    rng = np.random.default_rng(7)
    check_captured(clamped_stencil, rng.standard_normal(16), np.array([0.25, 0.5, 0.25]))
    check_captured(clamped_stencil, rng.standard_normal(9), rng.standard_normal(4))


def numpy_clamps_that_never_bite(x, k):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = x[np.maximum(i, 0):np.minimum(i + k, len(x) + k)].sum()
    return out


def test_numpy_clamps_that_never_bite_are_windows_too():
    check_captured(numpy_clamps_that_never_bite, np.arange(12.0), 3)
