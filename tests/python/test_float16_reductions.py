"""float16 sums and products equal NumPy's, whatever the axes and the layout (bit for bit where
NumPy rounds at each step; a product it rounds once may differ by an ulp at a tie, as float32
results of another summation order do).

NumPy adds float16 elements in float and rounds once only where its iterator's innermost loop
reduces every reduced axis (a row's sum of a C-ordered array, the whole of a contiguous one).
Elsewhere (a column's sum, a transposed or strided array's, some of several axes) the float16
result takes the elements one at a time, rounded each time. kiln summed in float and rounded
once everywhere: a column sum of 1000 values in [0, 10) came out 56 from NumPy's, silently.
Those reductions now run as NumPy (a graph break, on an array of NumPy's layout); the others
stay in the graph.
"""
import warnings

import numpy as np
import pytest

import kiln

_RNG = np.random.default_rng(0)
# Whole numbers: their sums in float are exact, so a sum rounded once to float16 is one answer
# (NumPy's pairwise order and kiln's agree); past 2048 float16 steps by 2, so a sum rounded at
# each step drifts from it.
_MATRIX = _RNG.integers(0, 10, (1000, 7)).astype(np.float16)
_CUBE = _RNG.integers(0, 100, (60, 40, 6)).astype(np.float16)

# (name, array, axis, whether NumPy rounds once: the reduction stays in kiln's graph)
CASES = [
    ("rows", _MATRIX, 1, True), ("columns", _MATRIX, 0, False), ("all", _MATRIX, None, True),
    ("transposed rows", _MATRIX.T, 1, False), ("transposed columns", _MATRIX.T, 0, True),
    ("strided columns", _MATRIX[:, ::2], 0, False), ("strided all", _MATRIX[:, ::2], None, False),
    ("reversed columns", _MATRIX[::-1], 0, False), ("middle axis", _CUBE, 1, False),
    ("outer and inner axes", _CUBE, (0, 2), False), ("two inner axes", _CUBE, (1, 2), True),
    ("permuted", _CUBE.transpose(2, 0, 1), (1, 2), False),
    ("strided inner axes", _CUBE[:, ::3], (1, 2), False),
]


def _reduce(kind, axis, keepdims):
    def function(x):
        operand = x if kind == "sum" else x / 9.5 + 0.55  # (products near 1)
        return getattr(np, kind)(operand, axis=axis, keepdims=keepdims)
    return function


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("name, array, axis, once", CASES, ids=[case[0] for case in CASES])
def test_float16_reductions_equal_numpys_bit_for_bit(name, array, axis, once, kind, keepdims):
    function = _reduce(kind, axis, keepdims)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (products that overflow, as NumPy's)
        expected = function(array)
        for _ in range(2):
            got = kiln.compile(function)(array)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            if kind == "prod" and once:  # products in float, in kiln's order: an ulp at a tie
                np.testing.assert_array_max_ulp(got, expected, maxulp=1)
            else:
                np.testing.assert_array_equal(got, expected)
    if once:  # rounded once: in the graph, no break
        np.testing.assert_array_max_ulp(kiln.compile(function, fullgraph=True)(array), expected,
                                        maxulp=int(kind == "prod"))


def test_a_cast_into_float16_equals_numpys():
    """dtype=float16 of a float32 array: NumPy casts in buffered chunks, each rounded."""
    x = _RNG.random(20000).astype(np.float32)
    function = lambda a: np.sum(a, dtype=np.float16)  # noqa: E731
    assert kiln.compile(function)(x) == function(x)
