"""Edge cases of kiln/_numpy_math.py beyond the conformance samples: NumPy's errors for bad
arguments, the cases left to NumPy (graph breaks that still give NumPy's result), values that
sit on bin edges and sample points, and realistic functions combining several."""
import re
import warnings

import numpy as np
import pytest

import kiln
from kiln import _numpy_binning as _binning

from conformance import check

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
trapezoid = getattr(np, "trapezoid", None) or np.trapz
cumulative_sum = getattr(np, "cumulative_sum", None)
nan, inf = np.nan, np.inf
X = np.array([[1.0, nan, 3.0, -2.0], [inf, 0.5, -inf, 2.0], [5.0, 6.0, 0.25, 0.5]])
V = np.array([1.0, 2.0, 3.5])
C = np.array([1 + 1j, nan + 1j, inf, 1 - 1j, 2j])
M = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 0.5]])
NORMAL = np.random.default_rng(0).normal(size=400)
DATA = NORMAL.copy()
DATA[::40], DATA[1::51] = nan, inf


def numpy_result(function, arguments):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*[np.copy(a) for a in arguments])


def assert_same(got, expected):
    """The same structure, types, dtypes, shapes and values (NaNs equal)."""
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for value, reference in zip(got, expected):
            assert_same(value, reference)
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, expected)
    else:
        assert got == expected


