"""Complex numbers to a constant integer power (`z ** 3` in a Newton fractal, `z ** 4 + c` in a
multibrot): NumPy multiplies (umath's nc_pow: binary exponentiation for 0 < |n| < 100, the
reciprocal for n < 0); kiln computed exp(n log z), six library calls an element, 150 times
slower than NumPy on 160,000 numbers and off in the last bits where the products are exact
((1 + 1j) ** 3 is -2 + 2j). And z ** 0 is 1 for every z, NaN too, as NumPy's first test says."""
import numpy as np

import kiln


def _bases(dtype):
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(200) + 1j * rng.standard_normal(200)).astype(dtype)
    z[:8] = [0, 1j, -1, 1 + 1j, 2 - 3j, np.nan, complex(np.inf, 0), 0.5j]
    return z


def _power(n):
    def power(z):
        return z ** n
    return power


def test_positive_integer_powers_are_numpys_products():
    for dtype in (np.complex128, np.complex64):
        z = _bases(dtype)
        for n in (1, 3, 4, 5, 7, 10, 99):
            with np.errstate(all="ignore"):
                got, expected = kiln.compile(_power(n))(z), z ** n
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got[:5], expected[:5], err_msg=f"{dtype} ** {n}")
            finite = np.isfinite(expected)
            np.testing.assert_array_equal(got[finite], expected[finite], err_msg=f"{dtype} ** {n}")


def test_negative_integer_powers_are_reciprocals_of_the_products():
    for dtype, tolerance in ((np.complex128, 1e-15), (np.complex64, 1e-6)):
        z = _bases(dtype)
        for n in (-1, -2, -3, -6):
            with np.errstate(all="ignore"):
                got, expected = kiln.compile(_power(n))(z), z ** n
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=0,
                                       err_msg=f"{dtype} ** {n}")
            assert np.isnan(got[0].real) and np.isnan(got[0].imag)  # 0 ** -n: NaN + NaN j


def test_zero_powers_are_one_and_other_powers_stay_general():
    z = _bases(np.complex128)
    for n in (0, 0.0, 2.5, 100, 1j):
        with np.errstate(all="ignore"):
            got, expected = kiln.compile(_power(n))(z), z ** n
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300, err_msg=f"** {n}")


def cubed_halves(z, steps):
    for _ in range(steps):
        z = z ** 3 * 0.5
    return z


def test_a_loops_constant_integer_power_is_numpys_products():
    # The exponent is the loop's invariant, a parameter of its body: known constant there too
    # (a Newton fractal's 30 steps on 200 x 200 points: 336 ms, NumPy 42).
    z = np.array([1 + 1j, -1 + 1j, 1j, 0.5 - 0.5j, 0])
    for dtype in (np.complex128, np.complex64):
        got = kiln.compile(cubed_halves)(z.astype(dtype), 6)
        expected = cubed_halves(z.astype(dtype), 6)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
