"""A dtype in the other byte order asked for inside a compiled function (`x.astype(">f4")` to
write a big-endian file format, `dtype=">f8"` of a creation or a reduction): NumPy's result has
that dtype and its bytes are big-endian; kiln named it float32 and built the native one (dtype
float32, little-endian bytes). Such a dtype is a graph break: NumPy makes that array."""
import sys

import numpy as np
import pytest

import kiln

OTHER = ">" if sys.byteorder == "little" else "<"
X = np.arange(4.0) + 0.5


def _same(expected, got):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for e, g in zip(expected, got):
            _same(e, g)
        return
    assert type(got) is type(expected)
    if isinstance(expected, (np.ndarray, np.generic)):
        assert got.dtype == expected.dtype and got.dtype.str == expected.dtype.str
        np.testing.assert_array_equal(got, expected)
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()
    else:
        assert got == expected


CASES = {
    "astype_bytes": lambda x: x.astype(OTHER + "f4").tobytes(),
    "astype": lambda x: (x * 2).astype(OTHER + "i2"),
    "asarray": lambda x: np.asarray(x * 2, dtype=OTHER + "f8"),
    "zeros": lambda x: np.zeros(3, dtype=OTHER + "f8"),
    "creation": lambda x: (np.linspace(0, 1, 3, dtype=OTHER + "f8"),
                           np.full(2, 3.0, dtype=OTHER + "f4"),
                           np.ones_like(x, dtype=OTHER + "i2")),
    "sum_dtype": lambda x: np.sum(x, dtype=OTHER + "f8"),
    "mean_dtype": lambda x: x.mean(dtype=OTHER + "f8"),
    "then_math": lambda x: (x.astype(OTHER + "f4") * 2, x.astype(OTHER + "f4").sum()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_other_byte_order_dtype_as_numpy(name):
    fn = CASES[name]
    compiled = kiln.compile(fn)
    for _ in range(2):
        try:
            expected = fn(X.copy())
        except TypeError as error:   # NumPy refuses a byte order in a ufunc's dtype=
            with pytest.raises(type(error)):
                compiled(X.copy())
            continue
        _same(expected, compiled(X.copy()))


def test_native_spelled_byte_order_still_compiles():
    native = "<" if sys.byteorder == "little" else ">"
    fn = lambda x: x.astype(native + "f4") * 2  # noqa: E731
    compiled = kiln.compile(fn, fullgraph=True)
    _same(fn(X.copy()), compiled(X.copy()))