ERRORS = [
    (lambda x: np.isclose(x, x.T), (X,)), (lambda x: np.allclose(x, x.T), (X,)),
    (lambda z: np.isposinf(z), (C,)), (lambda z: np.fix(z), (C,)),
    (lambda x: np.nan_to_num(x, nan=1j), (X,)),
    (lambda x: np.nan_to_num(x, nan=np.ones(3)), (X,)),
    (lambda v: np.polyval(v[0], 2.0), (V,)),
    (lambda x: np.ediff1d(x > 0), (X,)),
    (lambda x: np.ediff1d(x.astype(int), to_begin=[1.5]), (X,)),
    (lambda x: np.ediff1d(x.astype(np.uint8), to_end=-1), (X,)),
    (lambda x: np.cov(x[None]), (X,)), (lambda x: np.cov(x, ddof=1.5), (X,)),
    (lambda x: np.cov(x, x[None]), (X,)), (lambda x: np.cov(x, dtype=int), (X,)),
    (lambda x: np.corrcoef(x[None]), (X,)),
    (lambda x: np.cross(x, x), (X,)), (lambda x: np.cross(x[0, 0], x[:, :3]), (X,)),
    (lambda x: np.cross(x[:, :3], x[:, 1:], axisa=5), (X,)),
    (lambda x: np.cross(x[:, :3], x[:, 1:], axisc=2), (X,)),
    (lambda x: np.cross(x[:, :3], x[:2, :3]), (X,)),
    (lambda x: np.cross(x[:, :3] > 0, x[:, 1:] > 0), (X,)),
    (lambda x: trapezoid(x, axis=2), (X,)), (lambda x: trapezoid(x[0, 0]), (X,)),
    (lambda x: trapezoid(x, x[:2]), (X,)),
    (lambda x: np.gradient(x > 0), (X,)), (lambda x: np.gradient(x[:1], axis=0), (X,)),
    (lambda x: np.gradient(x, edge_order=3), (X,)),
    (lambda x: np.gradient(x[:, :2], axis=1, edge_order=2), (X,)),
    (lambda x: np.gradient(x, 1, 2, 3), (X,)), (lambda x: np.gradient(x[0], [1, 2]), (X,)),
    (lambda x: np.gradient(x[0], x[:, :1]), (X,)),
    (lambda x: np.gradient(x[:, :1], 1.0, x[0, :1]), (X,)),
    (lambda x: np.gradient(x, axis=(0, -2)), (X,)), (lambda x: np.gradient(x, axis=2), (X,)),
    (lambda x: np.unwrap(x, axis=2), (X,)), (lambda x: np.unwrap(x[0, 0]), (X,)),
    (lambda v: np.convolve(v[:0], v), (V,)), (lambda v: np.convolve(v, v[:0]), (V,)),
    (lambda v: np.convolve(v, v, "middle"), (V,)), (lambda v: np.convolve(v, v, 3), (V,)),
    (lambda v: np.correlate(v, v, None), (V,)), (lambda x: np.convolve(x, x[0]), (X,)),
    (lambda v: np.correlate(v, v[0]), (V,)), (lambda v: np.correlate(v[:0], v), (V,)),
    (lambda v: np.correlate(v, v[:0], "full"), (V,)),
    (lambda v: np.searchsorted(v, 1.5, side="middle"), (V,)),
    (lambda x: np.searchsorted(x, 1.5), (X,)), (lambda z: np.digitize(z, [0, 1]), (C,)),
    (lambda x: np.digitize(x, [0, 2, 1]), (X,)), (lambda x: np.digitize(x, [[0, 1]]), (X,)),
    (lambda x, v: np.interp(x, v[:0], v[:0]), (X, V)),
    (lambda x, v: np.interp(x, v, v[:2]), (X, V)),
    (lambda x, v: np.interp(x, v[None], v[None]), (X, V)),
    (lambda x, v: np.interp(x, v, v, left="low"), (X, V)),
    (lambda x, v: np.interp(x, v[:0], v[:0], left="low"), (X, V)),
    (lambda x, v: np.interp(x, v, v > 0, right=[1, 2]), (X, V)),
    (lambda x, v: np.interp(x, [0, 1], v[:2], period=0), (X, V)),
    (lambda x, v: np.interp(x, [[0, 1]], v[:2], period=3), (X, V)),
    (lambda x, v: np.interp(x, [0, 1, 2], v[:2], period=3), (X, V)),
    (lambda x: np.histogram(x, 0, range=(0, 1)), (X,)),
    (lambda x: np.histogram(x, 2.5, range=(0, 1)), (X,)),
    (lambda x: np.histogram(x, 2, range=(1, 0)), (X,)),
    (lambda x: np.histogram(x, 2, range=(0, inf)), (X,)),
    (lambda x: np.histogram(x, 2, range=(0, 1, 2)), (X,)),
    (lambda x: np.histogram(x, 2, range=(0, 1), weights=x[0]), (X,)),
    (lambda x: np.histogram(x.astype(np.int32), -1), (X,)),
    (lambda x: np.histogram(x.astype(np.int32), 1e30), (X,)),
]
if cumulative_sum is not None:
    ERRORS += [(lambda x: cumulative_sum(x), (X,)), (lambda x: cumulative_sum(x, axis=2), (X,)),
               (lambda x: np.cumulative_prod(x, axis=(0, 1)), (X,)),
               (lambda x: cumulative_sum(x, axis=1.0), (X,)),
               (lambda x: cumulative_sum(x, axis=(1,), include_initial=True), (X,))]


@pytest.mark.parametrize("function, arguments", ERRORS)
def test_errors_are_numpys(function, arguments):
    with np.errstate(all="ignore"), warnings.catch_warnings(), \
            pytest.raises(Exception) as expected:
        warnings.simplefilter("ignore")
        function(*[a.copy() for a in arguments])
    with np.errstate(all="ignore"), warnings.catch_warnings(), pytest.raises(expected.type):
        warnings.simplefilter("ignore")
        kiln.compile(function, fullgraph=True)(*arguments)


