"""NumPy's rules for data-dependent errors, degrees of freedom, axis tuples and the values it
stores, which kiln had replaced by answers of its own without an error: nanargmax of an all-NaN
slice gave 0, np.average of weights summing to zero gave inf or nan, var with ddof past the
count gave NaN where NumPy (and torch) divide by zero, np.expand_dims of a repeated axis gave an
array, x.fill(nan) of an integer array gave zeros, ldexp(0, 2000) gave NaN, np.cumsum of float16
kept float32 running values (500.0 where NumPy, rounding every step to float16, stops at 256.0).
Each must be NumPy's answer or its exception."""
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
    np.testing.assert_allclose(got, expected, rtol=1e-6)  # float32 rounding; inf, nan in place
    assert np.asarray(got).dtype == np.asarray(expected).dtype


GRID = np.arange(24.0).reshape(2, 3, 4)
SOME_NAN = np.where(GRID % 5 == 0, np.nan, GRID)  # no slice along axis 2 is all NaN
NAN_ROW = np.where(GRID > 10, np.nan, GRID)  # slices along axes 1 and 2 that are all NaN


@pytest.mark.parametrize("function", [np.nanargmax, np.nanargmin])
@pytest.mark.parametrize("data, axis", [(SOME_NAN, 2), (SOME_NAN, None), (NAN_ROW, 0),
                                        (NAN_ROW, 1), (NAN_ROW, None), (GRID * np.nan, None)])
def test_nan_arg_extrema_of_an_all_nan_slice_raise_as_numpy(function, data, axis):
    compiled = kiln.compile(lambda x: function(x, axis=axis))
    assert_same_outcome(lambda x: function(x, axis=axis), data)
    # The check runs at every call: the same entry, data with and without all-NaN slices.
    np.testing.assert_array_equal(compiled(GRID), function(GRID, axis=axis))
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        compiled(GRID * np.nan)


@pytest.mark.parametrize("weights, axis", [(np.zeros(2), 0), (np.array([1.0, -1.0]), 0),
                                           (np.array([[1.0, 0, 0], [-1, 0, 0]]), (0, 1)),
                                           (np.ones(3), 1)])
def test_average_of_weights_summing_to_zero_is_numpys_zero_division_error(weights, axis):
    data = np.arange(24.0).reshape(2, 3, 4)
    assert_same_outcome(lambda x, w: np.average(x, axis=axis, weights=w), data, weights)


