"""Each operation rounds on its own, as in NumPy: no `a * b + c` fused into one rounding.

GCC contracts a multiply and an add into an FMA by default in C++ wherever the target has one
(-march=native here). Generated kernels then differed from NumPy in the last bit of a quarter of
the elements of `a * b + c * d`, and a time-stepping loop (an Euler step of the Lorenz system)
from NumPy's at step 12 and by O(1) after 3,000 steps: a different answer with no error. Kernels
are now compiled with -ffp-contract=off (src/runtime/toolchain.cpp), and so is the interpreter
(CMakeLists.txt). Kiln's own polynomials keep their explicit fma calls.
"""
import numpy as np
import pytest

import kiln


def products_summed(a, b, c, d):
    return a * b + c * d, a * b - c, c + a * d


def lorenz(state, steps, dt):
    s = state.copy()
    xs = np.empty(steps)
    for i in range(steps):
        x, y, z = s[0], s[1], s[2]
        s = s + dt * np.array([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z])
        xs[i] = s[0]
    return xs


def lorenz_numbers(steps, dt):
    x, y, z = 1.0, 1.0, 1.0
    xs = np.empty(steps)
    for i in range(steps):
        dx, dy, dz = 10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3.0 * z
        x, y, z = x + dt * dx, y + dt * dy, z + dt * dz
        xs[i] = x
    return xs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_and_sums_round_as_numpys(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(20000).astype(dtype) for _ in range(4)]
    for got, expected in zip(kiln.compile(products_summed)(*arrays), products_summed(*arrays)):
        assert got.dtype == expected.dtype
        assert np.count_nonzero(got != expected) == 0


def test_a_chaotic_time_step_loop_follows_numpy_to_the_bit():
    state = np.array([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(kiln.compile(lorenz)(state, 3000, 0.01),
                                  lorenz(state, 3000, 0.01))
    np.testing.assert_array_equal(kiln.compile(lorenz_numbers)(3000, 0.01),
                                  lorenz_numbers(3000, 0.01))