# What kiln leaves to NumPy (a graph break): without fullgraph, still NumPy's result or error.
EAGER = [
    (lambda x, y: np.allclose(x, y), (V, V + 1e-9)),
    (lambda x, y: (np.allclose(x, y, equal_nan=True), np.allclose(x, y, rtol=0)), (X, X + 1e-9)),
    (lambda x, y: (np.array_equal(x, y), np.array_equal(x, y, equal_nan=True),
                   np.array_equal(x, x, equal_nan=True), np.array_equal(x, [[1, 2]])), (X, X)),
    (lambda x, y: np.array_equal(x, y), (V, V.astype(np.int8))),
    (lambda v: np.polyval(v, np.poly1d([1, 2])), (V,)),
    (lambda z: (np.cov(z), np.corrcoef(z), np.cov(z.real, z.imag)), (np.stack([C, C * 2j]),)),
    (lambda m: np.cov(m, fweights=[1, 2, 1], aweights=[0.5, 1, 1]), (M,)),
    (lambda m: np.cov(m, fweights=[1, -2, 1]), (M,)),
    (lambda a, b: (np.convolve(a, b), np.correlate(a, b, "same"), np.correlate(b, a, "full")),
     (NORMAL[:100], NORMAL[100:170])),
    (lambda z, v: (np.convolve(z, v), np.correlate(z, v), np.correlate(v, z, "full")), (C, V)),
    (lambda a, v: (np.searchsorted(a, v), np.digitize(v, a), np.interp(v, a, a ** 2)),
     (np.arange(300.0), np.array([1.5, 299.5, -3.0, nan]))),
    (lambda z, v: np.searchsorted(z, v), (np.sort(C[[0, 3, 4]]), V)),
    (lambda a, v, s: np.searchsorted(a, v, sorter=s), (V[::-1], V, np.array([2, 1, 0]))),
    (lambda a, v: np.searchsorted(a, v, sorter=[0, 1, 5]), (V, V)),
    (lambda x, v: (np.interp(x, v, v * 1j), np.interp(x, v, v, period=2.5)), (X, V)),
    (lambda z, v: np.interp(z, v, v), (C, V)),
    (lambda x: (np.histogram(x, [0, 1, 2.5]), np.histogram(x, "auto", range=(0, 1)),
                np.histogram(x, 3, (0, 1), weights=x * 1j)), (DATA,)),
    (lambda x, b, r: np.histogram(x, b, range=(r[0], r[1])), (DATA, np.array(4), V)),
    (lambda x: np.histogram(x.astype(np.float16)), (NORMAL,)),
    (lambda x: np.histogram_bin_edges(x, "fd"), (NORMAL,)),
]
if cumulative_sum is not None:
    EAGER.append((lambda v: cumulative_sum(v, out=np.zeros(3)), (V,)))
if not NUMPY2:  # NumPy 1.x makes complex infinities NaN in isclose
    EAGER.append((lambda z, w: np.isclose(z, w), (C, C)))


@pytest.mark.parametrize("function, arguments", EAGER)
def test_eager_cases_give_numpys_result(function, arguments):
    try:
        expected = numpy_result(function, arguments)
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error)):
            kiln.compile(function)(*arguments)
    else:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(kiln.compile(function)(*arguments), expected)
    with pytest.raises(kiln.GraphBreak):
        kiln.compile(function, fullgraph=True)(*arguments)


def test_histogram_edges_and_corrections():
    """Values on bin edges land where NumPy's index correction puts them: floats of both
    widths with a range (float32 data, a float64 range), and integer data whose edges come
    from its traced minimum and maximum (rounded as NumPy's linspace, without an fma)."""
    grid = np.linspace(0, 1, 101)
    rng = np.random.default_rng(1)

    def histograms(grid, grid32, ints, extremes, small):
        return (*np.histogram(grid, 10, range=(0, 1)), *np.histogram(grid32, 10, (0, 1)),
                *np.histogram(grid32, 7, range=(np.float64(0.1), 0.9)),
                *np.histogram(grid, 3, (0.25, 0.75), weights=grid, density=True),
                *np.histogram(ints), *np.histogram(ints, 17), *np.histogram(ints, 200),
                *np.histogram(ints % 7, 7), *np.histogram(extremes, 9),
                *np.histogram(small), *np.histogram(small * 0 + 3, 4))
    check(histograms, [(grid, grid.astype(np.float32),
                        rng.integers(-100, 100, 1000).astype(np.int32),
                        np.array([-2**31, 2**31 - 1, 5, 0], np.int32),
                        np.array([-3, 5, 4, 2, 1, 0, 1], np.int8))])


