"""NumPy's sorts and median in the tracer (kiln/_numpy_sorting.py: kiln's sort ops, an extern
sort kernel), beyond the conformance samples: one graph with no break, in-place ndarray.sort of
arguments and intermediates, long rows (the kernel's radix passes) and many rows (its parallel
loop) of every real dtype against NumPy, NaN and -0.0 order, ties under the default kind,
partitions, NumPy's errors, and what still runs eagerly (complex values, order=)."""
import numpy as np
import pytest

import kiln

AxisError = getattr(np, "exceptions", np).AxisError  # numpy.exceptions: NumPy >= 1.25
RNG = np.random.default_rng(21)


def compiled(function):
    return kiln.compile(function, fullgraph=True)


def _values(dtype, shape):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.dtype(dtype).kind == "f":
        x = RNG.uniform(-50, 50, shape).astype(dtype)
        x[RNG.random(shape) < 0.05] = np.nan
        x[RNG.random(shape) < 0.05] = -0.0
        x[RNG.random(shape) < 0.02] = -np.inf
        return x
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), shape,
                        endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", "int32", "int16",
                                   "int8", "uint8", "uint16", "uint32", "uint64", "bool"])
def test_long_and_many_rows_match_numpy(dtype):
    def sorts(long, many):
        return (np.sort(long), np.argsort(long, kind="stable"), np.sort(many, axis=0),
                np.argsort(many, axis=1, kind="stable"), np.sort(many[:, ::-3], axis=None))
    long, many = _values(dtype, 20_000), _values(dtype, (3000, 9))
    for got, want in zip(compiled(sorts)(long, many), sorts(long, many)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_nan_and_signed_zeros_keep_numpys_order():
    x = np.array([0.0, np.nan, -0.0, -np.inf, np.nan, 1.0, -0.0, np.inf])
    got = compiled(lambda x: (np.sort(x), np.argsort(x, kind="stable"), np.argsort(x)))(x)
    want = np.sort(x)
    np.testing.assert_array_equal(got[0], want)
    assert list(np.signbit(got[0][:4])) == [True, False, True, True]  # -inf, then 0, -0, -0
    np.testing.assert_array_equal(got[1], np.argsort(x, kind="stable"))
    np.testing.assert_array_equal(got[2], got[1])  # ties by position, whatever the kind


def test_sort_and_argsort_are_one_sort_in_one_graph():
    def f(x):
        order = np.argsort(x, axis=0)
        return np.sort(x, axis=0) * 2, order, np.take_along_axis(x, order, axis=0)
    x = RNG.standard_normal((50, 4))
    report = kiln.explain(f)(x)
    assert report.graph_break_count == 0
    assert report.graphs[0].graph_text.count("argsort(") == 1
    got = compiled(f)(x)
    for value, reference in zip(got, f(x)):
        np.testing.assert_array_equal(value, reference)


def test_ends_of_long_sorts_are_top_k_selections():
    # passes/sort_ends.cpp: a sort read only at one end of its rows selects that end (the last
    # k through the row flipped, sorted the other way; read backwards too, [::-1][:k]); ties,
    # NaN and -0.0 keep a full stable sort's order, bit for bit
    def f(x, y):
        return (x[np.argsort(x, kind="stable")[-5:]], np.argsort(x, kind="stable")[-5:],
                np.sort(x)[:7], np.argpartition(-x, 4)[:4], np.sort(y, axis=1)[:, -3:],
                np.argsort(y, axis=0, kind="stable")[-4:], np.argsort(x, kind="stable")[::-1][:6],
                np.sort(y, axis=1)[:, ::-1][:, :2])
    x = np.round(RNG.uniform(-20, 20, 20_000))  # many ties
    x[RNG.random(x.shape) < 0.01] = np.nan
    x[RNG.random(x.shape) < 0.01] = -0.0
    x[:9] = 20.0
    y = np.round(RNG.uniform(-5, 5, (200, 400)))
    y[RNG.random(y.shape) < 0.05] = -0.0
    y[RNG.random(y.shape) < 0.05] = np.nan
    text = kiln.explain(f)(x, y).graphs[0].graph_text
    sorts = [line for line in text.splitlines() if "sort(" in line]
    assert sorts and not any("20000,)" in line or "(200, 400)" in line for line in sorts), sorts
    got, want = compiled(f)(x, y), f(x, y)
    for k, (value, reference) in enumerate(zip(got, want)):
        if k == 3:  # argpartition: NumPy leaves the order of ties (x's maxima) to its kind
            value, reference = np.sort(value), np.flatnonzero(x == 20.0)[:4]
        np.testing.assert_array_equal(value, reference)
        assert np.array_equal(np.signbit(value), np.signbit(reference)), k


def test_ndarray_sort_updates_arguments_and_intermediates_in_place():
    def f(a, b):
        a.sort(axis=0)
        c = b[::2] * 3
        c.sort()
        a[1:].sort(kind="stable")  # through a view: written back into a
        return c, a.argsort(axis=1)
    a, b = RNG.standard_normal((6, 5)), RNG.integers(-9, 9, (8, 7)).astype(np.int16)
    a_want = a.copy()
    want = f(a_want, b.copy())
    got = compiled(f)(a, b)
    np.testing.assert_array_equal(a, a_want)
    for value, reference in zip(got, want):
        np.testing.assert_array_equal(value, reference)


def test_partitions_put_the_kth_elements_in_place():
    x = RNG.standard_normal((5, 40))
    x[0, :3] = np.nan

    def f(x):
        return (np.partition(x, 7), np.argpartition(x, (2, 30), axis=1),
                np.partition(x, -1, axis=0), x.copy())
    part, order, column, _ = compiled(f)(x)
    for row, source in zip(part, x):  # kth in place, the sides each side of it
        assert np.array_equal(row[7], np.sort(source)[7], equal_nan=True)
        assert np.all(row[:7] <= row[7]) and not np.any(row[8:] < row[7])
    picked = np.take_along_axis(x, order, axis=1)
    for kth in (2, 30):
        np.testing.assert_array_equal(picked[:, kth], np.sort(x, axis=1)[:, kth])
    np.testing.assert_array_equal(column[-1], np.partition(x, -1, axis=0)[-1])


def test_sorting_in_a_captured_loop():
    def f(x):
        for i in range(4):
            x = np.sort(np.abs(x - i), axis=1)[:, ::-1]
        return x
    x = RNG.standard_normal((6, 300))
    assert not any(loop.reason for loop in kiln.explain(f)(x).loops)
    np.testing.assert_array_equal(compiled(f)(x), f(x))


@pytest.mark.parametrize("function, error", [
    (lambda x: np.sort(x, axis=2), AxisError),
    (lambda x: np.sort(x[0, 0]), AxisError),
    (lambda x: np.argsort(x, axis=-3), AxisError),
    (lambda x: np.sort(x, kind="bogus"), ValueError),
    (lambda x: np.partition(x, 4), ValueError),
    (lambda x: np.partition(x, -5), ValueError),
    (lambda x: np.argpartition(x, 1.5), TypeError),
    (lambda x: np.argpartition(x, [[1]]), ValueError),
    (lambda x: np.partition(x, 1, kind="quick"), ValueError),
])
def test_numpys_errors(function, error):
    x = np.zeros((3, 4))
    with pytest.raises(error):
        function(x)
    with pytest.raises(error, match="kiln: "):
        compiled(function)(x)


def test_median_is_one_sort_and_empty_slices_run_eagerly():
    x = RNG.standard_normal((40, 301))
    x[3, 7] = np.nan
    report = kiln.explain(lambda x: np.median(x, axis=1) * 2)(x)
    assert report.graph_break_count == 0
    np.testing.assert_array_equal(compiled(lambda x: np.median(x, axis=1))(x),
                                  np.median(x, axis=1))
    with pytest.warns(RuntimeWarning, match="empty"):
        got = kiln.compile(lambda x: np.median(x[:0], axis=0))(x)
    np.testing.assert_array_equal(got, np.full(301, np.nan))


def test_single_positions_of_long_sorts_are_selections():
    # passes/sort_picks.cpp: a sort read only at a few positions (median's middle and last,
    # quantiles' neighbours, partition(x, k)[k]) selects them (nth_element), no full sort in
    # the graph; the picked elements are a stable sort's, bit for bit (ties by position, the
    # signs of zeros and NaN's payloads as np.sort(kind="stable") orders them)
    def f(x, y):
        return (np.median(x), np.median(y, axis=1), np.percentile(x, [10, 50, 90]),
                np.partition(x, 1000)[1000], np.sort(x)[12345],
                np.argsort(x, kind="stable")[15_000], np.quantile(y, 0.25, axis=0))
    x = np.round(RNG.uniform(-20, 20, 20_001))  # many ties
    x[RNG.random(x.shape) < 0.2] = -0.0
    x[RNG.random(x.shape) < 0.2] = 0.0
    y = RNG.standard_normal((300, 400))
    y[7, 3] = np.nan  # a NaN row and column: NaN
    text = kiln.explain(f)(x, y).graphs[0].graph_text
    sorts = [line for line in text.splitlines() if "sort(" in line]
    assert sorts and not any("20001)" in line or "300, 400)" in line or "400, 300)" in line
                             for line in sorts), sorts
    got, want = compiled(f)(x, y), f(x, y)
    for value, reference in zip(got, want):
        assert value.dtype == reference.dtype and value.shape == reference.shape
        np.testing.assert_array_equal(value, reference)
    stable = np.sort(x, kind="stable")
    for k in (9_999, 10_000, 12_345):  # zeros of both signs at the middle
        picked = compiled(lambda x: np.sort(x)[k])(x)
        assert picked == stable[k] and np.signbit(picked) == np.signbit(stable[k]), k
    nan = x.copy()
    nan[5] = np.nan
    assert np.isnan(compiled(np.median)(nan))


def test_percentiles_of_long_rows_and_numpys_errors():
    x = RNG.standard_normal((30, 1001)).astype(np.float32)
    x[4, 9] = np.nan

    def f(x):
        return (np.percentile(x, [5, 50, 99.9], axis=1), np.quantile(x[5:], 0.37),
                np.quantile(x.astype(np.int64), 0.5, axis=0))
    got, want = compiled(f)(x), f(x)
    for value, reference in zip(got, want):
        assert value.dtype == reference.dtype and value.shape == reference.shape
        np.testing.assert_allclose(value, reference, rtol=1e-6)
    assert kiln.explain(f)(x).graph_break_count == 0
    with pytest.raises(ValueError, match="Percentiles must be in the range"):
        compiled(lambda x: np.percentile(x, 101))(x)
    other = kiln.compile(lambda x: np.quantile(x, 0.3, method="nearest") + 1)
    np.testing.assert_array_equal(other(x), np.quantile(x, 0.3, method="nearest") + 1)
    assert kiln.explain(other)(x).graph_break_count == 1


def test_what_still_runs_eagerly():
    z = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
    records = np.array([(2, 1.0), (1, 2.0), (2, 0.5)], dtype=[("a", "i4"), ("b", "f8")])
    f = kiln.compile(lambda z: np.sort(z) * 2)
    np.testing.assert_array_equal(f(z), np.sort(z) * 2)
    assert kiln.explain(f)(z).graph_break_count == 1
    g = kiln.compile(lambda r: np.sort(r, order="b"))
    np.testing.assert_array_equal(g(records), np.sort(records, order="b"))
