"""x[mask] selections, and values chosen by data-dependent branches, as NumPy has them.

kiln holds x[mask] lazily (x and the mask) so that reductions and elementwise math of it run
under the mask without a graph break. Every other use reads its elements (at a graph break: their
count depends on the data) and from then on it is a plain array, a copy, as in NumPy. Each case
once read the whole of x as the selection's value, or lost a write, without an error.
"""
import numpy as np
import pytest

import kiln


def _same(function, *args):
    expected_args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    expected = function(*expected_args)
    compiled = kiln.compile(function)
    for _ in range(2):  # traced, then from the cache
        given = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        result = compiled(*given)
        for value, want in zip(np.atleast_1d(np.asarray(result, dtype=object)),
                               np.atleast_1d(np.asarray(expected, dtype=object))):
            np.testing.assert_allclose(np.asarray(value, dtype=float),
                                       np.asarray(want, dtype=float), rtol=1e-12)
        for value, want in zip(given, expected_args):  # arguments updated alike
            np.testing.assert_array_equal(np.asarray(value), np.asarray(want))


def _first_zeroed(x):
    m = x[x > 2]
    m[0] = 0
    return m


def _tail_zeroed(x):
    m = x[x > 2]
    m[1:] = 0
    return m


def _fancy_zeroed(x):
    m = x[x > 2]
    m[[0, 1]] = 0
    return m


def _sorted_in_place(x):
    m = x[x > 2]
    m.sort()
    return m


def _masked_again(x):
    m = x[x % 2 == 0]
    m[m > 2] = 0
    m[0] = 9
    return m


def _rows_column_zeroed(X):
    S = X[X[:, 0] > 0.5]
    S[:, 1] = 0
    return S, X.sum()


@pytest.mark.parametrize("function", [_first_zeroed, _tail_zeroed, _fancy_zeroed,
                                      _sorted_in_place, _masked_again])
def test_writes_into_a_selection_change_the_copy_only(function):
    _same(function, np.array([5.0, 1.0, 7.0, 3.0, 0.0, 9.0, 4.0, 2.0, 8.0, 6.0]))


def test_a_row_selection_written_by_column():
    _same(_rows_column_zeroed, np.random.default_rng(0).random((8, 3)))


def test_a_selection_in_a_matrix_product():
    def energy_above(x, threshold):
        s = x[x > threshold]
        return s @ s
    _same(energy_above, np.arange(10.0), 3.0)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.minimum, np.maximum])
def test_ufunc_reduce_of_a_selection(ufunc):
    def reduced(x, threshold):
        return ufunc.reduce(x[x > threshold])
    _same(reduced, np.arange(10.0), 3.0)


def test_a_mask_changed_after_the_selection_leaves_it_be():
    def selected_then_changed(x):
        m = x > 2
        values = x[m]
        m[-1] = False
        return values.sum(), m.sum()
    _same(selected_then_changed, np.arange(6.0))


def test_sigma_clipping_with_an_in_place_mask_update():
    def clipped(x, rounds):
        keep = np.ones(x.shape, dtype=bool)
        for _ in range(rounds):
            values = x[keep]
            mean, deviation = values.mean(), values.std()
            keep &= np.abs(x - mean) < 2 * deviation
        return values.mean(), values.size, keep.sum()
    data = np.concatenate([np.random.default_rng(0).standard_normal(50), [8.0, -9.0, 12.0]])
    for rounds in (1, 2, 3, 4):
        _same(clipped, data, rounds)


def test_a_selection_made_in_a_loop_and_read_after_it():
    def last_selection(x, n):
        for i in range(n):
            s = x[x > i]
        return s.sum(), s.size
    for n in (2, 3, 5):  # n = 3 on: a captured loop
        _same(last_selection, np.arange(10.0), n)


def test_a_selection_chosen_by_a_data_dependent_branch():
    def robust_total(x, threshold):
        if x.sum() > threshold:
            s = x[x > 2]
        else:
            s = x[x > 5]
        return s.sum(), s.size
    for threshold in (10.0, 100.0):
        _same(robust_total, np.arange(10.0), threshold)


def test_a_view_chosen_by_a_data_dependent_branch_writes_through():
    def boost_half(x, threshold):
        y = x.copy()
        if y.max() > threshold:
            v = y[:3]
        else:
            v = y[-3:]
        v *= 2
        return y

    def mark_argument(x, threshold):
        if x.sum() > threshold:
            v = x[::2]
        else:
            v = x[1::2]
        v[0] = -1
        return v.sum()
    for threshold in (5.0, 100.0):
        _same(boost_half, np.arange(10.0), threshold)
        _same(mark_argument, np.arange(10.0), threshold)


def test_an_array_returned_twice_is_one_array():
    def twice(x):
        new = x + 1
        return {"current": new, "best": new}, new
    compiled = kiln.compile(twice)
    for _ in range(2):
        tree, again = compiled(np.arange(4.0))
        assert tree["current"] is tree["best"] is again