def test_histogram_index_is_int32_where_the_bins_fit():
    """Each value's bin number is computed in int32 (AVX2 converts float64 to and from int32 a
    vector at a time, not int64: an intp index left the loop scalar), the same counts as
    NumPy's, values on the edges and outside a range included."""
    def f(x):
        return np.histogram(x, 64, range=(-1, 1))[0], np.histogram(x, 1000, range=(-0.5, 0.75))[0]

    def data_range(x):  # eager on NumPy 1.x, whose edges of the data's range may collide
        return np.histogram(x, bins=64)[0]
    x = np.concatenate([np.linspace(-1, 1, 64 * 1000 + 1), np.random.default_rng(5).random(9999)])
    text = kiln.explain(f)(x).graphs[0].graph_text
    assert any("= cast(" in line and ": int32(74000,)" in line for line in text.splitlines())
    for got, want in zip(kiln.compile(f, fullgraph=True)(x) + (kiln.compile(data_range)(x),),
                         f(x) + (data_range(x),)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_histogram_of_the_datas_range():
    """Without range=, the edges come from the data's traced minimum and maximum, for floats
    of both widths and 64-bit integers too (once graph breaks), with weights and density, data
    all equal, empty or on the edges (a block of scatter-adds and the rest, on both threads);
    np.histogram_bin_edges alike."""
    rng = np.random.default_rng(3)
    grid = np.linspace(-1, 1, 70_001)  # values on the edges of 8, 10 and 64 bins

    def histograms(x, x32, w, ints, unsigned, one):
        return (*np.histogram(x, 64), *np.histogram(x32, 7, weights=w, density=True),
                *np.histogram(x, 10, weights=w.astype(np.float64)), *np.histogram(x32[::-3], 8),
                *np.histogram(ints), *np.histogram(unsigned, 9), *np.histogram(one, 3),
                *np.histogram(x * 0 + 2.5, 4), *np.histogram(x32[:0], 3),
                *np.histogram(x32[:1], 2),
                np.histogram_bin_edges(x32, 6), np.histogram_bin_edges(ints, 3, (0, 1)),
                np.histogram_bin_edges(unsigned[:0]))
    ints = rng.integers(-2**62, 2**62, 1000)
    # NumPy 1.24's own bin index of one huge integer is out of bounds (an IndexError)
    one = ints[:1] if _binning._CHECKS_EDGES else ints[:1] // 2**40
    sample = (grid, rng.normal(size=70_001).astype(np.float32),
              rng.uniform(0, 2, 70_001).astype(np.float32), ints,
              np.array([0, 2**64 - 1, 2**63, 5], np.uint64), one)
    if not _binning._CHECKS_EDGES:  # NumPy 1.24: np.histogram runs as NumPy (graph breaks)
        with np.errstate(all="ignore"):
            for got, expected in zip(kiln.compile(histograms)(*sample), histograms(*sample)):
                np.testing.assert_array_equal(got, expected)
        return
    check(histograms, [sample])
    check(lambda x, i: (*np.histogram(x, 7), np.histogram_bin_edges(x, 2),
                        *np.histogram(i, 300_000)),  # 32-bit data: as many bins as NumPy's
          [((DATA * 100).astype(np.int64), (NORMAL * 100).astype(np.int32))])


# The data's own errors, raised by a runtime check as NumPy raises them: NaN or an infinity
# among the data, bins too many for the range (64-bit integers, floats close together), a range
# wider than the largest float.
HISTOGRAM_DATA_ERRORS = [
    (lambda x: np.histogram(x), np.array([1.0, nan, 2.0])),
    (lambda x: np.histogram(x, 7), DATA),
    (lambda x: np.histogram(x, 3, weights=x, density=True), np.array([0.5, inf, -2.0])),
    (lambda x: np.histogram(x, 5), np.array([-inf, 0.1], np.float32)),
    (lambda x: np.histogram_bin_edges(x, 4), np.array([1e20, inf, 1e-5])),
    (lambda x: np.histogram(x, 10), np.array([2**60, 2**60 + 10, 2**60 + 3])),
    (lambda x: np.histogram(x, 4), np.full(3, 1e300)),  # equal: the 0.5 either side is lost
    (lambda x: np.histogram(x, 3), np.array([1.0, 1.0 + 2**-52, 1.0])),
    (lambda x: np.histogram(x, 3), np.array([1.0, 1.0000001, 1.0], np.float32)),
    # last - first overflows: NumPy's bin index of the last value is out of bounds (IndexError)
    (lambda x: np.histogram(x, 1), np.array([-1e308, 0.0, 1e308])),
    (lambda x: (np.histogram_bin_edges(x, 1), np.histogram(x, 2)),
     np.array([-1e308, 0.0, 1e308])),
]


@pytest.mark.parametrize("function, data", HISTOGRAM_DATA_ERRORS)
def test_histogram_errors_of_the_data_are_numpys(function, data):
    try:
        with np.errstate(all="ignore"):
            expected = function(data)
    except (ValueError, IndexError) as error:
        expected = error
    # On a NumPy that does not check its edges (1.24) it runs as NumPy: no full graph.
    compiled = kiln.compile(function, fullgraph=_binning._CHECKS_EDGES)
    if not isinstance(expected, Exception):  # NumPy 1.24: edges that collide, no error
        assert not _binning._CHECKS_EDGES
        with np.errstate(all="ignore"):
            assert_same(compiled(data), expected)
        return
    with pytest.raises(type(expected), match=re.escape(str(expected))), np.errstate(all="ignore"):
        compiled(data)
    good = np.linspace(0, 10**6, data.size).astype(data.dtype)  # the same graph, no error
    assert_same(compiled(good), numpy_result(function, [good]))


def test_check_flag_refuses_what_is_not_a_check():
    trace = kiln._kiln.Trace()
    flag, values = trace.input("bool", []), trace.input("float64", [2])
    kiln._kiln.check_flag(flag, values, "range [", "]", "op")
    for bad_flag, bad_values in [(values, values), (flag, trace.input("float64", [2, 2]))]:
        with pytest.raises(ValueError, match="a check takes a bool 0-d flag"):
            kiln._kiln.check_flag(bad_flag, bad_values, "", "", "op")
    with pytest.raises(ValueError, match="unknown error 'KeyError'"):
        kiln._kiln.check_flag(flag, values, "", "", "op", error="KeyError")


def test_histogram_checks_inside_a_loop():
    """A check recorded in a captured loop's body (its values carried as the loop runs)."""
    def histograms(x):
        total = np.zeros(5)
        for i in range(x.shape[0]):
            total = total + np.histogram(x[i], 5)[0]
        return total
    compiled = kiln.compile(histograms, fullgraph=_binning._CHECKS_EDGES)  # (NumPy 1.24: eager)
    x = NORMAL.reshape(4, 100).copy()
    np.testing.assert_array_equal(compiled(x), histograms(x))
    x[2, 7] = -inf
    with pytest.raises(ValueError, match=re.escape("autodetected range of [-inf, ")):
        compiled(x)


def test_histogram_of_integers_with_a_range_and_many_values():
    rng = np.random.default_rng(2)
    big = rng.normal(size=150_000)
    check(lambda x, i, u: (*np.histogram(x, 10, range=(-2, 2), weights=x),
                           *np.histogram(i, 9, range=(-50, 50)),
                           *np.histogram(u, 9, range=(0, 2**63))),
          [(big, rng.integers(-100, 100, 1000), np.array([0, 2**64 - 1, 2**63, 5], np.uint64))])


def test_bincount_of_values_known_below_minlength():
    """np.bincount's length is max(x) + 1 or minlength: where x is known to be below minlength
    (argmin's positions, digitize's bin numbers, uint8 or bool data) it is one scatter-add in
    the graph (k-means' cluster sizes, an image's histogram); it was a graph break."""
    rng = np.random.default_rng(3)

    def counts(X, C, ages, w, image):
        labels = ((X[:, None] - C[None]) ** 2).sum(-1).argmin(1)
        groups = np.digitize(ages, [0, 18, 35, 65])
        return (np.bincount(labels, minlength=4), np.bincount(labels, X[:, 0], minlength=5),
                np.bincount(groups, weights=w, minlength=5),
                np.bincount(groups.astype(np.int16), minlength=6),
                np.bincount(image.ravel(), minlength=256), np.bincount(image.ravel() > 9, minlength=2))
    check(counts, [(rng.random((60, 2)), rng.random((4, 2)), rng.random(30) * 100,
                    rng.random(30).astype(np.float32), rng.integers(0, 20, (6, 6), np.uint8))])


def test_bincount_of_unknown_values_is_numpys():
    x = np.array([3, 0, 3, 7])
    def updated(x):
        labels = x.argmin(keepdims=True)
        labels[0] = 7          # no longer below the argmin's bound
        return np.bincount(labels, minlength=4)
    for function in (updated, lambda x: np.bincount(x), lambda x: np.bincount(x, minlength=4),
                     lambda x: np.bincount(x.astype(np.uint8), minlength=200),
                     lambda x: np.bincount(x - 1), lambda x: np.bincount(x * 0.5)):
        try:
            expected = function(x)
        except (TypeError, ValueError) as error:
            with pytest.raises(type(error)):
                kiln.compile(function)(x)
            continue
        np.testing.assert_array_equal(kiln.compile(function)(x), expected)
        with pytest.raises(kiln.GraphBreak):
            kiln.compile(function, fullgraph=True)(x)


def test_interp_at_sample_points_and_infinities():
    xp, fp = np.array([0.0, 1, 1, 2, 4]), np.array([0.0, 1, 2, 3, inf])
    x = np.array([-1, 0, 0.5, 1, 1.5, 2, 3, 4, 5, nan, inf, -inf])
    check(lambda x, xp, fp: (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-1, right=nan),
                             np.interp(x, xp[:1], fp[:1]), np.interp(x, xp[:2], fp[:2], 7, 8),
                             np.interp(x, xp[:4], [inf, inf, -inf, 1.0]),
                             np.interp(x, xp, fp, left=fp[1], right=fp[0]),
                             np.interp(x[1], xp, fp), np.interp(2.5, xp, fp),
                             np.interp(x, [3, 1, 2.5, 7], fp[:4], period=np.float32(3))),
          [(x, xp, fp)])


