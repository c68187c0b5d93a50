"""x ** 3 of floats (a tanh-form GELU's `x + 0.044715 * x ** 3`, gravity's `r ** 3`): kiln
called libmvec's vector pow, up to 4 ulp from the exact cube, whose lanes of negative bases take
a scalar path (37.8 ms on 4M float64s against 1.2 ms for x * x * x; the GELU of 16M float32s
took 73 ms). The C++ kernels now compute the cube rounded once (kiln_cube: float32 in float64,
float64 with its rounding errors added back by fma): the exact cube's nearest float, within
NumPy's own pow's error (SVML's, up to 1 ulp here), with pow's infinities, NaNs and signed
zeros."""
import numpy as np
import pytest

import kiln


def cube(x):
    return x ** 3


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def _ulps(got, exact):
    spacing = np.spacing(np.abs(got)).astype(np.longdouble)
    return np.abs((got.astype(np.longdouble) - exact) / spacing).astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_cube_is_the_exact_cube_rounded_once(dtype):
    x = np.random.default_rng(0).standard_normal(100000).astype(dtype) * 7
    got = kiln.compile(cube)(x)
    assert got.dtype == (x ** 3).dtype
    assert _ulps(got, x.astype(np.longdouble) ** 3).max() <= 0.501
    assert _ulps(got, (x ** 3).astype(np.longdouble)).max() <= 1.0  # NumPy's pow


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cubes_of_special_values_are_pows(dtype):
    big = np.finfo(dtype).max ** (1 / 3) * 2
    tiny = np.finfo(dtype).tiny
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, tiny, -tiny, 1.0, -2.0],
                 dtype=dtype)
    got = kiln.compile(cube)(x)
    with np.errstate(all="ignore"):
        expected = np.power(x, dtype(3))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_a_gelu_with_a_cube_agrees_with_numpy():
    x = np.random.default_rng(1).standard_normal(50000).astype(np.float32)
    # atol: 1 + tanh(t) cancels near t = -3, where a tanh within 2 ulp of 1 (CUDA's tanhf's bound)
    # is off by up to 1e-7 absolutely, times x / 2
    np.testing.assert_allclose(kiln.compile(gelu_tanh)(x), gelu_tanh(x), rtol=2e-6, atol=5e-7)
