"""np.lib.stride_tricks.as_strided of traced arrays (kiln._as_strided): "100 NumPy exercises"
builds sliding windows and blocks from x.strides, which a traced array reports as a
C-contiguous array's. Reads are a gather in the graph; writes through a view whose elements do
not overlap scatter back; what NumPy answers by its memory (overlapping writes, strides that are
not a multiple of the element size, positions outside the array) runs eagerly."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import kiln


def windows(a):
    return as_strided(a, shape=(a.size - 2, 3), strides=(a.strides[0], a.strides[0]))


def blocks(Z):
    i, j = Z.shape[0] - 2, Z.shape[1] - 2
    return as_strided(Z, shape=(i, j, 3, 3), strides=Z.strides + Z.strides).sum(axis=(2, 3))


def of_a_transpose(Z):
    T = (Z * 2).T
    return np.lib.stride_tricks.as_strided(T, shape=(3, 2), strides=T.strides)


def write_blocks(x):
    y = x.reshape(4, 4).copy()
    b = as_strided(y, shape=(2, 2, 2, 2), strides=(2 * y.strides[0], 2 * y.strides[1]) + y.strides)
    b[0, 1] = -5.0
    b[..., 0, 0] += 10
    return y, b.sum(axis=(2, 3))


def write_windows(x):
    y = x * 1.0
    w = as_strided(y, shape=(y.size - 2, 3), strides=(y.strides[0],) * 2)
    w[:, 1] = 100.0  # NumPy writes the elements in order; the last write to each stays
    return y, w


def read_only_repeat(x):
    return np.lib.stride_tricks.as_strided(x, shape=(3, x.size), strides=(0, x.strides[0]),
                                           writeable=False) * 2


def half_steps(x):
    return as_strided(x, shape=(3,), strides=(x.itemsize // 2,))


def of_a_view(Z):
    V = Z[1:, ::2]
    B = as_strided(V, shape=(2, V.shape[1]), strides=(2 * V.strides[0], V.strides[1]))
    B *= 10  # V's rows 0 and 2: Z's rows 1 and 3, even columns
    return Z, B.sum()


def of_a_selection(Z):
    m = Z[Z > 3]  # its size is the data's: eager
    return np.lib.stride_tricks.as_strided(m, shape=(2,), strides=(m.strides[0],))


def _breaks(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*(a.copy() for a in arguments))
    return report.graph_break_count


@pytest.mark.parametrize("function, argument, whole", [
    (windows, np.arange(10.0), True),
    (blocks, np.random.default_rng(1).integers(0, 9, (6, 7)), True),
    (of_a_transpose, np.arange(6.0).reshape(2, 3), True),
    (write_blocks, np.arange(16.0), True),
    (read_only_repeat, np.arange(4, dtype=np.int32), True),
    (write_windows, np.arange(8.0), False),
    (half_steps, np.arange(4.0), False),
    (of_a_view, np.arange(30.0).reshape(5, 6), True),
    (of_a_selection, np.arange(30.0).reshape(5, 6), False),
])
def test_as_strided_agrees_with_numpy(function, argument, whole):
    compiled = kiln.compile(function)
    for x in (argument, argument[::-1] + 1):
        got, expected = compiled(x.copy()), function(x.copy())
        for g, e in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            assert g.dtype == e.dtype
            np.testing.assert_array_equal(g, e)
    assert (_breaks(function, argument) == 0) == whole  # one graph, or eager where it breaks


def test_a_read_only_view_refuses_writes_as_numpy_does():
    def write(x):
        v = as_strided(x * 1, shape=(2,), strides=(x.strides[0],), writeable=False)
        v[0] = 1
        return v
    with pytest.raises(ValueError, match="read-only"):
        write(np.arange(3.0))
    with pytest.raises(ValueError, match="read-only"):
        kiln.compile(write)(np.arange(3.0))


def test_positions_outside_the_array_run_eagerly():
    def outside(x):
        return as_strided(x, shape=(2,), strides=(4 * x.strides[0],))
    assert _breaks(outside, np.arange(3.0)) == 1
    np.testing.assert_array_equal(kiln.compile(outside)(np.arange(8.0)[:3])[0], 0.0)