def test_searches_put_nan_last():
    a = np.array([-inf, 1, 2, 2, inf, nan, nan])
    v = np.array([nan, inf, -inf, 1, 2, 3])
    check(lambda a, v, u: (np.searchsorted(a, v), np.searchsorted(a, v, "right"),
                           np.digitize(v, [-inf, 1, 2, 2, inf]),
                           np.digitize(v, [inf, 2, 2, 1, -inf], right=True),
                           np.searchsorted(u, -1), np.searchsorted(u, 300),
                           np.searchsorted(u, [2.5, 2, -0.5], side="right")),
          [(a, v, np.array([0, 2, 2, 250], np.uint8))])


BINS = [np.array(b) for b in (
    [1.0, 2, 3], [3.0, 2, 1], [1.0, 1, 1], [1.0, 1, 2, 2, 3], [3.0, 3, 1], [2.0], [2.0, 1, 3],
    [1.0, 1, 3, 2], [5.0, 5, 1, 1], [-inf, 0, inf], [1.0, 1, 3, inf], [0, 5, 9], [9, 5, 5, 0],
    [nan, 1, 2], [1.0, nan, 2], [1.0, 2, nan], [nan, nan], [3.0, 1, nan])]


@pytest.mark.parametrize("bins", BINS, ids=[str(b.tolist()) for b in BINS])
def test_digitize_of_traced_bins_finds_their_direction_when_the_graph_runs(bins):
    """Bins of the trace (an argument, np.linspace of the data's range) were a graph break:
    NumPy's check of their direction (repeats of the first edge skipped, the first unlike
    edge choosing, NaN unlike everything) runs in the graph, its error raised there; NaN
    among them, where NumPy's binary search decides, reruns the call as NumPy."""
    x = np.array([-1.0, 0, 0.5, 1, 1.5, 2, 2.5, 3, 4, 9, 10, nan, inf, -inf])

    def binned(x, bins):
        return np.digitize(x, bins), np.digitize(x, bins, right=True)
    compiled = kiln.compile(binned, fullgraph=True)
    try:
        expected = binned(x, bins)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            compiled(x, bins)
        return
    assert_same(compiled(x, bins), expected)


