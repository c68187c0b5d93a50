"""NumPy's float64 scalar is a subclass of Python's float, yet NumPy types it strongly: a loop
that appends np.float64 values (`vals.append(np.sin(c))`) to a list it sums after the loop must
give NumPy's float64 scalar, not fail to resolve the addition's types."""
import numpy as np
import pytest

import kiln

# NumPy 1.x promotes scalars by value (0 + float32 scalar is float64), which kiln does not follow
NEP50 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

def append_constant_sines(x):
    vals = []
    for i in range(x.shape[0]):
        vals.append(np.sin(1.0))
    return sum(vals)


def append_mixed_with_data(x):
    vals = []
    acc = 0.0
    for i in range(x.shape[0]):
        vals.append(np.cos(acc - acc) + x[i])
        acc += x[i]
    return sum(vals) + 1.0


def append_float32_scalars(x):
    vals = []
    for i in range(x.shape[0]):
        vals.append(np.float32(0.5) * x[i])
    return sum(vals)


@pytest.mark.parametrize("function", [append_constant_sines, append_mixed_with_data,
                                      append_float32_scalars])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_appended_numpy_scalars_sum_as_in_numpy(function, dtype):
    compiled = kiln.compile(function)
    for size in (5, 1, 8):
        x = np.random.default_rng(size).standard_normal(size).astype(dtype)
        expected, actual = function(x.copy()), compiled(x.copy())
        np.testing.assert_allclose(actual, expected, rtol=1e-6)
        if NEP50 or dtype == np.float64:
            assert type(actual) is type(expected)
