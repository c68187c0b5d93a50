"""Selections whose length the data decide, in loop bodies (kiln._masked_selections): x[mask]
reduced (max, min, ptp, argmax, count_nonzero, size, len(), median), sorted, indexed at an
integer, and the positions np.nonzero / np.flatnonzero / np.where(c) give and the values
np.unique gives, read into values of fixed shape, or written through (y[idx] = v), keep the
loop one loop node. Each was a graph break that unrolled the loop (slower than NumPy). Values
and errors are NumPy's; outside loops those functions run eagerly as before."""
import numpy as np
import pytest

import kiln


def selection_reductions(x, t):
    total = 0.0
    for i in range(x.shape[0]):
        sel = x[i][x[i] > t]
        total += sel.sum() + sel.size + sel.max() + sel.mean() + np.ptp(sel) + sel.min()
    return total


def per_row_extremes(x, t):
    out = np.zeros((x.shape[0], 5))
    for i in range(x.shape[0]):
        sel = x[i][x[i] > t]
        out[i] = (np.max(sel), np.min(sel), np.argmax(sel), np.argmin(sel),
                  np.count_nonzero(sel > 0.7))
    return out


def distinct_per_row(x):
    out = np.zeros(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        out[i] = np.unique(x[i]).size
    return out


def first_and_last(x, t):
    first = np.zeros(x.shape[0], np.int64)
    last = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        idx = np.flatnonzero(x[i] > t)
        first[i] = idx[0]
        last[i] = x[i][idx][-1] + x[i][idx].sum() + np.argmax(x[i][idx])
    return first, last


def coordinates(x):
    total = 0.0
    for i in range(x.shape[0]):
        r, c = np.nonzero(x[i] > 0.7)
        total += (r * 3 + c).sum() + x[i][r, c].sum() + np.where(x[i, 0] > 0.5)[0].size
        total += x[i][np.nonzero(x[i] > 0.2)].max() + (x[i] > 0.9).nonzero()[1].sum()
    return total


def kth_selected(x, t):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        sel = x[i][x[i] > t]
        out[i] = sel[i % 3] - sel[-(i % 2) - 1]
    return out


def unique_values(x):
    out = np.zeros((x.shape[0], 3))
    for i in range(x.shape[0]):
        u = np.unique(x[i])
        out[i] = (u.size, u.max(), u[1])
    return out


def lengths(x, t):
    n = np.zeros(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        idx = np.flatnonzero(x[i] > t)
        n[i] = len(idx) + len(x[i][x[i] > 0.3]) + len(x[i])
        if len(idx) > 14:  # a branch on the count: both sides traced, one select
            n[i] += 100
    return n


def order_statistics(x, t):
    out = np.zeros((x.shape[0], 4))
    for i in range(x.shape[0]):
        sel = x[i][x[i] > t]
        ordered = np.sort(sel)
        out[i] = (np.median(sel), ordered[1], ordered[-2], np.median(x[i][x[i] > 2 * t]))
    return out


def outliers_to_median(x):
    x = x.copy()
    for i in range(x.shape[0]):
        z = (x[i] - x[i].mean()) / x[i].std()
        far = np.where(np.abs(z) > 2)[0]
        x[i, far] = np.median(x[i])  # x[i, positions]: x[i][positions]
        x[i, far] += x[i, far] * 0.5  # read and written at the same positions
    return x


def modes(x):
    out = np.zeros((x.shape[0], 4))
    for i in range(x.shape[0]):
        values, first, inverse, counts = np.unique(x[i], return_index=True, return_inverse=True,
                                                   return_counts=True)
        out[i] = (values[np.argmax(counts)], first[np.argmax(counts)], inverse.sum(),
                  counts.max())
    return out


def _arguments(function, seed):
    rng = np.random.default_rng(seed)
    if function is distinct_per_row:
        return (rng.integers(0, 10, (40, 30)),)
    if function is coordinates:
        return (rng.random((30, 6, 7)),)
    if function is modes:
        x = np.random.default_rng(seed).integers(0, 6, (30, 3, 5)).astype(float)
        x[::3, 1, 2] = x[::5, 0, :2] = np.nan  # NaNs are one value of np.unique
        return (x,)
    if function is outliers_to_median:
        return (np.random.default_rng(seed).standard_normal((30, 40)),)
    if function is order_statistics:
        x = np.random.default_rng(seed).random((30, 11))
        x[3, 4] = np.nan  # NumPy's median is NaN, its sort puts NaN last
        x[5, :] = 0.4  # the second median's selection is empty: NaN (NumPy warns)
        return (x, 0.3)
    if function is unique_values:
        x = rng.integers(0, 5, (30, 12)).astype(float)
        x[::4, ::3] = np.nan  # NaNs are one value of np.unique (equal_nan)
        x[:, :2] = [0, 1]
        return (x,)
    return (rng.random((40, 30)), 0.1 if function in (first_and_last, kth_selected) else 0.5)


def _same(actual, expected):
    if isinstance(expected, tuple):
        for a, e in zip(actual, expected):
            _same(a, e)
        return
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-12)
    assert np.asarray(actual).dtype == np.asarray(expected).dtype


@pytest.mark.parametrize("function", [selection_reductions, per_row_extremes, distinct_per_row,
                                      first_and_last, coordinates, kth_selected,
                                      unique_values, lengths, order_statistics,
                                      outliers_to_median, modes])
def test_a_loop_that_selects_is_one_loop_node(function):
    compiled = kiln.compile(function)
    for seed in range(3):
        args = _arguments(function, seed)
        _same(compiled(*args), function(*args))
    report = kiln.explain(function)(*_arguments(function, 0))
    assert [loop.kind for loop in report.loops if loop.kind != "select"] == ["loop"], report.loops
    assert not report.break_reasons and len(report.graphs) == 1


def _errors(function, *args):
    with pytest.raises(Exception) as expected:
        function(*args)
    with pytest.raises(type(expected.value)) as actual:
        kiln.compile(function)(*args)
    return str(expected.value), str(actual.value)


def test_an_empty_selection_raises_numpys_errors():
    x = np.random.default_rng(0).random((20, 8))
    x[7] = 0.0  # row 7 selects nothing

    def largest(x):
        out = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = x[i][x[i] > 0.1].max()
        return out

    def first(x):
        out = np.zeros(x.shape[0], np.int64)
        for i in range(x.shape[0]):
            out[i] = np.flatnonzero(x[i] > 0.1)[0]
        return out

    def last_position(x):
        out = np.zeros(x.shape[0], np.int64)
        for i in range(x.shape[0]):
            out[i] = np.argmin(x[i][x[i] > 0.1])
        return out

    numpy_message, kiln_message = _errors(largest, x)
    assert numpy_message in kiln_message and "largest" not in numpy_message
    numpy_message, kiln_message = _errors(first, x)
    assert numpy_message == "index 0 is out of bounds for axis 0 with size 0"
    assert numpy_message in kiln_message
    numpy_message, kiln_message = _errors(last_position, x)
    assert numpy_message == "attempt to get argmin of an empty sequence"
    assert numpy_message in kiln_message


def test_an_index_past_the_selection_names_its_size():
    def third_from_end(x):
        out = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            out[i] = x[i][x[i] > 0.5][-3]
        return out
    x = np.full((6, 5), 0.9)
    x[4, 1:] = 0.1  # one element selected: -3 is out of bounds
    numpy_message, kiln_message = _errors(third_from_end, x)
    assert numpy_message == "index -3 is out of bounds for axis 0 with size 1"
    assert numpy_message in kiln_message


def test_positions_index_another_array_with_numpys_bounds():
    def gather(x, y):
        total = 0.0
        for i in range(x.shape[0]):
            total += y[np.flatnonzero(x[i] > 0.5)].sum()
        return total
    rng = np.random.default_rng(1)
    x, y = rng.random((10, 6)), rng.random(6)
    assert kiln.compile(gather)(x, y) == pytest.approx(gather(x, y), rel=1e-12)
    short = rng.random(4)  # positions 4 and 5, where selected, are past it
    numpy_message, kiln_message = _errors(gather, x, short)
    assert numpy_message in kiln_message


def test_extremes_of_integer_and_bool_selections_and_nans():
    def extremes(x, m):
        out = np.zeros((x.shape[0], 4))
        for i in range(x.shape[0]):
            sel = x[i][m[i]]
            out[i] = (sel.max(), sel.min(), np.argmax(sel), (sel > 2).max())
        return out
    rng = np.random.default_rng(2)
    x = rng.integers(-5, 5, (12, 9)).astype(np.int16)
    m = rng.random((12, 9)) > 0.3
    m[:, 0] = True
    _same(kiln.compile(extremes)(x, m), extremes(x, m))
    f = rng.random((12, 9))
    f[3, 4] = f[5, 0] = np.nan  # NumPy's max is NaN and its argmax the first NaN
    _same(kiln.compile(extremes)(f, m), extremes(f, m))


def test_a_selection_that_outlives_its_iteration_unrolls_with_numpys_values():
    def kept(x):
        sel = x[0]
        for i in range(x.shape[0]):
            sel = np.flatnonzero(x[i] > 0.5)
        return sel
    x = np.random.default_rng(3).random((12, 7))
    np.testing.assert_array_equal(kiln.compile(kept)(x), kept(x))


def test_outside_loops_the_functions_run_eagerly():
    def positions(x):
        idx = np.flatnonzero(x > 0.5)
        return [int(i) for i in idx], np.unique(np.round(x, 1)), np.nonzero(x > 0.2)
    x = np.random.default_rng(4).random(9)
    result, expected = kiln.compile(positions)(x), positions(x)
    assert result[0] == expected[0]
    np.testing.assert_array_equal(result[1], expected[1])
    np.testing.assert_array_equal(result[2][0], expected[2][0])


def test_bits_in_a_loop():
    def set_bits(b):
        out = np.zeros(b.shape[0], np.int64)
        packed = np.zeros_like(b)
        for i in range(b.shape[0]):
            bits = np.unpackbits(b[i])
            out[i] = bits.sum()
            packed[i] = np.packbits(bits[::-1], bitorder="little")[::-1]
        return out, packed
    b = np.random.default_rng(5).integers(0, 256, (50, 8)).astype(np.uint8)
    _same(kiln.compile(set_bits)(b), set_bits(b))
    report = kiln.explain(set_bits)(b)
    assert [loop.kind for loop in report.loops] == ["loop"] and not report.break_reasons


def labelled(x, y, t):
    labels = np.zeros(x.shape, np.int64)
    counts = np.zeros(x.shape[1])
    grids = np.zeros((x.shape[0], 4, 3))
    for i in range(x.shape[0]):
        idx = np.flatnonzero(x[i] > t)
        labels[i][idx] = i + 1  # through a view of labels
        counts[idx] += 1
        r = np.nonzero(x[i] > 0.9)[0]
        counts[r] = counts[r] * 2
        rows, columns = np.nonzero(y[i] > 0.5)
        grid = np.zeros((4, 3))
        grid[rows, columns] = y[i][rows, columns] * 10
        grid[rows % 2] = [1.5, 2.5, 3.5]  # duplicate positions: the last write wins
        grids[i] = grid
    return labels, counts, grids


def test_writes_at_positions_are_one_loop_node():
    rng = np.random.default_rng(6)
    args = (rng.random((25, 12)), rng.random((25, 4, 3)), 0.6)
    _same(kiln.compile(labelled)(*args), labelled(*args))
    report = kiln.explain(labelled)(*args)
    assert [loop.kind for loop in report.loops] == ["loop"] and not report.break_reasons


def test_a_write_past_the_array_raises_numpys_index_error():
    def shifted(x, positions):
        y = np.zeros(6)
        for i in range(x.shape[0]):
            chosen = positions[i][x[i] > 0.5]
            y[chosen - 3] = i
        return y
    rng = np.random.default_rng(7)
    x, positions = rng.random((10, 6)), rng.integers(0, 9, (10, 6))
    np.testing.assert_array_equal(kiln.compile(shifted)(x, positions), shifted(x, positions))
    positions[6, :] = 9  # 9 - 3 is past y, wherever row 6 selects
    x[6, 0] = 0.9
    numpy_message, kiln_message = _errors(shifted, x, positions)
    assert numpy_message == "index 6 is out of bounds for axis 0 with size 6"
    assert numpy_message in kiln_message
