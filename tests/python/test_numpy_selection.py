"""NumPy's selection and layout functions in the tracer (kiln/_numpy_selection.py): what the
conformance samples leave out: NumPy's exceptions, in-place updates through views, read-only
views, out=, NumPy scalars, run-time index checks, graph breaks, fusion, and a function that
combines several of them."""
import warnings

import numpy as np
import pytest

import kiln

from conformance import check

RNG = np.random.default_rng(13)
X = RNG.uniform(-3, 3, (4, 6))
LEGACY = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def updated(function):
    """`function` applied to a copy of x, which it updates in place: returns the copy."""
    def update(x):
        y = x.copy()
        function(y)
        return y
    return update


def small(x):
    return (x > 0).astype(np.uint8)


@pytest.mark.parametrize("function", [
    lambda x: np.take(x, [30]), lambda x: np.take(x, [1], axis=2),
    lambda x: np.take(x, np.array([1.5])), lambda x: np.take(x, [1], mode="foo"),
    lambda x: np.take(x[:0], [1], axis=0, mode="wrap"),
    lambda x: np.take(x, [1, 2], out=np.zeros(3)),
    lambda x: np.take(small(x), [1], out=np.zeros(1)),
    lambda x: np.take_along_axis(x, np.array([[1.0]]), 1),
    lambda x: np.take_along_axis(x, np.array([1]), 1),
    lambda x: np.take_along_axis(x, np.array([[1]]), None),
    lambda x: np.take_along_axis(x, np.array([[7]]), 1),
    updated(lambda y: np.put(y, [30], 1)), updated(lambda y: np.put(y, np.array([0.5]), 1)),
    updated(lambda y: np.put_along_axis(y, np.array([[9]]), 1, 1)),
    lambda x: np.choose(np.array([0, 3]), [x[0, :2], x[1, :2]]),
    lambda x: np.choose(np.array([0, -1]), [x[0, :2], x[1, :2]]),
    lambda x: np.choose(np.array([0.0]), [x]), lambda x: np.choose([0, 1, 0], [x[0], x[1]]),
    lambda x: np.choose([0], [x], out=np.zeros(3)),
    lambda x: np.select([x > 0], [x, x]), lambda x: np.select([x], [x]),
    lambda x: np.compress(np.ones((2, 2), bool), x), lambda x: np.compress([0] * 24 + [1], x),
    lambda x: np.diag(x[None]), lambda x: np.diag(x[0], 1.5),
    lambda x: np.fliplr(x[0]), lambda x: np.flipud(x[0, 0]),
    lambda x: np.rot90(x, axes=(0, 0)), lambda x: np.rot90(x, axes=(0, 1, 2)),
    lambda x: np.rot90(x, axes=(0, 2)), lambda x: np.rot90(x, axes=(1, -1)),
    lambda x: np.split(x, 4, axis=1), lambda x: np.split(x, 0), lambda x: np.array_split(x, 0),
    lambda x: np.split(x, [1], axis=2), lambda x: np.hsplit(x[0, 0], 2),
    lambda x: np.vsplit(x[0], 2), lambda x: np.dsplit(x, 2),
    lambda x: np.column_stack([x, x[:2]]), lambda x: np.append(x, x[0], axis=0),
    lambda x: np.dstack([x, x[:2]]),
    lambda x: np.insert(x, 9, 1, axis=1), lambda x: np.insert(x, [[1]], 1),
    lambda x: np.insert(x, [1, 2], [1, 2, 3], axis=1), lambda x: np.insert(x, 1, x[0], axis=1),
    lambda x: np.insert(x, [1, 30], 0), lambda x: np.insert(x, [1.5], 0),
    lambda x: np.insert(x, 1, x[:, :2], axis=1), lambda x: np.insert(x, 1, 0, axis=2),
    lambda x: np.delete(x, 9, axis=1), lambda x: np.delete(x, [1.5]),
    lambda x: np.delete(x, np.array([True, False]), axis=1), lambda x: np.delete(x, [1, 30]),
    lambda x: np.resize(x, (-1, 2)), lambda x: np.resize(x, (2.0, 2)),
    lambda x: np.broadcast_arrays(x, x[:, :2]), lambda x: np.meshgrid(x[0], indexing="foo"),
    updated(lambda y: np.copyto(y, 1.5 + 2j)), updated(lambda y: np.copyto(y, y[:, :2])),
    updated(lambda y: np.copyto(y, 1, where=y)),
    updated(lambda y: np.copyto(y, 1, where=np.ones((1, 1, 6), bool))),
    lambda x: np.copyto(small(x), x), lambda x: np.copyto(small(x), 1.0, casting="safe"),
    lambda x: np.vander(x), lambda x: np.vander(x[0], -1), lambda x: np.vander(x[0], 2.0),
    updated(lambda y: np.fill_diagonal(y[0], 1)),
    lambda x: np.fill_diagonal(np.zeros((2, 2, 3)), x[0, 0]),
    # NumPy 2 refuses Python ints out of the array's range (NumPy 1.x wraps them, and warns)
    lambda x: updated(lambda y: np.put(y, [0], 300))(small(x)),
    lambda x: np.insert(small(x), 1, -1), lambda x: np.insert(small(x), [1, 2], 300),
    lambda x: updated(lambda y: np.fill_diagonal(y, 256))(small(x)),
    lambda x: updated(lambda y: np.copyto(y, 300))(small(x)),
])
def test_errors_are_numpys(function):
    try:
        expected = function(X.copy())
    except Exception as error:
        with pytest.raises(type(error)):
            kiln.compile(function, fullgraph=True)(X.copy())
    else:  # NumPy 1.x wraps Python integers out of the dtype's range (some with a warning)
        assert LEGACY
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got = kiln.compile(function, fullgraph=True)(X.copy())
        np.testing.assert_array_equal(got, expected)


