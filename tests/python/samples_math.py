"""Conformance samples for kiln/_numpy_math.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import DTYPES, sample_array
from kiln._numpy_binning import _CHECKS_EDGES

NUMBERS = [d for d in DTYPES if d != "bool"]   # NumPy refuses bool for subtractions


def special(rng, dtype, shape):
    """A sample holding NaN, inf and -inf (floats), shuffled among ordinary values."""
    x = sample_array(rng, dtype, shape)
    if x.dtype.kind == "f" and x.size >= 3:
        flat = x.reshape(-1)
        flat[:3] = [np.nan, np.inf, -np.inf]
        rng.shuffle(flat)
    return x


def varied(function):
    """function(x) on each dtype: (3, 4), 0-d, empty and a strided view."""
    def samples(rng):
        return [(lambda x, view=shape == (6, 4): function(x[::2] if view else x),
                 (special(rng, dtype, shape),))
                for dtype in DTYPES for shape in ((3, 4), (), (0, 3), (6, 4))]
    return samples


def closeness(rng):
    cases = []
    for dtype in DTYPES:
        x, y = special(rng, dtype, (3, 4)), special(rng, dtype, (3, 4))
        y[1] = x[1]
        cases += [
            (lambda x, y: (np.isclose(x, y), np.isclose(x, y, equal_nan=True),
                           np.isclose(x, y[0], rtol=0.5, atol=1), np.isclose(x[::2], 1.0),
                           np.isclose(2, x), np.isclose(x[0, 0], y[0, 0]),
                           np.isclose(x, y.astype(np.float32), 0, 1e-3)), (x, y)),
            (lambda x: np.isclose(x, x[:, :1]), (sample_array(rng, dtype, (0, 3)),)),
        ]
    return cases


def static_comparison(function, variants, traced=lambda x: ()):
    """Comparisons of arrays built from static arguments: their truth value is known while
    tracing (no graph break); and `traced` ones that need no data."""
    def samples(rng):
        return [(lambda x, d=dtype: (x, *[np.asarray(function(*(f(d) for f in pair), **kw))
                                          for pair, kw in variants],
                                     *map(np.asarray, traced(x))),
                 (sample_array(rng, dtype, (3, 4)),)) for dtype in DTYPES]
    return samples


STATIC_PAIRS = [
    ((lambda d: np.ones(3, d), lambda d: np.full(3, 1, d)), {}),
    ((lambda d: np.zeros((2, 2), d), lambda d: np.eye(2, dtype=d)), {}),
    ((lambda d: np.full(2, np.nan), lambda d: np.full(2, np.nan)), {"equal_nan": True}),
    ((lambda d: np.full(2, np.nan), lambda d: np.full(2, np.nan)), {}),
]


def replacing_nans(rng):
    cases = []
    for dtype in DTYPES:
        shapes = [special(rng, dtype, s) for s in ((3, 4), (), (0, 3), (6, 4))]
        cases += [
            (lambda x: (np.nan_to_num(x), np.nan_to_num(x, nan=-1.5, posinf=9, neginf=-9),
                        np.nan_to_num(x, posinf=1e300), np.nan_to_num(x.copy(), copy=False),
                        np.nan_to_num(x, nan=x[0, 0])), (shapes[0],)),
            (lambda x: (np.nan_to_num(x), np.nan_to_num(x, nan=1)), (shapes[1],)),
            (lambda x: np.nan_to_num(x, neginf=0), (shapes[2],)),
            (lambda x: np.nan_to_num(x[::2], nan=np.float32(7)), (shapes[3],)),
        ]
    return cases


def infinities(function):
    def samples(rng):
        return [(lambda x: (function(x), function(x[::2]), function(x[0, 0]), function(x[:0]),
                            function(x, out=np.zeros(x.shape, bool))),
                 (special(rng, dtype, (4, 4)),)) for dtype in DTYPES]
    return samples


def polynomials(rng):
    cases = []
    for dtype in DTYPES:
        x, p = sample_array(rng, dtype, (3, 4)), sample_array(rng, dtype, (4,))
        cases += [(lambda x, p: (np.polyval(p, x), np.polyval([1.5, -2, 3], x),
                                 np.polyval(p, x[0, 0]), np.polyval(p[:1], x[::2]),
                                 np.polyval([3, 1], x), np.polyval(p, 2)), (x, p)),
                  (lambda x, p: np.polyval(p, x), (sample_array(rng, dtype, (0, 3)), p))]
    return cases


def edge_differences(rng):
    cases = []
    for dtype in NUMBERS:
        x = sample_array(rng, dtype, (3, 4))
        cases += [(lambda x: (np.ediff1d(x), np.ediff1d(x[::2], to_begin=x[0, :2]),
                              np.ediff1d(x, to_end=x[1], to_begin=x[0, 0]),
                              np.ediff1d(x[0, 0], to_end=x[:2]), np.ediff1d(x[:0], x[0])),
                   (x,))]
        if dtype != "uint8":  # (NumPy refuses Python ints, int64, for unsigned arrays)
            cases += [(lambda x: (np.ediff1d(x, to_begin=[1, 2]), np.ediff1d(x, 0, to_begin=-1)),
                       (x,))]
    return cases


def covariances(function):
    def samples(rng):
        cases = []
        for dtype in DTYPES:
            x, y = sample_array(rng, dtype, (3, 5)), sample_array(rng, dtype, (3, 5))
            cases += [
                (lambda x, y: (function(x), function(x, rowvar=False), function(x[0], x[1]),
                               function(x, y), function(x[:1], rowvar=False),
                               function(x[::2], y[::2], rowvar=False),
                               function(x, dtype=np.float32)), (x, y)),
                (lambda x: function(x), (sample_array(rng, dtype, (0, 3)),)),
            ]
            if function is np.cov:
                cases.append((lambda x, y: (np.cov(x, bias=True), np.cov(x, ddof=2),
                                            np.cov(x, y[:1], bias=1, ddof=0), np.cov(x[0, 0])),
                              (x, y)))
        return cases
    return samples


def cross_products(rng):
    cases = []
    for dtype in NUMBERS:
        a, b = sample_array(rng, dtype, (4, 3)), sample_array(rng, dtype, (4, 3))
        cases += [(lambda a, b: (np.cross(a, b), np.cross(a[0], b), np.cross(a[:, :2], b),
                                 np.cross(a, b[:, :2]), np.cross(a[:, :2], b[:, 1:]),
                                 np.cross(a[0, :2], b[1, :2]), np.cross(a.T, b.T, axis=0),
                                 np.cross(a.T, b, axisa=0, axisc=0),
                                 np.cross(a[:3], b.T[:, :3], axisb=0, axisc=-2),
                                 np.cross(a[::2], b[1::2]), np.cross(a[:0], b[0])), (a, b))]
    return cases


def integrals(function):
    def samples(rng):
        cases = []
        for dtype in DTYPES:
            y = sample_array(rng, dtype, (3, 4))
            x = np.sort(rng.uniform(0, 4, (3, 4)), axis=1)
            cases += [
                (lambda y, x: (function(y), function(y, dx=0.5), function(y, axis=0),
                               function(y, x[0]), function(y, x), function(y, x, axis=0),
                               function(y[::2, ::-1]), function(y[0], dx=np.float32(2))),
                 (y, x)),
                (lambda y: function(y), (sample_array(rng, dtype, (0, 3)),)),
            ]
        return cases
    return samples


def cumulative(function):
    def samples(rng):
        cases = []
        for dtype in DTYPES:
            x = sample_array(rng, dtype, (3, 4))
            cases += [(lambda x: (function(x[0]), function(x, axis=(1,)), function(x, axis=0),
                                  function(x, axis=-1, include_initial=True),
                                  function(x[0, 0]), function(x[::2], axis=0, dtype=np.float32),
                                  function(x[:0], axis=1, include_initial=True)), (x,))]
        return cases
    return samples


def gradients(rng):
    cases = []
    for dtype in NUMBERS:
        f = sample_array(rng, dtype, (5, 6))
        spacing = np.cumsum(rng.uniform(0.5, 2, 6))
        cases += [
            (lambda f, s: (*np.gradient(f), *np.gradient(f, 2.0), *np.gradient(f, 0.5, s),
                           np.gradient(f, axis=1, edge_order=2),
                           np.gradient(f, s, axis=-1, edge_order=2),
                           np.gradient(f[0], np.arange(6)), np.gradient(f[0], s * 0 + 1.0),
                           *np.gradient(f[::2, ::3], axis=(1, 0)), np.gradient(f[:0], axis=1),
                           *np.gradient(f[:2], np.float32(3), [1, 2, 4, 7, 8, 9])), (f, spacing)),
        ]
    return cases


def unwrapping(rng):
    cases = []
    for dtype in NUMBERS:
        p = (sample_array(rng, dtype, (3, 8)) * 3).astype(dtype)
        cases += [(lambda p: (np.unwrap(p), np.unwrap(p, axis=0), np.unwrap(p, discont=4),
                              np.unwrap(p, period=4.5), np.unwrap(p[0, ::2], period=np.pi),
                              np.unwrap(p[:0])), (p,))]
        if dtype != "uint8":  # integer periods: -period/2 is no uint8
            cases += [(lambda p: (np.unwrap(p, period=6), np.unwrap(p[0, ::2], period=5)),
                       (p,))]
    return cases


def convolutions(function):
    def samples(rng):
        cases = []
        for dtype in DTYPES:
            a, v = sample_array(rng, dtype, (9,)), sample_array(rng, dtype, (4,))
            cases += [(lambda a, v: (function(a, v), function(a, v, "full"),
                                     function(a, v, mode="same"), function(v, a, "valid"),
                                     function(v, a, "same"), function(v, a, 2),
                                     function(a[::2], v[:1], "full"), function(a[::-1], a[1:])),
                       (a, v))]
            if function is np.convolve:  # (np.correlate takes no 0-d operand)
                cases.append((lambda a, v: (np.convolve(a, v[0]), np.convolve(v[1], a, "same")),
                              (a, v)))
        return cases
    return samples


def searches(rng):
    cases = []
    for dtype in DTYPES:
        a, v = np.sort(special(rng, dtype, (7,))), special(rng, dtype, (3, 4))
        cases += [(lambda a, v: (np.searchsorted(a, v), np.searchsorted(a, v, "right"),
                                 np.searchsorted(a, v[0, 0]), np.searchsorted(a, 1.5),
                                 np.searchsorted(a, [0, 2], side="right"),
                                 np.searchsorted(a[::-1], v, sorter=np.arange(6, -1, -1)),
                                 np.searchsorted(a[:0], v), np.searchsorted(a, v[:0]),
                                 np.searchsorted(a[::2], v.astype(np.float32))), (a, v))]
    return cases


def digitizing(rng):
    cases = []
    for dtype in DTYPES:
        x = special(rng, dtype, (3, 4))
        cases += [(lambda x: (np.digitize(x, [-1, 0, 2.5]), np.digitize(x, [-1, 0, 2.5], True),
                              np.digitize(x, np.array([3, 1, 1, -2])),
                              np.digitize(x, [3, 1, 1, -2], right=True),
                              np.digitize(x[0, 0], [0, 1]), np.digitize(x[::2], [1, 1]),
                              np.digitize(x, [])), (x,))]
    return cases


def bincounts(rng):
    """Values known to be below minlength (the dtype's range, argmax positions, bin numbers):
    the cases kiln traces; the rest runs eagerly (test_numpy_math.py)."""
    cases = []
    for dtype in ("bool", "uint8"):
        x = sample_array(rng, dtype, (12,))
        cases += [(lambda x: (np.bincount(x, minlength=256),
                              np.bincount(x, np.linspace(0, 1, 12), minlength=300),
                              np.bincount(x[:0], minlength=256)), (x,))]
    y = rng.normal(size=(5, 4))
    cases += [(lambda y: (np.bincount(y.argmax(1), minlength=4),
                          np.bincount(np.digitize(y.ravel(), [-1, 0, 1]), weights=y.ravel(),
                                      minlength=4)), (y,))]
    return cases


def interpolations(rng):
    cases = []
    for dtype in DTYPES:
        x = special(rng, dtype, (3, 4))
        xp, fp = np.sort(rng.uniform(-3, 3, 6)), rng.uniform(-1, 1, 6)
        xp[2] = xp[3]
        x[0, :3] = xp[:3].astype(x.dtype)
        cases += [(lambda x, xp, fp: (np.interp(x, xp, fp), np.interp(x, xp, fp, -5, 5),
                                      np.interp(x, xp[:1], fp[:1], right=2),
                                      np.interp(x[0, 0], xp, fp), np.interp(x, [0, 1], fp[:2]),
                                      np.interp(x[::2], xp.astype(np.float32), fp > 0),
                                      np.interp(x, [-2, 0, 1, 3], fp[:4], period=5),
                                      np.interp(x, xp, fp, left=fp[0] * 2),
                                      np.interp(x[:0], xp, fp)), (x, xp, fp))]
    return cases


def histograms(rng):
    cases = []
    for dtype in DTYPES:
        x, w = special(rng, dtype, (3, 5)), rng.uniform(0, 2, (3, 5))
        cases.append((lambda x, w: (*np.histogram(x, 4, range=(-2, 2.5)),
                                    *np.histogram(x, range=(0, 1), density=True),
                                    *np.histogram(x, 3, (-1, 1), weights=w),
                                    *np.histogram(x[::2], 5, (1, 1), weights=w[::2] > 1),
                                    *np.histogram(x, 2, (np.float32(-1), 2), density=True,
                                                  weights=w.astype(np.float32)),
                                    *np.histogram(x[:0], 3), *np.histogram(x, 1, (-3, 3))),
                      (x, w)))
        # The range of the data (with NaN, NumPy's ValueError: test_numpy_math.py); on a NumPy
        # that does not refuse colliding edges (1.24) it runs as NumPy: test_numpy_math.py.
        if _CHECKS_EDGES:
            cases.append((lambda x, w: (*np.histogram(x), *np.histogram(x, 3, density=True),
                                        *np.histogram(x[0, :1], 4),
                                        *np.histogram(x, 6, weights=(w * 3).astype(np.int32))),
                          (sample_array(rng, dtype, (3, 5)), w)))
    return cases


def bin_edges(rng):
    def edges(x):
        data = np.histogram_bin_edges(x) if _CHECKS_EDGES else np.histogram_bin_edges(x, 4, (0, 2))
        return data, np.histogram_bin_edges(x[1], 3, (0, 1)), np.histogram_bin_edges(x[:0], 2)
    return [(edges, (sample_array(rng, dtype, (3, 5)),)) for dtype in DTYPES]


def linear_systems(function):
    """Square systems (kiln._numpy_linalg): well conditioned, of each dtype NumPy's linalg
    takes, with one and several right-hand sides."""
    def samples(rng):
        cases = []
        for dtype, n in [("float64", 5), ("float32", 3), ("int64", 4), ("float64", 1)]:
            A = sample_array(rng, dtype, (n, n)) + (8 * np.eye(n)).astype(dtype)
            b = sample_array(rng, "float64", (n,))
            if function is np.linalg.solve:
                cases += [(function, (A, b)), (function, (A, np.stack([b, -b, 2 * b], 1)))]
            else:
                cases.append((function, (A,)))
        return cases
    return samples


SAMPLES = {
    np.linalg.solve: linear_systems(np.linalg.solve),
    np.linalg.inv: linear_systems(np.linalg.inv),
    np.linalg.det: linear_systems(np.linalg.det),
    np.isclose: closeness,
    np.allclose: static_comparison(np.allclose, STATIC_PAIRS + [
        ((lambda d: np.ones(3), lambda d: np.full(3, 1 + 1e-6)), {"rtol": 1e-7}),
        ((lambda d: np.zeros(3), lambda d: np.full(3, 1e-9)), {"atol": 0})]),
    np.array_equal: static_comparison(np.array_equal, STATIC_PAIRS + [
        ((lambda d: np.ones(3, d), lambda d: np.ones(2, d)), {})],
        traced=lambda x: (np.array_equal(x, x[:1]), np.array_equal(x, x.T, equal_nan=True))),
    np.array_equiv: static_comparison(np.array_equiv, [
        pair for pair in STATIC_PAIRS if not pair[1]] + [
        ((lambda d: np.ones(3, d), lambda d: np.ones((2, 3), d)), {}),
        ((lambda d: np.ones(3, d), lambda d: np.ones((3, 2), d)), {})],
        traced=lambda x: (np.array_equiv(x, x[:2]), np.array_equiv(x[:, :1], x[:2]))),
    np.nan_to_num: replacing_nans,
    np.fix: varied(lambda x: (np.fix(x), np.fix(x, out=np.zeros(x.shape, np.float64)))),
    np.isposinf: infinities(np.isposinf),
    np.isneginf: infinities(np.isneginf),
    np.polyval: polynomials,
    np.ediff1d: edge_differences,
    np.cov: covariances(np.cov),
    np.corrcoef: covariances(np.corrcoef),
    np.cross: cross_products,
    np.gradient: gradients,
    np.unwrap: unwrapping,
    np.convolve: convolutions(np.convolve),
    np.correlate: convolutions(np.correlate),
    np.searchsorted: searches,
    np.digitize: digitizing,
    np.interp: interpolations,
    np.histogram: histograms,
    np.histogram_bin_edges: bin_edges,
    np.bincount: bincounts,
}
for _name, _samples in [("trapezoid", integrals), ("trapz", integrals),
                        ("cumulative_sum", cumulative), ("cumulative_prod", cumulative)]:
    if hasattr(np, _name):
        SAMPLES[getattr(np, _name)] = _samples(getattr(np, _name))
