"""Float sums keep NumPy's accuracy (pairwise summation): blocked SIMD lanes feeding a pairwise
cascade, in every thread. Each result is compared with math.fsum of the float64 values."""
import math

import numpy as np
import pytest

import kiln

N = 10_000_000


def relative_error(value, exact):
    return abs(float(value) - exact) / abs(exact)


@pytest.fixture(scope="module")
def data():
    random = np.random.default_rng(7)
    return {"uniform": random.random(N, dtype=np.float32),
            "mixed": (random.standard_normal(N) + 0.25).astype(np.float32),
            # far from zero: a float32 running mean drifts (Welford states are kept in double)
            "offset": (3 * random.standard_normal(N) + 100).astype(np.float32)}


def _variance(values):
    return math.fsum((values - math.fsum(values) / len(values)) ** 2) / len(values)


@pytest.mark.parametrize("kind", ["uniform", "mixed", "offset"])
@pytest.mark.parametrize("name, function, reference", [
    ("sum", lambda x: x.sum(), lambda x: math.fsum(x)),
    ("mean", lambda x: np.mean(x), lambda x: math.fsum(x) / len(x)),
    ("fused", lambda x: ((x * 2) + 1).sum(), lambda x: math.fsum(x * 2 + 1)),
    ("nansum", lambda x: np.nansum(x), lambda x: math.fsum(x)),
    ("var", lambda x: x.var(), _variance),
    ("std", lambda x: x.std(),
     lambda x: math.sqrt(math.fsum((x - math.fsum(x) / len(x)) ** 2) / len(x))),
    # over two loops (the rows of a matrix), and down columns (batch norm's statistics)
    ("var_of_matrix", lambda x: x.reshape(-1, 64).var(), _variance),
    ("var_of_columns", lambda x: x.reshape(-1, 64).var(axis=0)[5],
     lambda x: _variance(x.reshape(-1, 64)[:, 5])),
    ("long_last_axis", lambda x: x.reshape(2, -1).sum(axis=1)[1],
     lambda x: math.fsum(x.reshape(2, -1)[1])),
    # over loops whose last is too short to split across lanes: rows of 64 and of 100
    ("sum_of_rows", lambda x: x.reshape(-1, 64).sum(), lambda x: math.fsum(x)),
    ("mean_of_rows", lambda x: x.reshape(-1, 100).mean(), lambda x: math.fsum(x) / len(x)),
    ("sum_over_two_axes", lambda x: x.reshape(100, 1000, 100).sum(axis=(1, 2))[7],
     lambda x: math.fsum(x.reshape(100, -1)[7])),
])
def test_float32_sums_are_as_accurate_as_numpys(data, kind, name, function, reference):
    x = data[kind]
    exact = reference(x.astype(np.float64))
    compiled = relative_error(kiln.compile(function)(x), exact)
    numpy = relative_error(function(x), exact)
    assert compiled < 1e-6, compiled
    # a float32 result may be a rounding or two from exact where NumPy's lands closer by luck
    assert compiled <= 10 * numpy + 2 * np.finfo(np.float32).eps, (compiled, numpy)


def test_float16_sums_accumulate_accurately():
    x = np.random.default_rng(3).random(60_000).astype(np.float16)
    exact = math.fsum(x.astype(np.float64))
    # NumPy's float16 sum rounds its pairwise partials to float16; kiln keeps float32.
    assert relative_error(kiln.compile(lambda x: x.sum(dtype=np.float32))(x), exact) < 1e-6


def test_float64_sums_stay_exact_to_rounding():
    x = np.random.default_rng(5).random(3_000_001)
    exact = math.fsum(x)
    assert relative_error(kiln.compile(lambda x: x.sum())(x), exact) < 1e-14
