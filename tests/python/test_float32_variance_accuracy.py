"""float32 variances of data far from zero relative to its spread (mean 1e3, standard deviation
1e-2): the C++ kernels' SIMD lanes kept float32 Welford means near 1e3, which round by 3e-5 an
update, most of the spread, and torch.var, torch.std and np.var came out 1e-4 to 1e-3 off
(eager torch and NumPy: under 1e-6). The lanes now hold the statistics of x - K, K an element
of the data, and their totals merge in double. The oracle is the float64 statistic of the same
float32 values. (torch.var and friends: test_torch_float32_variance.py.)"""
import numpy as np
import pytest

import kiln

# Whole arrays (blocked lanes; 250000 splits over threads), rows of a layer norm, a row with a
# remainder past the last full SIMD step, and two reduced axes (several loops' passes).
CASES = [((100000,), None), ((250000,), None), ((10, 10000), 1), ((64, 768), 1), ((3, 4133), 1),
         ((4, 37, 129), (1, 2))]
TOLERANCE = 2e-6


def far_from_zero(shape, seed=0):
    """float32 values of mean 1e3 and standard deviation 1e-2."""
    values = np.random.default_rng(seed).standard_normal(shape) * 1e-2 + 1e3
    return values.astype(np.float32)


def relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("shape,dim", CASES, ids=[str(case) for case in CASES])
def test_numpy_var_keeps_float32_accuracy(shape, dim):
    x = far_from_zero(shape, seed=1)
    got = kiln.compile(lambda a: np.var(a, axis=dim))(x)
    assert got.dtype == np.float32
    assert relative_error(got, np.var(x.astype(np.float64), axis=dim)) < TOLERANCE
