"""Decompositions written once in C++ (src/decompose/) and reached from NumPy code: linalg.norm
over every order and axis NumPy accepts (the spectral norms run eagerly), and the ufunc
decompositions' special values."""
import warnings

import numpy as np
import pytest

import kiln

ORDERS = [None, 1, 2, np.inf, -np.inf, 0, 0.5, 3, -1, -2, "fro", "nuc"]
AXES = [None, 0, 1, (0, 1), -1]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_norm_matches_numpy_for_every_order_and_axis(dtype):
    x = (np.random.default_rng(1).normal(size=(5, 7)) * 3).astype(dtype)
    checked = 0
    for data in (x, x[0]):
        for ord in ORDERS:
            for axis in AXES:
                try:
                    expected = np.linalg.norm(data, ord, axis)
                except (ValueError, np.linalg.LinAlgError):
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # spectral norms: an eager graph break
                    got = kiln.compile(lambda a: np.linalg.norm(a, ord, axis))(data)
                np.testing.assert_allclose(got, expected, rtol=1e-5, err_msg=f"{ord} {axis}")
                assert np.asarray(got).dtype == np.asarray(expected).dtype
                checked += 1
    assert checked > 40


def test_ufunc_decompositions_keep_numpys_special_values():
    x = np.array([-3.0, -0.0, 2.5, np.inf, -np.inf, np.nan, 1e-310, 8.0])
    y = np.array([2.0, 1.0, -0.5, np.inf, 3.0, 1.0, 2.0, -3.0])

    def f(a, b):
        return np.modf(a) + np.frexp(a) + (np.fmod(a, b), np.logaddexp(a, b), np.heaviside(a, b),
                                           np.signbit(a))

    with np.errstate(all="ignore"):
        expected = f(x, y)
        got = kiln.compile(f)(x, y)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(e[~np.isnan(e)]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fmod_is_exact_and_keeps_finite_dividends_over_infinite_divisors(dtype):
    # A remainder built from Python's signed one rounds (fmod(-1e-20, 1.0) came out -0.0) and
    # turned fmod(x, inf) into NaN.
    x = np.array([-1e-20, -0.1, 5.0, -5.0, 7.5, -0.0, 1e-30, -6.0], dtype)
    y = np.array([1.0, 3.0, -np.inf, np.inf, -2.0, 1.0, -7.0, 3.0], dtype)
    got = kiln.compile(np.fmod)(x, y)
    np.testing.assert_array_equal(got, np.fmod(x, y))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(np.fmod(x, y)))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_lcm_wraps_an_overflowing_product_as_numpy_does(dtype):
    # NumPy forms |a| / gcd * |b| in the unsigned type: lcm(int8 127, 4) is -4, not 4.
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max - 2, 12, 0, -6 if info.min else 6], dtype)
    b = np.array([4, 3, info.max, 18, 5, 4], dtype)
    np.testing.assert_array_equal(kiln.compile(np.lcm)(a, b), np.lcm(a, b))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_gcd_of_the_most_negative_integer_is_taken_unsigned_as_numpy_does(dtype):
    # NumPy takes |a| and |b| in the unsigned type: |int8 -128| is 128 there, and
    # gcd(-127, -128) is 1 (kiln's Euclid on the signed abs, still -128, gave -1).
    info = np.iinfo(dtype)
    a = np.array([-127, 64, 7, 0, info.min, 6], dtype)
    b = np.array([info.min, info.min, info.min, info.min, info.min, -4], dtype)
    np.testing.assert_array_equal(kiln.compile(np.gcd)(a, b), np.gcd(a, b))
