"""Conformance samples for kiln/_numpy_statistics.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import one, reductions, sample_array  # noqa: F401

DTYPES = ("float64", "float32", "int32", "bool")
MASK = np.array([True, False, True, True])
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"  # correction=, N-d average weights


def nan_array(rng, dtype, shape, all_nan=True):
    """A sample with NaNs (floats only), and with `all_nan` a row of NaNs only."""
    x = sample_array(rng, dtype, shape)
    if x.dtype.kind == "f" and x.ndim:
        x[rng.random(shape) < 0.3] = np.nan
        if all_nan and x.ndim == 2:
            x[1] = np.nan
    return x


def nan_function(function, variants, empty=None, all_nan=True, dtypes=DTYPES):
    """function(x, **kwargs) for each variant and dtype, on (3, 4) arrays with NaNs, a strided
    view, a 0-d array and (with `empty` kwargs) a size-0 array."""
    def samples(rng):
        cases = []
        for dtype in dtypes:
            for kwargs in variants:
                cases.append((lambda x, kw=kwargs: function(x, **kw),
                              (nan_array(rng, dtype, (3, 4), all_nan),)))
            cases.append((lambda x: function(x, axis=1),
                          (nan_array(rng, dtype, (6, 4), all_nan)[::2],)))
            cases.append((lambda x: function(x), (sample_array(rng, dtype, ()),)))
            if empty is not None:
                cases.append((lambda x: function(x, **empty),
                              (sample_array(rng, dtype, (0, 3)),)))
        return cases
    return samples


AXES = [{}, {"axis": 0}, {"axis": (0, 1), "keepdims": True}, {"axis": -1}]


def weighted(rng):
    cases = []
    for dtype in DTYPES:
        x = sample_array(rng, dtype, (3, 4))
        same = rng.uniform(0.5, 2, (3, 4))
        cases += [
            (lambda x: np.average(x), (x,)),
            (lambda x: np.average(x, axis=1, returned=True), (x,)),
            (lambda x: np.average(x, axis=0, keepdims=True), (x,)),
            (lambda x, w: np.average(x, weights=w, returned=True), (x, same)),
            (lambda x, w: np.average(x, axis=1, weights=w), (x, same.astype(np.float32))),
            (lambda x, w: np.average(x, axis=1, weights=w, returned=True), (x, same[0])),
            (lambda x, w: np.average(x, axis=0, weights=w, keepdims=True, returned=True),
             (x, same[:, 0].astype(np.float32))),
            (lambda x: np.average(x, axis=1, weights=[1, 2, 3, 4]), (x,)),
            (lambda x: np.average(x[::2], axis=0), (x,)),
        ]
        if NUMPY2:
            cases.append((lambda x, w: np.average(x, axis=(1, 0), weights=w),
                          (x, same.T.astype(np.int32) + 1)))
    return cases


def differences(rng):
    cases = []
    for dtype in DTYPES + ("uint8",):
        x = sample_array(rng, dtype, (3, 4))
        cases += [(lambda x: (np.diff(x), np.diff(x, axis=0), np.diff(x, n=2),
                              np.diff(x, n=0), np.diff(x[::2], axis=0), np.diff(x, n=5)), (x,)),
                  (lambda x: np.diff(x, prepend=0, append=x[:, :2]), (x,)),
                  (lambda x: np.diff(x, axis=0, prepend=x[:1] * 2, append=1.5), (x,)),
                  (lambda x: np.diff(x), (sample_array(rng, dtype, (0, 3)),))]
    return cases


def rounding(function):
    def samples(rng):
        cases = []
        for dtype in ("float64", "float32", "int32", "int8", "uint8"):
            x = sample_array(rng, dtype, (3, 4))
            scaled = (x * 37).astype(dtype)
            cases += [(lambda x: (function(x), function(x, 2), function(x[::2], 1),
                                  function(x[0, 0]), x.round(1)), (x,)),
                      (lambda x: (function(x, -1), function(x, decimals=-2)), (scaled,))]
        cases.append((lambda x: (function(x), function(x, decimals=0)),
                      (sample_array(rng, "bool", (3, 4)),)))
        return cases
    return samples


def diagonals(function, method):
    def samples(rng):
        cases = []
        for dtype in ("float64", "float32", "int32", "int8", "bool"):
            cases += [
                (lambda x: (function(x), function(x, 1), function(x, -1), function(x, 5),
                            function(x, -3), function(x.T, 2), function(x[::2]), method(x)),
                 (sample_array(rng, dtype, (3, 4)),)),
                (lambda x: (function(x, axis1=1, axis2=2), function(x, 1, 2, 0),
                            function(x, -1, axis1=-1, axis2=0)),
                 (sample_array(rng, dtype, (2, 3, 4)),)),
                (lambda x: function(x), (sample_array(rng, dtype, (0, 3)),))]
        return cases
    return samples


SAMPLES = {
    np.nansum: nan_function(np.nansum, AXES + [{"axis": -1, "dtype": np.float32},
                                               {"axis": 1, "initial": 2, "where": MASK}],
                            empty={"axis": 0}),
    np.nanprod: nan_function(np.nanprod, AXES + [{"axis": 0, "dtype": np.float64}],
                             empty={"axis": 0}),
    np.nanmax: nan_function(np.nanmax, AXES + [{"axis": 1, "initial": 1, "where": MASK}],
                            empty={"axis": 1}),
    np.nanmin: nan_function(np.nanmin, AXES + [{"initial": 1}], empty={"axis": 1}),
    np.nanmean: nan_function(np.nanmean, AXES + [{"axis": 1, "where": MASK}],
                             empty={"axis": 0}),
    np.nanvar: nan_function(np.nanvar, AXES + [{"axis": 1, "ddof": 1},
                                               {"axis": 0, "correction" if NUMPY2 else "ddof": 2, "keepdims": True},
                                               {"axis": 1, "where": MASK}],
                            empty={"axis": 0}),
    np.nanstd: nan_function(np.nanstd, AXES + [{"axis": 0, "ddof": 1, "keepdims": True}],
                            empty={"axis": 1}),
    np.nanargmax: nan_function(np.nanargmax, [{}, {"axis": 0}, {"axis": 1, "keepdims": True}],
                               all_nan=False),
    np.nanargmin: nan_function(np.nanargmin, [{}, {"axis": -1}, {"axis": 0, "keepdims": True}],
                               all_nan=False),
    np.nancumsum: nan_function(np.nancumsum, [{}, {"axis": 0}, {"axis": 1, "dtype": np.float32}],
                               empty={"axis": 0}),
    np.nancumprod: nan_function(np.nancumprod, [{}, {"axis": -1}, {"axis": 0, "dtype": "f8"}],
                                empty={}),
    np.average: weighted,
    np.diff: differences,
    np.round: rounding(np.round),
    np.around: rounding(np.around),
    np.diagonal: diagonals(np.diagonal, lambda x: x.diagonal(1)),
    np.trace: diagonals(np.trace, lambda x: x.trace(-1, dtype=np.float32)),
}
