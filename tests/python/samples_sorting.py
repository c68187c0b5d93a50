"""Conformance samples for kiln/_numpy_sorting.py: function -> f(rng) -> [(callable, arrays)].
argsort's ties (NaNs among them) are compared under kind="stable" only: NumPy's default kind
leaves their order to its algorithm (kiln's is the stable one). partition/argpartition are
compared through what NumPy promises: the kth elements, and each side's elements."""
import numpy as np

from conformance import sample_array

DTYPES = ("float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool")


def _with_nans(rng, dtype, shape):
    x = sample_array(rng, dtype, shape)
    if x.dtype.kind == "f" and x.ndim:
        x[rng.random(shape) < 0.25] = np.nan
    return x


def _cases(rng, variants):
    cases = []
    for dtype in DTYPES:
        for variant in variants:
            cases.append((variant, (_with_nans(rng, dtype, (3, 7)),)))
        cases.append((lambda x: variants[0](x[::2, ::-1]), (_with_nans(rng, dtype, (6, 7)),)))
        cases.append((variants[0], (sample_array(rng, dtype, (0, 3)),)))
    return cases


def sorts(rng):
    return _cases(rng, [lambda x: np.sort(x), lambda x: np.sort(x, axis=0),
                        lambda x: np.sort(x, axis=None), lambda x: np.sort(x, kind="stable"),
                        lambda x: np.sort(x[0, 0], axis=None)])


def argsorts(rng):
    return _cases(rng, [lambda x: np.argsort(x, kind="stable"),
                        lambda x: np.argsort(x, axis=0, kind="stable"),
                        lambda x: np.argsort(x, axis=None, kind="stable"),
                        lambda x: np.argsort(-np.arange(5.0) * x.shape[0])])


def lexsorts(rng):
    # lexsort is stable: ties (NaNs too) keep their order
    return _cases(rng, [lambda x: np.lexsort(x), lambda x: np.lexsort((x[0], x[1])),
                        lambda x: np.lexsort(x, axis=0),
                        lambda x: np.lexsort((x[2], (x[0] > x[1]).astype(np.int8)))])


def _sides(x, part, kth, axis):
    """What NumPy promises of a partition: the kth elements, then the sorted sides."""
    before = np.sort(np.take(part, range(kth), axis=axis), axis=axis)
    after = np.sort(np.take(part, range(kth + 1, x.shape[axis]), axis=axis), axis=axis)
    return np.take(part, kth, axis=axis), before, after


def partitions(rng):
    return _cases(rng, [lambda x: _sides(x, np.partition(x, 2), 2, -1),
                        lambda x: _sides(x, np.partition(x, -1, axis=0), 2, 0),
                        lambda x: _sides(x, np.partition(x, (1, 3)), 3, -1)])


def argpartitions(rng):
    def along(x, kth, axis=-1):
        order = np.argpartition(x, kth, axis=axis)
        return _sides(x, np.take_along_axis(x, order, axis=axis), kth, axis)
    return _cases(rng, [lambda x: along(x, 2), lambda x: along(x, 1, 0)])


def medians(rng):
    cases = _cases(rng, [lambda x: np.median(x), lambda x: np.median(x, axis=0),
                         lambda x: np.median(x, axis=-1, keepdims=True),
                         lambda x: np.median(x[:, 1:], axis=(1, 0), keepdims=True),
                         lambda x: np.median(x[:, :6], axis=1), lambda x: np.median(x[0, 0])])
    for dtype in ("float64", "float32", "int32"):  # no NaN: the middle values themselves
        cases.append((lambda x: (np.median(x, axis=1), np.median(x[:, :4], axis=0)),
                      (sample_array(rng, dtype, (5, 8)),)))
    return [case for case in cases if case[1][0].size]  # empty slices: NumPy's warning


def quantiles(function, scale):
    def samples(rng):
        cases = _cases(rng, [lambda x: function(x, 0.3 * scale),
                             lambda x: function(x, [0.0, 0.25 * scale, 0.5 * scale, scale], axis=1),
                             lambda x: function(x, np.array([[0.1], [0.9]]) * scale, axis=0,
                                                keepdims=True),
                             lambda x: function(x[:, 1:], 0.75 * scale, axis=(0, 1)),
                             lambda x: function(x, np.float32(0.6) * scale, axis=-1)])
        # bool: NumPy's TypeError, raised by kiln too
        return [case for case in cases if case[1][0].size]
    return samples


SAMPLES = {np.sort: sorts, np.argsort: argsorts, np.lexsort: lexsorts, np.partition: partitions,
           np.argpartition: argpartitions, np.median: medians,
           np.quantile: quantiles(np.quantile, 1), np.percentile: quantiles(np.percentile, 100)}
