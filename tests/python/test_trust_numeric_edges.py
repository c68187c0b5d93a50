"""Edges of NumPy's number rules that kiln answered without an error: a NumPy scalar (an
element, a reduction) stored into a signed integer array where it does not fit wrapped (NumPy 2
raises OverflowError, NaN ValueError; a loop's `out[i] = x[i] * 100` too); integers past 2**53
in np.arange and np.pad's constant went through float64 (np.arange(2**53 + 1, 2**53 + 4) began
at 2**53). Each must be NumPy's
answer or its exception, on NumPy 1.x too (whose own rules some of these follow)."""
import warnings

import numpy as np
import pytest

import kiln


def outcome(function, *arguments):
    """The result (or the exception's class) and the arguments after the call."""
    copies = [np.array(a, copy=True) for a in arguments]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = function(*copies)
    except Exception as error:  # noqa: BLE001 - the class is compared
        result = type(error)
    return result, copies


def assert_same(compiled, function, *arguments):
    got, got_arguments = outcome(compiled, *arguments)
    expected, expected_arguments = outcome(function, *arguments)
    if isinstance(expected, type):
        assert got is expected, (got, expected, arguments)
    else:
        assert not isinstance(got, type), (got, expected, arguments)
        np.testing.assert_array_equal(got, expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
    for mine, theirs in zip(got_arguments, expected_arguments):  # the writes before an error
        np.testing.assert_array_equal(mine, theirs)


def store_element(out, x):
    out[0] = x[3]
    return out


def fill_with_maximum(out, x):
    out.fill(x.max())
    return out


def store_slice(out, x):
    out[1:] = x[3] * x[0]  # x[0] is 1: no Python int, whose promotion NumPy 1.x changes
    return out


def store_in_loop(out, x):
    for i in range(out.shape[0]):
        out[i] = x[i] * 100
    return out


def store_through_mask(out, x):  # an advanced index: NumPy casts, unsafely
    out[out == 0] = x[3]
    return out


LAST = [1, 300, -129, 2**40, 2**63, 2.5, 300.5, -1e300, 3e9, np.nan, -np.inf, 2.0**63]


@pytest.mark.parametrize("store", [store_element, fill_with_maximum, store_slice,
                                   store_in_loop, store_through_mask])
@pytest.mark.parametrize("target", [np.int8, np.int64, np.uint8])
def test_numpy_scalars_stored_into_integer_arrays_raise_where_numpy_does(store, target):
    """The scalar is traced: the range check runs with the graph (one compile for all data)."""
    compiled = kiln.compile(store)
    for last in LAST:
        for source in (np.int64, np.uint64, np.float64, np.float32):
            if isinstance(last, int) and (np.dtype(source).kind != "f" and not
                                          np.iinfo(source).min <= last <= np.iinfo(source).max):
                continue
            x = np.array([1, 2, 3, last]).astype(source)
            assert_same(compiled, store, np.zeros(3, target), x)


@pytest.mark.parametrize("value", [np.int64(300), np.uint64(2**63), np.uint32(2**32 - 1),
                                   np.int16(-300), np.uint8(200), np.int64(-1)])
@pytest.mark.parametrize("target", [np.int8, np.int32, np.int64, np.uint8])
def test_numpy_integer_constants_stored_into_integer_arrays_follow_numpy(value, target):
    def store(out):
        out[0] = value
        out[1:].fill(value)
        return out
    assert_same(kiln.compile(store), store, np.zeros(3, target))


BIG = 2**53 + 1


@pytest.mark.parametrize("function", [
    lambda z: np.arange(BIG, BIG + 3) + z,
    lambda z: np.arange(2**62 + 1, 2**62 + 4, dtype=np.uint64) + z.astype(np.uint64),
    lambda z: np.arange(0, 2**62, 2**60 + 1) + z,
    lambda z: np.arange(2**63 - 3, 2**63 - 1) + z,
    lambda z: np.arange(BIG, BIG - 7, -3) + z,
    lambda z: np.pad(z, 1, constant_values=BIG),
    lambda z: np.pad(z.astype(np.uint64), (1, 0), constant_values=2**64 - 1),
])
def test_integers_past_two_to_the_53_stay_exact(function):
    """np.arange's first value and step, and np.pad's constant, went through float64."""
    assert_same(kiln.compile(function), function, np.zeros(3, np.int64))
