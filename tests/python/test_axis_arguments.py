"""Axis arguments as NumPy takes them.

An axis given for a 0-d array: its ufunc reductions (sum, max, all, ...,
and what is built on them: ptp, count_nonzero, the nan-reductions) take an integer axis 0 or
-1; argmax/argmin, cumsum/cumprod, argsort/argpartition, take and compress see the array as
1-d; mean/std/var, median, sort, flip refuse any axis. kiln raised AxisError for all of them.

A list as the axis: NumPy's C functions (ufunc reductions, mean/std/var, squeeze, norm) refuse
it with a TypeError, its Python ones (flip, median, average, percentile, moveaxis) take it; kiln
took it everywhere."""
import numpy as np
import pytest

import kiln

_CASES = {
    "sum": lambda x: np.sum(x, axis=0), "sum_m1": lambda x: x.sum(axis=-1),
    "sum_np_int": lambda x: np.sum(x, axis=np.int64(-1)),
    "sum_keepdims": lambda x: np.sum(x, axis=0, keepdims=True),
    "sum_where": lambda x: np.sum(x, axis=0, where=x > 9),
    "sum_int": lambda x: np.sum(x.astype(np.int32), axis=0),
    "prod": lambda x: np.prod(x, axis=0, dtype=np.float32),
    "max": lambda x: np.max(x, axis=0), "min": lambda x: x.min(axis=-1),
    "min_initial": lambda x: np.min(x, axis=0, initial=9.0),
    "all": lambda x: np.all(x > 1, axis=0), "any": lambda x: (x > 1).any(axis=-1),
    "ptp": lambda x: np.ptp(x, axis=0), "count_nonzero": lambda x: np.count_nonzero(x, axis=0),
    "add_reduce": lambda x: np.add.reduce(x, axis=0),
    "maximum_reduce": lambda x: np.maximum.reduce(x, axis=-1),
    "nansum": lambda x: np.nansum(x, axis=0), "nanprod": lambda x: np.nanprod(x, axis=-1),
    "nanmax": lambda x: np.nanmax(x, axis=0), "nanmin": lambda x: np.nanmin(x, axis=-1),
    "nanmean": lambda x: np.nanmean(x, axis=0), "nanstd": lambda x: np.nanstd(x, axis=-1),
    "nanvar": lambda x: np.nanvar(x, axis=0), "nanargmax": lambda x: np.nanargmax(x, axis=0),
    "argmax": lambda x: np.argmax(x, axis=0), "argmin": lambda x: x.argmin(axis=-1),
    "argmax_keepdims": lambda x: np.argmax(x, axis=0, keepdims=True),
    "argmax_int_axis": lambda x: x.argmax(axis=np.int64(0)),
    "cumsum": lambda x: np.cumsum(x, axis=0), "cumprod": lambda x: x.cumprod(axis=-1),
    "nancumsum": lambda x: np.nancumsum(x, axis=0),
    "argsort": lambda x: np.argsort(x), "argpartition": lambda x: np.argpartition(x, 0),
    "take": lambda x: np.take(x, 0, axis=0), "compress": lambda x: np.compress([True], x, axis=0),
}

