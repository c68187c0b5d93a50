"""np.var and np.std of float16 data take NumPy's own steps in float16: its mean, deviations
and squares are float16 values, so a sum or a square past 65504 makes the result inf. kiln
computed both in float32 (Welford) and returned a finite std where NumPy's is inf (and a var
that was inf only because the float32 one rounded past float16's range)."""
import warnings

import numpy as np
import pytest

import kiln


def sample(scale, shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + scale).astype(np.float16)


# The whole sum overflowing (mean inf), squares overflowing on some rows only, and small data
# where nothing overflows; over axes, ddof, keepdims and where=.
CASES = [
    (sample(2000, (100,)), {}),
    (sample(2000, (100,)), {"ddof": 1}),
    (sample(300, (7, 9), 1), {"axis": 1}),
    (sample(300, (7, 9), 1), {"axis": 0, "keepdims": True}),
    (sample(300, (7, 9), 1), {"axis": 1, "where": sample(1, (7, 9), 2) > 1}),
    (sample(3, (5, 40), 3), {"axis": 1}),
    (sample(3, (5, 40), 3), {}),
]


@pytest.mark.parametrize("moment", [np.var, np.std])
@pytest.mark.parametrize("x,keywords", CASES)
def test_float16_moments_overflow_as_numpys(moment, x, keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(moment(x, **keywords))
        got = np.asarray(kiln.compile(lambda a: moment(a, **keywords))(x))
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    # (float16 sums over an outer axis round at each step, as NumPy's: test_float16_reductions)
    np.testing.assert_array_equal(got, want)


def test_the_method_form_too():
    x = sample(2000, (100,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isinf(x.std())
        assert np.isinf(kiln.compile(lambda a: a.std())(x))