def test_updates_write_through_views():
    # Split parts, flips and rot90 are views: writes to them reach the array, and the in-place
    # functions update the views they are given.
    def through_views(x, i):
        top, bottom = np.split(x, 2)
        top[0] = 100
        np.fliplr(x)[:, 0] = -1           # the last column
        np.rot90(x)[0, 1] = 7             # x[1, -1]
        np.flipud(bottom)[0] *= 2         # the last row
        np.array_split(x, 4, axis=1)[1][:] = 3
        np.put(x[::2], [0, -1], [8, 9])
        np.put(x[1:, :3], i, 10.5, mode="wrap")
        np.copyto(x[1:, 4:], x[:1, :2], where=[True, False])
        np.fill_diagonal(x[1:, 1:], [0, -2])
        np.put_along_axis(x[:, ::-1], np.array([[1], [0], [2], [1]]), 4, axis=1)
        np.put_along_axis(np.rot90(x), i[:1, :1], x[:1, :1] * 5, axis=0)
        return x
    check(through_views, [(X.copy(), np.array([[5, -1], [13, 2]]))])


def test_the_callers_array_is_updated():
    def updates(x, y):
        np.put(x, [0, 5], [-1, -2])
        np.copyto(x[2], 9.5)
        np.fill_diagonal(y, 4)
        np.put_along_axis(y, np.array([[0], [2]]), 5, axis=1)
    x, y = X.copy(), np.arange(6, dtype=np.int32).reshape(2, 3)
    expected_x, expected_y = x.copy(), y.copy()
    updates(expected_x, expected_y)
    assert kiln.compile(updates, fullgraph=True)(x, y) is None
    np.testing.assert_array_equal(x, expected_x)
    np.testing.assert_array_equal(y, expected_y)