@pytest.mark.parametrize("function", [np.var, np.std])
@pytest.mark.parametrize("ddof", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_variance_with_no_degrees_of_freedom_left_divides_by_zero_as_numpy(function, ddof,
                                                                             dtype):
    data = np.array([[1, 2, 4], [3, 3, 3]], dtype=dtype)  # inf where values differ, else nan
    assert_same_outcome(lambda x: function(x, axis=1, ddof=ddof), data)
    assert_same_outcome(lambda x: function(x, ddof=6 + ddof), data)
    where = np.array([[True, True, False], [True, False, True]])
    assert_same_outcome(lambda x: function(x, axis=1, ddof=ddof, where=where), data)


def test_torch_variance_with_no_degrees_of_freedom_left_is_torchs():
    torch = pytest.importorskip("torch")
    data = torch.tensor([[1.0, 2, 4], [3, 3, 3]])

    def variances(x):
        return (torch.var(x, dim=1, correction=3), torch.std(x, dim=1, correction=5),
                torch.var_mean(x, dim=1, correction=4)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = variances(data)
        got = torch.compile(variances, backend="kiln")(data)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, equal_nan=True)


@pytest.mark.parametrize("call", [
    lambda x: np.expand_dims(x, (0, 0)), lambda x: np.expand_dims(x, (0, -4)),
    lambda x: np.moveaxis(x, [0, -3], [0, 1]), lambda x: np.moveaxis(x, [0, 1], [2]),
    lambda x: np.average(x, axis=(1, -2)), lambda x: np.gradient(x, axis=(0, 0)),
    lambda x: np.expand_dims(x, (0, 1)), lambda x: np.moveaxis(x, [0, -1], [-1, 0]),
    lambda x: np.moveaxis(x, [0, 1], [1, 1])])
def test_repeated_or_mismatched_axes_are_numpys_error(call):
    assert_same_outcome(call, np.arange(24.0).reshape(2, 3, 4))


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


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_ldexp_is_exact_where_two_to_the_exponent_alone_overflows_or_underflows(dtype):
    """ldexp was x * 2**e: ldexp(0, 2000) gave 0 * inf = NaN, ldexp(1e-300, 1100) inf and
    ldexp(1e300, -1100) 0, each finite in NumPy."""
    info = np.finfo(dtype)
    span = info.maxexp - info.minexp + info.nmant  # from the smallest subnormal to the largest
    x = np.array([0.0, -0.0, info.smallest_subnormal, info.tiny, 1.5, -info.max, np.inf, np.nan,
                  3.0], dtype=dtype)
    for exponent in (span, span + 1, -span, -span - 1, -span - 7, info.maxexp + 3,
                     info.minexp - 5, 2**40, -2**40, 0):
        e = np.full(x.shape, exponent, dtype=np.int64)
        assert_same_outcome(np.ldexp, x, e)
    assert_same_outcome(np.ldexp, x, np.arange(-span, span, 2 * span // 9 + 1)[:9])


@pytest.mark.parametrize("low, high", [(np.nan, 1.0), (0.0, np.nan), (np.nan, np.nan),
                                       (np.float32(np.nan), None), (np.array(np.nan), 1.0),
                                       (np.full(4, np.nan), 1.0)])
def test_clip_with_a_nan_bound_is_the_installed_numpys(low, high):
    """NumPy 2 gives NaN; NumPy 1.x ignores a 0-d NaN bound (an array of them gives NaN):
    kiln gave NumPy 2's NaN on both."""
    x = np.array([np.nan, -5.0, 0.5, 5.0])
    assert_same_outcome(lambda a: np.clip(a, low, high), x)
    if not isinstance(low, np.ndarray):  # NumPy 1.x's value-based promotion of 0-d arrays
        assert_same_outcome(lambda a: np.clip(a, low, high), x.astype(np.float32))


def _cumsum_then_scale(x):
    return np.cumsum(x * 1) * 2


def _cumulative_product_of_rows(x):
    return x.reshape(50, -1).cumprod(axis=1) + 0


FLOAT16_ACCUMULATIONS = [
    lambda x: np.cumsum(x), lambda x: np.add.accumulate(x), lambda x: np.nancumsum(x),
    lambda x: x.cumsum(), _cumsum_then_scale, _cumulative_product_of_rows,
    lambda x: np.cumsum(x.reshape(50, 100), axis=0),
    lambda x: np.cumsum(x.astype(np.float32), dtype=np.float16),
    lambda x: np.multiply.accumulate(x[:80] + 1),
]


@pytest.mark.parametrize("function", FLOAT16_ACCUMULATIONS)
def test_float16_running_sums_and_products_round_every_step_as_numpys(function):
    x = np.full(5000, 0.1, np.float16)
    expected, got = both(function, x)
    assert got.dtype == expected.dtype == np.float16
    np.testing.assert_array_equal(got, expected)


def test_float16_running_sums_name_the_graph_break_under_fullgraph():
    with pytest.raises(kiln.GraphBreak, match="float16"):
        kiln.compile(lambda x: np.cumsum(x), fullgraph=True)(np.ones(4, np.float16))


def _floor_divided(x, n):
    return x * (1 // n)


def _divided(x, n):
    return x * (2.0 / n)


def _modulo(x, n):
    return x * (7 % n)


def _divmod(x, n):
    return x * divmod(7, n)[1]


def _loop_counter_divisor(x, n):
    s = 0.0
    for i in range(n, 4):
        s += 1 / i
    return x * s


@pytest.mark.parametrize("function", [_floor_divided, _divided, _modulo, _divmod,
                                      _loop_counter_divisor])
def test_python_numbers_divided_by_a_traced_zero_raise_pythons_error(function):
    """A Python number the graph takes as an input (a dynamic int or float) or a loop's
    counter, dividing a Python number: Python raises ZeroDivisionError for zero, where NumPy's
    ufuncs gave kiln 0, inf or nan."""
    compiled = kiln.compile(function)
    x = np.arange(3.0)
    for n in (1, 2, 3):  # the number changes between calls: a graph input
        np.testing.assert_array_equal(compiled(x, n), function(x, n))
    with pytest.raises(ZeroDivisionError):
        function(x, 0)
    with pytest.raises(ZeroDivisionError):
        compiled(x, 0)
    np.testing.assert_array_equal(compiled(x, 2), function(x, 2))


def test_round_of_an_element_is_numpys():
    # round(x[i]) raised a TypeError: a NumPy scalar's round() is a Python int, with digits
    # its own type
    def rounded(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = round(x[i])
        return out, round(x[0]), round(x[1], 1), round(np.float32(x[1]), 2), \
            round(x.astype(np.int64)[2], -1)
    x = np.array([2.5, 3.567, 17.2, -1.5])
    compiled = kiln.compile(rounded)
    for _ in range(2):
        for value, expected in zip(compiled(x), rounded(x)):
            assert type(value) is type(expected)
            np.testing.assert_array_equal(value, expected)