def test_digitize_of_bins_from_the_datas_range():
    def levels(x, count):
        bins = np.linspace(x.min(), x.max(), count)
        return np.digitize(x, bins), np.digitize(x, bins[::-1], right=True)
    x = NORMAL
    assert_same(kiln.compile(levels, fullgraph=True)(x, 12), levels(x, 12))


def test_nan_to_num_in_place_writes_the_input():
    def replace(x):
        np.nan_to_num(x[1], copy=False, posinf=7)
        return x
    check(replace, [(X.copy(),)])
    x = X.copy()
    kiln.compile(replace, fullgraph=True)(x)
    np.testing.assert_array_equal(x[1], [7.0, 0.5, np.finfo(float).min, 2.0])


def test_gradient_of_traced_spacings_picks_numpys_formula():
    """NumPy treats equal distances as one scalar spacing (other formulas, other rounding):
    with traced coordinates both are computed, the one NumPy takes is chosen at run time."""
    f = np.arange(6.0) ** 3
    function = kiln.compile(lambda f, s: (np.gradient(f, s), np.gradient(f, s, edge_order=2)),
                            fullgraph=True)
    for spacing in (np.arange(6) * 0.1, np.array([0.0, 1, 1.5, 3.5, 4, 6])):
        assert_same(function(f, spacing), numpy_result(
            lambda f, s: (np.gradient(f, s), np.gradient(f, s, edge_order=2)), (f, spacing)))