# NumPy refuses these (the class kiln must raise too).
_REFUSED = {
    "sum_tuple": lambda x: np.sum(x, axis=(0,)), "max_axis_1": lambda x: np.max(x, axis=1),
    "argmax_axis_1": lambda x: np.argmax(x, axis=1), "cumsum_m2": lambda x: np.cumsum(x, axis=-2),
    "argmax_tuple": lambda x: np.argmax(x, axis=(0,)),
    "mean": lambda x: np.mean(x, axis=0), "std": lambda x: np.std(x, axis=-1),
    "var": lambda x: x.var(axis=0), "median": lambda x: np.median(x, axis=0),
    "sort": lambda x: np.sort(x), "partition": lambda x: np.partition(x, 0),
    "flip": lambda x: np.flip(x, 0), "add_accumulate": lambda x: np.add.accumulate(x, axis=0),
    "nansum_tuple": lambda x: np.nansum(x, axis=(0,)),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_accepted_axis_of_a_0d_array_matches_numpy(name):
    function = _CASES[name]
    expected = function(np.array(5.0))
    result = kiln.compile(function)(np.array(5.0))
    assert type(result) is type(expected)  # a NumPy scalar or an array, as NumPy gives
    assert np.shape(result) == np.shape(expected)
    assert np.asarray(result).dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("name", list(_REFUSED))
def test_refused_axis_of_a_0d_array_raises_numpys_error(name):
    function = _REFUSED[name]
    with pytest.raises(Exception) as expected:
        function(np.array(5.0))
    with pytest.raises(expected.type):
        kiln.compile(function)(np.array(5.0))


_LIST_AXIS = {
    "sum": lambda x: x.sum(axis=[0]), "np_max": lambda x: np.max(x, axis=[0]),
    "all": lambda x: np.all(x, axis=[0]), "add_reduce": lambda x: np.add.reduce(x, axis=[0]),
    "ptp": lambda x: np.ptp(x, axis=[0]), "count_nonzero": lambda x: np.count_nonzero(x, axis=[0]),
    "nansum": lambda x: np.nansum(x, axis=[0]), "nanmean": lambda x: np.nanmean(x, axis=[0]),
    "mean": lambda x: x.mean(axis=[0]), "var": lambda x: np.var(x, axis=[0, 1]),
    "std_complex": lambda x: np.std(x + 1j, axis=[0]),
    "mean_integer": lambda x: np.mean(x.astype(int), axis=[0], dtype=int),
    "squeeze": lambda x: np.squeeze(x[None], axis=[0]),
    "norm": lambda x: np.linalg.norm(x, axis=[0]), "norm_float": lambda x: np.linalg.norm(x, axis=1.0),
    "flip": lambda x: np.flip(x, axis=[0]), "median": lambda x: np.median(x, axis=[0]),
    "average": lambda x: np.average(x, axis=[0]), "expand_dims": lambda x: np.expand_dims(x, [0]),
    "percentile": lambda x: np.percentile(x, 50, axis=[0]),
}


def _as_numpy_takes_it(function):
    """function of a (2, 3) array compiled: NumPy's result, or NumPy's TypeError."""
    x = np.arange(6.0).reshape(2, 3)
    try:
        expected = function(x)
    except TypeError:
        with pytest.raises(TypeError):
            kiln.compile(function)(x)
        return
    result = kiln.compile(function)(x)
    assert type(result) is type(expected) and np.shape(result) == np.shape(expected)
    np.testing.assert_allclose(result, expected)


@pytest.mark.parametrize("name", list(_LIST_AXIS))
def test_a_list_axis_as_numpy_takes_it(name):
    _as_numpy_takes_it(_LIST_AXIS[name])


# A bool as the axis: NumPy's C functions refuse it ("an integer is required"), its Python ones
# take it as 0 or 1 (flip, roll, moveaxis, ...); kiln took it everywhere.
_BOOL_AXIS = {
    "sum": lambda x: x.sum(axis=True), "np_max": lambda x: np.max(x, axis=False),
    "all": lambda x: np.all(x, axis=True), "add_reduce": lambda x: np.add.reduce(x, axis=True),
    "sum_tuple": lambda x: np.sum(x, axis=(True,)), "mean": lambda x: x.mean(axis=True),
    "var": lambda x: np.var(x, axis=np.True_), "nansum": lambda x: np.nansum(x, axis=True),
    "ptp": lambda x: np.ptp(x, axis=True), "count_nonzero": lambda x: np.count_nonzero(x, True),
    "squeeze": lambda x: np.squeeze(x[None], axis=False),
    "cumsum": lambda x: np.cumsum(x, axis=True), "argmax": lambda x: x.argmax(axis=True),
    "argsort": lambda x: np.argsort(x, axis=True), "take": lambda x: np.take(x, [0], axis=True),
    "concatenate": lambda x: np.concatenate([x, x], axis=True),
    "repeat": lambda x: np.repeat(x, 2, axis=True),
    "flip": lambda x: np.flip(x, axis=True), "roll": lambda x: np.roll(x, 1, axis=True),
    "moveaxis": lambda x: np.moveaxis(x, True, 0), "stack": lambda x: np.stack([x, x], True),
    "expand_dims": lambda x: np.expand_dims(x, True), "median": lambda x: np.median(x, True),
}


@pytest.mark.parametrize("name", list(_BOOL_AXIS))
def test_a_bool_axis_as_numpy_takes_it(name):
    _as_numpy_takes_it(_BOOL_AXIS[name])