def test_read_only_views():
    # np.diag of a matrix is NumPy's read-only diagonal view.
    def write_diagonal(x):
        np.diag(x)[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        write_diagonal(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        kiln.compile(write_diagonal, fullgraph=True)(X.copy())

    # NumPy writes (with a warning) into the elements a broadcast_arrays view repeats: eager.
    def write_broadcast(x):
        wide, _ = np.broadcast_arrays(x[0], x)
        wide[1, 2] = 5
        return x
    with pytest.raises(kiln.GraphBreak, match="broadcast_arrays"):
        kiln.compile(write_broadcast, fullgraph=True)(X.copy())
    with pytest.warns(DeprecationWarning):
        expected = write_broadcast(X.copy())
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(kiln.compile(write_broadcast)(X.copy()), expected)


def test_out_arguments():
    def outs(x, i):
        taken = np.zeros((4, 2), np.int32)       # int32 casts safely to x's float64: allowed
        chosen = np.zeros(6, np.int8)             # choose casts its result unsafely
        compressed = np.zeros((4, 2))
        results = (np.take(x, i, axis=1, out=taken), np.choose(i[:1] % 2, [x[0], x[1]],
                                                                 out=chosen, mode="wrap"),
                   np.compress([True, False, True], x, axis=1, out=compressed[:, ::-1]))
        return results + (taken, chosen, compressed)
    check(outs, [(X.copy(), np.array([1, -2]))])


def test_numpy_scalars_where_numpy_gives_them():
    def scalars(x):
        return (np.take(x, 5), np.take(x[0], np.int8(-1)), np.take(x, [5]),
                np.choose(1, [x[0, 0], x[1, 1]]), np.select([x[0, 0] > 0], [x[0, 0]]),
                np.take(x, np.array(3), axis=None), np.kron(x[0, 0], x[1, 1]))
    got = kiln.compile(scalars, fullgraph=True)(X)
    expected = scalars(X)
    assert [type(g) for g in got] == [type(e) for e in expected]
    for value, reference in zip(got, expected):
        np.testing.assert_array_equal(value, reference)


@pytest.mark.parametrize("function", [
    lambda x, i: np.take(x, i), lambda x, i: np.take(x, i[:, None], axis=1),
    lambda x, i: np.take_along_axis(x, i[None].repeat(4, 0), axis=1),
    lambda x, i: updated(lambda y: np.put(y, i, 0))(x),
    lambda x, i: updated(lambda y: np.put_along_axis(y, i[None].repeat(4, 0), 0, axis=1))(x),
], ids=["take", "take-axis", "take_along_axis", "put", "put_along_axis"])
def test_traced_indices_are_checked_when_the_graph_runs(function):
    compiled = kiln.compile(function, fullgraph=True)
    inside = np.array([1, -3])
    np.testing.assert_array_equal(compiled(X, inside), function(X, inside))
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(X, np.array([1, 99]))
    with pytest.raises(IndexError):
        function(X, np.array([1, 99]))


@pytest.mark.parametrize("function", [
    lambda x, n: np.split(x, n[0]), lambda x, n: np.array_split(x, [n[0], 3], axis=1),
    lambda x, n: np.insert(x, n, 0), lambda x, n: np.delete(x, n[1:], axis=1),
    lambda x, n: np.resize(x, n), lambda x, n: np.compress(n > 1, x[:, :2], axis=1),
    lambda x, n: np.vander(x[0], n[0]), lambda x, n: np.diag(x, n[0]),
    lambda x, n: np.rot90(x, n[1]),
    lambda x, n: np.choose(n % 2, [x[0, :2], x[1, :2]]),       # mode='raise'
    lambda x, n: np.insert(x, np.array([True, False, True]), 0),
    lambda x, n: np.vander(x[0] * 1j),
], ids=["split", "array_split", "insert", "delete", "resize", "compress", "vander", "diag",
        "rot90", "choose-raise", "insert-bool", "vander-complex"])
def test_graph_breaks(function):
    n = np.array([2, 3])
    with pytest.raises(kiln.GraphBreak):
        kiln.compile(function, fullgraph=True)(X, n)
    got, expected = kiln.compile(function)(X, n), function(X, n)
    if isinstance(expected, np.ndarray):
        got, expected = [got], [expected]
    for value, reference in zip(got, expected, strict=True):
        np.testing.assert_array_equal(value, reference)


def test_put_along_axis_without_axis():
    # NumPy 1.x writes through arr.flat; NumPy 2 through a flattened copy of arr, which is arr's
    # memory only when arr is contiguous: kiln runs it eagerly there.
    def flat(x):
        np.put_along_axis(x, np.array([0, 7]), -1, None)
        return x
    expected = flat(X.copy())
    if LEGACY:
        np.testing.assert_array_equal(kiln.compile(flat, fullgraph=True)(X.copy()), expected)
    else:
        with pytest.raises(kiln.GraphBreak):
            kiln.compile(flat, fullgraph=True)(X.copy())
        np.testing.assert_array_equal(kiln.compile(flat)(X.copy()), expected)


@pytest.mark.parametrize("function", [
    lambda x: np.rot90(x, 3), lambda x: np.fliplr(x), lambda x: np.split(x, 3, axis=1)[1],
    lambda x: np.resize(x, (5, 7)), lambda x: np.insert(x, 2, 7.0, axis=1),
    lambda x: np.delete(x, [1, 2], axis=0), lambda x: np.diag(x[0], -1),
    lambda x: np.kron(x, x[:2, :2]), lambda x: np.meshgrid(x[0], x[:, 0])[0],
    lambda x: np.select([x > 0, x < -1], [x, 3 * x]),
    lambda x: np.choose((x > 0).astype(int), [x, 2 * x], mode="clip"),
], ids=["rot90", "fliplr", "split", "resize", "insert", "delete", "diag", "kron", "meshgrid",
        "select", "choose"])
def test_index_arithmetic_fuses_into_one_kernel(function):
    report = kiln.explain(lambda x: function(x) * 2)(X)
    assert report.graphs and len(report.graphs[0].kernels) == 1, str(report)
    assert "gather" not in str(report)


def test_a_function_combining_several():
    def features(x, labels):
        """Per-row statistics of x's column blocks, on a grid, with the labels' rows picked."""
        left, middle, right = np.array_split(x, 3, axis=1)
        picked = np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=1)
        rows = np.choose(labels % 3, [left.sum(axis=1), middle.max(axis=1),
                                      right.min(axis=1)], mode="wrap")
        grid_x, grid_y = np.meshgrid(rows, np.take(x, [0, -1], axis=1).ravel(), indexing="ij")
        table = np.column_stack([rows, picked, np.diag(np.rot90(x))[:x.shape[0]]])
        table = np.insert(table, 1, np.select([rows > 0], [rows], default=-1.0), axis=1)
        table = np.delete(np.append(table, np.fliplr(x), axis=1), slice(None, None, 2), axis=1)
        sparse = np.delete(np.resize(x, 40), np.arange(0, 40, 3))    # many runs: one gather
        np.copyto(table[:, :2], 0.0, where=table[:, :2] < 0)
        np.fill_diagonal(table, np.vander(rows[:2], 2)[:, 0])
        np.put(table, [0, -1], picked[:2, 0])
        return (table, grid_x * grid_y, np.kron(np.eye(2), table[:2, :2]), sparse,
                np.dstack(np.split(x, 2, axis=1)).sum(axis=2), np.flipud(table)[0])
    labels = np.array([5, 1, 2, 0])
    check(features, [(X.copy(), labels), (RNG.uniform(-1, 1, (4, 6)), labels[::-1].copy())])
