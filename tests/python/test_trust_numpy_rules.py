"""NumPy's rules for data-dependent errors and the values it stores, which kiln had replaced by
answers of its own without an error: x.fill(nan) of an integer array gave zeros. Each must be
NumPy's answer or NumPy's exception."""
import warnings

import numpy as np
import pytest

import kiln


def both(function, *args):
    """(NumPy's result or exception, kiln's), with NumPy's warnings silenced."""
    outcomes = []
    for run in (function, kiln.compile(function)):
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                outcomes.append(run(*args))
        except Exception as error:  # noqa: BLE001 - compared below
            outcomes.append(error)
    return outcomes


def assert_same_outcome(function, *args):
    expected, got = both(function, *args)
    if isinstance(expected, Exception):
        assert isinstance(got, type(expected)), (expected, got)
        assert str(expected) in str(got)
        return
    assert not isinstance(got, Exception), got
    np.testing.assert_array_equal(got, expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype


def fill(x, value):
    x.fill(value)
    return x


def set_mask(x, value):
    x[x > 1] = value
    return x


def set_indices(x, value):
    x[[0, 3]] = value
    return x


def set_slice(x, value):
    x[1:] = value
    return x


@pytest.mark.parametrize("store", [fill, set_mask, set_indices, set_slice])
@pytest.mark.parametrize("value", [float("nan"), np.inf, 1e30, 300.0, -2.5, np.float32("nan"),
                                   np.float64(1e20), np.float64(300.0), np.float16(-7.5)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64])
def test_float_scalars_stored_into_integer_arrays_follow_numpys_rules_for_each_store(
        store, value, dtype):
    """x.fill(nan) gave zeros (NumPy: ValueError); a NumPy float scalar through a mask or index
    arrays, which NumPy casts unsafely, was an error."""
    assert_same_outcome(lambda x: store(x, value), np.arange(4, dtype=dtype))