def test_signal_analysis():
    """Clean a sensor signal, smooth it, differentiate, resample, integrate, bin and compare
    with a reference: one graph."""
    rng = np.random.default_rng(4)
    times = np.sort(rng.uniform(0, 1, 60))
    signal = np.sin(6 * times) + rng.normal(0, 0.05, 60)
    signal[[5, 17, 40]] = [nan, inf, -inf]

    def analyse(signal, times, reference):
        clean = np.nan_to_num(signal, nan=0.0, posinf=1.0, neginf=-1.0)
        smooth = np.convolve(clean, np.full(5, 0.2), mode="same")
        velocity = np.gradient(smooth, times)
        resampled = np.interp(np.linspace(0.0, 1.0, 40), times, smooth)
        counts, edges = np.histogram(velocity, bins=8, range=(-20, 20))
        return (resampled, trapezoid(smooth, times), counts, edges,
                np.digitize(smooth, [-0.5, 0.0, 0.5]), np.isclose(resampled, reference, atol=0.1),
                np.unwrap(np.arctan2(velocity, smooth)), np.ediff1d(smooth, to_begin=0.0),
                np.fix(velocity), np.searchsorted(times, [0.25, 0.5, 0.75]))
    check(analyse, [(signal, times, np.sin(6 * np.linspace(0, 1, 40)))])


def test_rigid_body_statistics():
    """Angular momentum of point masses about their centre, their spread and correlations."""
    rng = np.random.default_rng(5)

    def motion(points, velocities, masses):
        arms = points - np.average(points, axis=0, weights=masses)
        momentum = np.sum(masses[:, None] * np.cross(arms, velocities), axis=0)
        spread, correlation = np.cov(points, rowvar=False), np.corrcoef(points.T)
        distances = np.linalg.norm(arms, axis=1)
        return (momentum, spread, correlation, np.polyval([1.0, -2.0, 0.5], distances),
                np.asarray(np.allclose(np.eye(3), np.eye(3))),
                np.cov(points[:, 0], velocities[:, 0]))
    check(motion, [(rng.normal(size=(20, 3)), rng.normal(size=(20, 3)),
                    rng.uniform(1, 2, 20))])
