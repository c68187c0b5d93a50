"""np.lib.stride_tricks.as_strided of traced arrays (kiln._as_strided): "100 NumPy exercises"
builds sliding windows and blocks from x.strides, which a traced array reports as NumPy does,
and as_strided addresses the memory of an argument of any layout as NumPy does. Reads are a
gather in the graph; writes through a view whose elements do
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


def strides_and_flags(x):
    return x * (2.0 if x.flags.c_contiguous else 3.0) + x.strides[0], np.array(x.strides)


def _span(x, sign):
    """How many elements lie from x's first element to the end of its memory upward (sign 1)
    or downward (-1), that element included."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(x.shape, x.strides)
                   if s * sign > 0) // x.itemsize


def walk(x):
    """x's memory upward from its first element, in address order."""
    return as_strided(x, shape=(_span(x, 1),), strides=(x.itemsize,)) * 1


def reversed_walk(x):
    return as_strided(x, shape=(_span(x, -1),), strides=(-x.itemsize,)) * 1


def own_windows(x):
    return as_strided(x, shape=(x.shape[0] - 1, 2) + x.shape[1:],
                      strides=(x.strides[0],) + x.strides).sum(axis=1)


def write_through_a_walk(x):
    w = as_strided(x, shape=((_span(x, 1) + 1) // 2,), strides=(2 * x.itemsize,))
    w += 100.0  # every other element of x's memory upward, in the argument itself
    return w.sum()


_BASE = np.arange(24.0).reshape(4, 6)
_VIEWS = {"row-major": "", "transpose": ".T", "every other column": "[:, ::2]",
          "reversed rows": "[::-1]", "reversed both": "[::-1, ::-1]",
          "transposed and reversed": ".T[::-1]", "every other row": "[::2]",
          "a column": "[:, 1]", "every third element": ".reshape(-1)[::3]"}
# x's memory between its elements: NumPy reads it, kiln does not hold it (eager)
_GAPS = {("walk", "every other column"), ("walk", "every other row"), ("walk", "a column"),
         ("walk", "every third element"), ("write_through_a_walk", "a column"),
         ("write_through_a_walk", "every other row"),
         ("write_through_a_walk", "every third element")}


@pytest.mark.parametrize("layout", list(_VIEWS))
@pytest.mark.parametrize("function", [strides_and_flags, walk, reversed_walk, own_windows,
                                      write_through_a_walk], ids=lambda f: f.__name__)
def test_strides_and_as_strided_follow_an_arguments_memory_as_numpy_does(function, layout):
    """x.strides and as_strided of an argument that is a view of another array (of its
    memory), whatever its layout: NumPy's values and writes, or a graph break where NumPy reads
    memory between x's elements (every other column's even positions are its elements)."""
    compiled = kiln.compile(function)
    for call in range(2):
        mine, numpys = _BASE.copy() + call, _BASE.copy() + call
        pick = lambda a: eval("a" + _VIEWS[layout])  # noqa: E731 (the same view of each)
        got, expected = compiled(pick(mine)), function(pick(numpys))
        for g, e in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            np.testing.assert_array_equal(g, e)
        np.testing.assert_array_equal(mine, numpys)  # writes reached the argument's memory
    report = kiln.explain(kiln.compile(function))(pick(_BASE.copy()))
    assert (report.graph_break_count == 0) == ((function.__name__, layout) not in _GAPS)




def _random_view(rng):
    """A random base array and a function making the same view of it (or of its copy): a slice
    of any step on each axis, maybe transposed."""
    base = rng.standard_normal((int(rng.integers(3, 7)), int(rng.integers(3, 7))))
    index = tuple(slice(int(rng.integers(0, 2)), None, int(rng.choice([-3, -2, -1, 1, 2, 3])))
                  for _ in range(2))
    transposed = bool(rng.integers(2))
    return base, lambda b: b[index].T if transposed else b[index]


def _inside(base, view, shape, strides):
    """Whether every position of the as_strided view lies in base's memory."""
    first = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    low = first + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = first + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return 0 <= low and high < base.nbytes


def read_and_write(x, shape, strides):
    v = as_strided(x, shape, strides)
    doubled = v * 2
    v[0] = -1.0
    return doubled, v.sum()


def test_random_views_and_strides_read_and_write_as_numpy_does():
    """Random views of random layouts and random as_strided shapes and strides inside their
    base's memory: kiln's values and writes equal NumPy's, compiled, or eager where the view
    reaches memory between x's elements or writes one element twice."""
    rng = np.random.default_rng(74)
    checked = compiled = 0
    while checked < 40:
        base, view_of = _random_view(rng)
        ndim = int(rng.integers(1, 3))
        shape = tuple(int(n) for n in rng.integers(1, 4, ndim))
        strides = tuple(int(s) * 8 for s in rng.integers(-7, 8, ndim))
        if not _inside(base, view_of(base), shape, strides):
            continue
        checked += 1
        mine, numpys = base.copy(), base.copy()
        got = kiln.compile(read_and_write)(view_of(mine), shape, strides)
        expected = read_and_write(view_of(numpys), shape, strides)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)
        np.testing.assert_array_equal(mine, numpys)
        report = kiln.explain(kiln.compile(read_and_write))(view_of(base.copy()), shape, strides)
        compiled += report.graph_break_count == 0
    assert compiled >= 10, compiled  # most layouts and strides stay in the graph


def test_views_of_a_broadcast_read_its_shared_elements():
    """An axis of stride 0 (np.broadcast_to's) holds one element's memory; before, mapping a
    view onto x's elements divided by that stride (ZeroDivisionError)."""
    def rows_of_a_broadcast(x):
        b = np.broadcast_to(x, (3, 4))
        return as_strided(b, (2, 4), b.strides) * 1

    def columns_of_a_broadcast(x):
        b = np.broadcast_to(x[:, None], (4, 3))
        return as_strided(b, (3, 2), (b.strides[0], 0)) * 1

    def repeat_of_an_element(x):
        return as_strided(x[1], (3,), (0,)) * 1

    for function in (rows_of_a_broadcast, columns_of_a_broadcast, repeat_of_an_element):
        np.testing.assert_array_equal(kiln.compile(function)(np.arange(4.0)),
                                      function(np.arange(4.0)))
        assert _breaks(function, np.arange(4.0)) == 0
