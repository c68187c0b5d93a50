"""np.argmax / np.argmin of slices whose bounds move with a loop's index (kiln.
_window_arg_reductions) and row swaps by a traced row (A[[k, p]] = A[[p, k]]): Gaussian
elimination with partial pivoting is one captured loop, and the positions are NumPy's (the
first of equal values, the first NaN). Before, the argmax unrolled the loop: 10-15 s to compile
at n = 40."""
import numpy as np
import pytest

import kiln


def loop_kinds(f, *args):
    return [loop.kind for loop in kiln.explain(f)(*args).loops if loop.kind != "select"]


def agrees(f, *args):
    """f compiled: NumPy's values and dtype, from one captured loop."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    assert loop_kinds(f, *copies) == ["loop"]
    expected = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = kiln.compile(f)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert np.asarray(got).dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def positions_in_tails(x):  # windows from the start, to the end, and both
    n = x.shape[0]
    out = np.zeros((n, 4), dtype=np.int64)
    for k in range(n - 1):
        out[k, 0] = np.argmax(x[k:])
        out[k, 1] = np.argmin(x[:n - k])
        out[k, 2] = x[k:n - 1].argmax() + k
        out[k, 3] = np.argmin(x[1:k + 2])
    return out


VECTORS = {
    "ties": np.array([3.0, 1.0, 3.0, 1.0, 3.0, 1.0, 2.0]),
    "nans": np.array([1.0, np.nan, 5.0, np.nan, -2.0, 7.0, np.nan, 0.0]),
    "infinities": np.array([-np.inf, -np.inf, np.inf, -np.inf, np.inf, -np.inf]),
    "int8 extremes": np.array([-128, 5, -128, 127, 127, -128, 0], dtype=np.int8),
    "uint16": np.array([0, 9, 0, 65535, 3, 0], dtype=np.uint16),
    "bools": np.array([False, True, False, False, True, True, False]),
    "float32": np.random.default_rng(1).standard_normal(20).astype(np.float32),
}


@pytest.mark.parametrize("x", VECTORS.values(), ids=VECTORS.keys())
def test_argmax_argmin_of_moving_slices_are_numpy_positions(x):
    # A fill equal to the window's largest value (-inf, -128, False) loses the tie to the
    # window's own first position, and the first NaN wins, as in NumPy.
    agrees(positions_in_tails, x)


def positions_along_axes(a):
    n = a.shape[0]
    out = np.zeros((n, n), dtype=np.int64)
    for k in range(n):
        out[k] = np.argmax(a[k:, :], axis=0)            # reduced axis moving
        out[:, k] += np.argmin(a[:, k:], axis=-1)
        out[k, k:] += np.argmax(a[k:, k:], axis=0)       # the result keeps a moving axis
        out[k] -= np.argmin(a[k:, :], axis=0, keepdims=True)[0]
        out[:k + 1, 0] += np.argmax(a[:k + 1, :], axis=1)  # reduced axis fixed, the other moving
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.int16])
def test_argmax_argmin_along_an_axis_of_moving_slices(dtype):
    a = np.random.default_rng(2).integers(-3, 4, (7, 7)).astype(dtype)  # many ties
    if dtype == np.float64:
        a[2, 3] = a[5, 1] = np.nan
    agrees(positions_along_axes, a)


def shrinking_argmax(x):  # an array that shrinks in the loop (kiln._loop_extents)
    total = 0
    for _ in range(x.shape[0] - 1):
        total += np.argmax(x) * 10 + np.argmin(x)
        x = x[1:] - x[:-1]
    return total


def test_argmax_of_an_array_that_shrinks_in_a_loop():
    agrees(shrinking_argmax, np.array([4.0, 1.0, 7.0, 7.0, 2.0, 9.0, 3.0]))


def elimination_with_copied_swap(a):
    a = a.copy()
    n = a.shape[0]
    for k in range(n - 1):
        p = np.argmax(np.abs(a[k:, k])) + k
        tmp = a[k].copy()
        a[k] = a[p]
        a[p] = tmp
        a[k + 1:] -= np.outer(a[k + 1:, k] / a[k, k], a[k])
    return a


def elimination_with_fancy_swap(a, b):
    a, b = a.copy(), b.copy()
    n = a.shape[0]
    for k in range(n - 1):
        p = k + np.argmax(np.abs(a[k:, k]))
        a[[k, p]] = a[[p, k]]
        b[[k, p]] = b[[p, k]]
        factors = a[k + 1:, k] / a[k, k]
        a[k + 1:, k:] -= factors[:, None] * a[k, k:]
        b[k + 1:] -= factors * b[k]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - a[i, i + 1:] @ x[i + 1:]) / a[i, i]
    return x


def test_gaussian_elimination_with_partial_pivoting_is_one_loop():
    a = np.random.default_rng(3).random((12, 12))
    agrees(elimination_with_copied_swap, a)


def test_pivoting_with_a_fancy_index_swap_solves_as_numpy():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((10, 10)), rng.standard_normal(10)
    f = elimination_with_fancy_swap
    assert loop_kinds(f, a, b) == ["loop", "loop"]
    np.testing.assert_allclose(kiln.compile(f)(a, b), f(a, b), rtol=1e-10)
    np.testing.assert_allclose(kiln.compile(f)(a, b), np.linalg.solve(a, b), rtol=1e-8)


def swap_rows_by_position(a):
    a = a.copy()
    for k in range(a.shape[0]):
        p = np.argmin(a[k:, 0]) + k
        a[[k, p]] = a[[p, k]]   # p == k: both sides name one row
        a[[p, 0], 1] += 1.0     # traced indices and an int in one list, another axis
    return a


def reverse_by_swaps(x):
    n = x.shape[0]
    for k in range(n // 2):
        x[[k, n - 1 - k]] = x[[n - 1 - k, k]]   # a list of the loop's index: was a break
    return x


@pytest.mark.parametrize("function", [swap_rows_by_position, reverse_by_swaps])
def test_fancy_index_lists_of_traced_rows(function):
    a = np.array([[3.0, 0], [1, 0], [1, 0], [5, 0], [0, 0], [2, 1], [-1, 3]])
    agrees(function, a)


def argmax_of_all_tails(x):
    out = np.zeros(x.shape[0] + 1, dtype=np.int64)
    for k in range(x.shape[0] + 1):
        out[k] = np.argmax(x[k:])   # empty at the end: NumPy's ValueError
    return out


def complex_argmax(z):
    out = np.zeros(z.shape[0], dtype=np.int64)
    for k in range(z.shape[0]):
        out[k] = np.argmax(z[k:])   # lexicographic order: not masked
    return out


def test_windows_that_may_be_empty_or_are_complex_stay_unrolled_and_exact():
    x = np.array([1.0, 3.0, 2.0])
    with pytest.raises(ValueError, match="empty"):
        argmax_of_all_tails(x)
    with pytest.raises(ValueError, match="empty"):
        kiln.compile(argmax_of_all_tails)(x)
    z = np.array([1 + 2j, 1 + 3j, 2 - 1j, 2 - 1j, 0j])
    report = kiln.explain(complex_argmax)(z)
    assert [loop.kind for loop in report.loops] == ["unrolled"]
    assert "complex" in report.loops[0].reason
    np.testing.assert_array_equal(kiln.compile(complex_argmax)(z), complex_argmax(z))
