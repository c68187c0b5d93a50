"""NumPy advanced indexing on tracers (kiln/_indexing.py): several integer arrays (concrete or
traced) broadcast together, ints beside them, placement of the broadcast shape (in place when
adjacent, else first), x[key] = v and x[key] += v with duplicates, and NumPy's errors."""
import re

import numpy as np
import pytest

import kiln
from conformance import check, sample_array


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def view_of(array):
    """A non-contiguous array with array's values (every other row of a larger one, reversed)."""
    base = np.zeros((2 * array.shape[0],) + array.shape[1:], array.dtype)
    base[::2] = array[::-1]
    return base[::2][::-1]


I2 = np.array([[0, 1], [2, 0]])
J2 = np.array([[3], [1]])

KEYS_2D = [
    ([0, 2], [1, 3]),
    (I2, J2),                              # (2,2) and (2,1) broadcast to (2,2)
    ([[0], [2]], [1, 3, 0]),               # (2,1) and (3,) broadcast to (2,3)
    ([-1, 0], [-4, -1]),                   # negative indices wrap
    (1, [0, 3, 3]),                        # an int beside an array: a 0-d index array
    ([1, 2], 3),
    (None, [1, 2]),
    ([1, 2], None),
    (None, [2, 0], [1, 3]),
    ([2, 0], None, [1, 3]),                # None between: the broadcast shape goes first
    (Ellipsis, [0, 1], [1, 0]),
    ([0], Ellipsis, [1]),                  # an empty Ellipsis still splits them
    ([], []),
    ([],),
    ([True, False, True], [0, 3]),          # a mask (a list: an array default is an input)
    (slice(None, None, -1), [0, 2, 2]),
    ([2, 0], slice(1, None, 2)),
]

KEYS_3D = [
    (slice(None), [0, 1], [2, 3]),
    ([0, 1], slice(None), [2, 3]),         # non-adjacent
    (0, slice(None), [1, 2]),              # int and array split by a slice
    (slice(None), 1, [[0, 3], [2, 1]]),    # adjacent int and array, in place
    (Ellipsis, [0, 2], [1, 0]),
    ([1, 0], [2, 2], [3, 0]),
    ([[1], [0]], slice(None, None, 2), [[3, 0, 1]]),
    (slice(None), [0, 1, 2], Ellipsis, [1, 2, 3]),
    (None, [1], slice(1, 3), None, [-1]),
    (slice(None), [], [0]),
]


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_getitem_keys(rng, dtype):
    x2 = sample_array(rng, dtype, (3, 4))
    x3 = sample_array(rng, dtype, (2, 3, 4))
    cases = [((lambda x, k=key: x[k]), (x2,)) for key in KEYS_2D]
    cases += [((lambda x, k=key: x[k]), (x3,)) for key in KEYS_3D]
    cases += [((lambda x, k=key: x[k]), (view_of(x3),)) for key in KEYS_3D]
    for function, arrays in cases:
        check(function, [arrays])


def test_traced_index_arrays(rng):
    x = sample_array(rng, "float64", (3, 4, 5))
    i = np.array([2, 0, -1, 1])
    j = np.array([[4], [-5]])

    def traced_inputs(x, i, j):
        return x[i, :, 1], x[:, 2, j], x[i, 1, j], x[:, i[:2], j[:, 0]], x[i, j % 4]
    check(traced_inputs, [(x, i, j)])

    def from_argmax(x):
        rows = np.argmax(x[:, :, 0], axis=0)     # traced, values in [0, 3)
        cols = np.argmin(x[0], axis=1)           # traced, values in [0, 5)
        return x[rows, :, cols], x[rows[:, None], 2, cols], x[..., cols[:2]], x[rows, [1, 2, 3, 0]]
    check(from_argmax, [(x,)])


def test_setitem(rng):
    x = sample_array(rng, "float64", (3, 4))
    y = sample_array(rng, "int32", (2, 3, 4))

    def assign(x, y):
        x[[0, 1], [2, 3]] = np.array([10.0, 20.0])
        x[[[0], [2]], [1, 0]] = -1
        x[-1, [0, -1]] = 7.5                       # int and arrays; value cast to float64
        y[:, [0, 2], [1, 3]] = np.arange(2)        # in place: value broadcast to (2, 2)
        y[[1, 0], :, [3, 0]] = np.array([[5], [6]])    # split: result shape (2, 3)
        y[None, 0, [1, 2]] = np.ones((1, 1, 2, 4), np.int32)   # extra leading 1s dropped
        return x, y
    check(assign, [(x, y)])
    check(assign, [(view_of(x), view_of(y))])


def test_basic_setitem_drops_leading_ones(rng):
    """x[...] = v and x[1:] = v accept a value with extra leading size-1 axes (fuzzer)."""
    def assign(x, y):
        x[...] = y[None, None]
        x[1:] = x[None, :1] * 2
        return x
    check(assign, [(sample_array(rng, "float64", (3, 4)), sample_array(rng, "int8", (4,)))])


def test_numpy_scalars_from_indexing(rng):
    """x[1, 2], x[()] and x[i] (i a 0-d integer array) give NumPy scalars, x[...] and
    x[1, ...] 0-d arrays (fuzzer)."""
    def index(x, i):
        return x[1, 2], x[0][()], x[0][...], x[1, ...][2], x[0, ...], x[0][i], x[i, i]
    arrays = (sample_array(rng, "float64", (3, 4)), np.array(2))
    got = kiln.compile(index, fullgraph=True)(*arrays)
    expected = index(*arrays)
    assert [type(g) for g in got] == [type(e) for e in expected]
    for value, reference in zip(got, expected):
        np.testing.assert_array_equal(value, reference)


def test_scalars_and_read_only_views_follow_numpy(rng):
    """x[0, 0] is a copy; np.diagonal and np.broadcast_to are views that follow later writes
    to x; np.clip with both bounds beyond the dtype's range is a copy (fuzzer)."""
    def views(x):
        y = x + 1
        corner, diagonal, wide = y[0, 0], np.diagonal(y), np.broadcast_to(y[0], (2, 4))
        copy = np.clip(y, -1000, 1000)
        y *= 2
        copy += 1
        return corner, diagonal, wide, y, copy
    check(views, [(sample_array(rng, "int32", (3, 4)),)])


def test_zero_d_traced_index_gives_a_view(rng):
    """NumPy takes a NumPy integer scalar index for an integer: x[i] is a view that writes
    through (fuzzer: input a0 after `v = a0[i]; v[v != 1] = 1`); a 0-d array index copies."""
    def write(x, i):
        row = x[np.abs(i) % 3]
        row[row > 0] = 0
        column, copy = x[:, i, 1:], x[np.array(1)]
        column *= 2
        copy *= 2
        return x, row, column, copy
    check(write, [(sample_array(rng, "float64", (3, 4, 2)), np.array(-2))])


def test_numpy_scalars_are_immutable(rng):
    """A NumPy scalar is never written through: `s += 1` rebinds it, and views of it view a
    temporary copy (fuzzer)."""
    def scalars(x):
        total = x.sum()
        alias, wide = total, np.expand_dims(total, -1)
        wide *= 3
        total += 1
        return alias, wide, total
    check(scalars, [(sample_array(rng, "int32", (3, 4)),)])


def test_read_only_views_refuse_writes(rng):
    def write(x):
        d = np.diagonal(x)
        d += 1
        return d
    _raises(write, sample_array(rng, "float64", (3, 4)), ValueError, "read-only")


def test_setitem_duplicates_last_wins(rng):
    x = sample_array(rng, "float64", (3, 4))
    i = np.array([0, 2, 0, 0])
    j = np.array([1, 3, 1, 1])

    def duplicates(x, i, j):
        x[[0, 0, 1], [1, 1, 2]] = np.array([1.0, 2.0, 3.0])
        x[i, j] += 1                              # NumPy: x[0, 1] grows by 1 once
        x[i, 0] = np.array([4.0, 5.0, 6.0, 7.0])
        return x
    check(duplicates, [(x, i, j)])


def test_add_at_adds_every_duplicate(rng):
    """np.add.at / np.subtract.at are one traced scatter-add (fullgraph: no eager step) with
    NumPy's unbuffered sums, over every key form setitem takes."""
    i = rng.integers(0, 4, 12)

    def scatter_adds(x, w, i, counts):
        np.add.at(x, i, w)                                    # rows, repeated
        np.subtract.at(x, (i[:5], slice(1, 3)), 0.5)          # a slice beside the index
        np.add.at(x, (slice(None), [0, 0, 2]), x[:, :3])      # a column index, traced values
        np.add.at(x, ([1, 3, 1], [0, -1, 0]), 2)              # two index arrays, negative
        np.add.at(x[1:], i % 3, 1.0)                          # through a view
        np.add.at(counts, i, 1)                               # an integer histogram
        np.subtract.at(counts, i[::2], True)
        return x, counts
    for dtype in ["float64", "float32"]:
        check(scatter_adds, [(sample_array(rng, dtype, (4, 5)), sample_array(rng, dtype, (12, 5)),
                              i, np.zeros(4, np.int32))])
    u8 = np.zeros(4, np.uint8)
    check(lambda u8, i: np.subtract.at(u8, i, 3) or u8, [(u8, i)])   # wraps, as NumPy's does


def test_add_at_that_casts_each_step_is_a_loop(rng):
    """NumPy computes each step of an int array's add.at of floats in float64 and casts back
    (0 + 1.5 -> 1, 1 + 1.5 -> 2): not a sum, so kiln traces NumPy's loop (kiln._ufunc_loops;
    it ran eagerly, a graph break)."""
    def casting(x, i):
        y = x * 1
        np.add.at(y, i, 1.5)
        return y + 1
    x, i = np.zeros(3, np.int32), np.array([0, 0, 2])
    check(casting, [(x, i)])
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 3"):
        kiln.compile(lambda x: np.add.at(x, [0, 4], 1.0) or x)(x.astype(float))


def test_augmented_assignment_traced_index(rng):
    x = sample_array(rng, "float32", (4, 5))

    def update(x):
        rows = np.argmax(x, axis=0)              # traced (5,)
        x[rows, np.arange(5)] += 1
        x[rows[:2], [0, -1]] *= 2
        return x
    check(update, [(x,)])


def test_writes_through_views(rng):
    x = sample_array(rng, "float64", (4, 6))

    def through_view(x):
        part = x[1:, ::2]
        part[[0, 2], [1, 2]] = 0
        return x, part
    check(through_view, [(x,)])


def _raises(function, x, error, message):
    with pytest.raises(error, match=message):
        kiln.compile(function, fullgraph=True)(x)
    with pytest.raises(error, match=message):
        function(x.copy())


def _raises_as_numpy(function, x, error):
    """kiln raises what the installed NumPy raises, word for word (its wording changes)."""
    with pytest.raises(error) as numpy_error:
        function(x.copy())
    with pytest.raises(error, match=re.escape(str(numpy_error.value))):
        kiln.compile(function, fullgraph=True)(x)


def test_errors(rng):
    x = sample_array(rng, "float64", (3, 4))
    _raises(lambda x: x[[0, 1], [1, 4]], x, IndexError,
            "index 4 is out of bounds for axis 1 with size 4")
    _raises(lambda x: x[None, [-4]], x, IndexError,
            "index -4 is out of bounds for axis 0 with size 3")
    _raises(lambda x: x[[0, 1], 5], x, IndexError,
            "index 5 is out of bounds for axis 1 with size 4")
    _raises(lambda x: x[[0, 1], [0, 1, 2]], x, IndexError, r"shape mismatch: indexing arrays "
            r"could not be broadcast together with shapes \(2,\) \(3,\) ")
    _raises(lambda x: x[np.zeros((2, 3), int), np.zeros(4, int)], x, IndexError,
            r"shapes \(2,3\) \(4,\) ")
    _raises(lambda x: x[[0], np.array([1.0])], x, IndexError,
            "arrays used as indices must be of integer")

    def bad_value(x):
        x[[0, 1], [1, 2]] = np.ones(3)
    _raises(bad_value, x, ValueError, r"shape mismatch: value array of shape \(3,\) could not "
            r"be broadcast to indexing result of shape \(2,\)")

    def out_of_bounds_put(x):
        x[[3], :] = 1
    _raises(out_of_bounds_put, x, IndexError, "index 3 is out of bounds for axis 0 with size 3")

    # A concrete mask's nonzero() alone would pick rows 0 and 1 of any longer axis.
    def short_mask(x):
        return x[np.ones(2, bool)]
    _raises_as_numpy(short_mask, x, IndexError)

    def short_mask_put(x):
        x[:, [True, False, True]] = 0.0
    _raises_as_numpy(short_mask_put, x, IndexError)

    def mask_after_ellipsis(x):
        return x[..., np.ones((3, 3), bool)]
    _raises_as_numpy(mask_after_ellipsis, x, IndexError)


def test_traced_mask_with_other_indices_breaks_cleanly(rng):
    x = sample_array(rng, "float64", (3, 4))

    def masked(x):
        return x[x[:, 0] > 0, [1]] * 2
    np.testing.assert_allclose(kiln.compile(masked)(x), masked(x))


def test_boolean_scalar_key_breaks_cleanly(rng):
    x = sample_array(rng, "float64", (3, 4))

    def scalar_mask(x):
        return x[True] + 1, x[np.bool_(False), [0]]
    for got, expected in zip(kiln.compile(scalar_mask)(x), scalar_mask(x)):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected)


def test_traced_values_assigned_through_a_traced_mask_are_placed_as_numpy_does(rng):
    """x[mask] = v places v's values in mask order where v has an axis of the selected count
    (which depends on the data: a graph break, and NumPy's error where the count differs);
    where(mask, v, x) is right only for a v that broadcasts over the unmasked axes."""
    def other_mask(x, y):
        x[x > 0] = y[y > 0]
        return x

    def full_length(x, y):
        x[x > 0] = y * 2
        return x

    def over_rows(x, row):
        x[x[:, 0] > 0] = row[None, :] * 2  # (1, 3): broadcast over the selected rows
        return x
    cases = [(other_mask, np.array([1.0, -1, 2, -2]), np.array([-5.0, 6, 7, -8])),
             (full_length, np.array([1.0, 1, 2, 2]), np.arange(4.0)),
             (over_rows, sample_array(rng, "float64", (4, 3)), np.arange(3.0))]
    for function, x, y in cases:
        want_x = x.copy()
        np.testing.assert_array_equal(kiln.compile(function)(x, y), function(want_x, y))
        np.testing.assert_array_equal(x, want_x)
    with pytest.raises(ValueError, match="cannot assign 4 input values to the 2 output"):
        kiln.compile(full_length)(np.array([1.0, -1, 2, -2]), np.arange(4.0))


class _Position:
    """An int-like object (NumPy takes any object with __index__ as an integer index)."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_ranges_tuples_and_index_objects_are_read_as_numpy_reads_them(rng):
    """NumPy reads any sequence in a key (range(n), a tuple inside the key's tuple) as an index
    array and an __index__ object as an int: x[range(N), y] is the usual cross-entropy pick."""
    x = sample_array(rng, "float64", (5, 4))
    y = np.array([0, 3, 1, 2, 3])

    def reads(x, y):
        return (x[range(5), y], x[range(3)], x[(0, 1), (2, 3)], x[_Position(2)],
                x[_Position(1), _Position(3)], np.take(x, range(2), axis=1))

    def writes(x, y):
        x[range(2), [1, 2]] = 9.0
        x[(3, 4), :] += 1.0
        np.add.at(x, (range(5), y), 1.0)
        return x
    for got, expected in zip(kiln.compile(reads)(x, y), reads(x, y)):
        np.testing.assert_array_equal(got, expected)
    want = x.copy()
    np.testing.assert_array_equal(kiln.compile(writes)(x, y), writes(want, y))
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("key", [np.array([0]), np.array([0, 0]), 0], ids=["array", "two", "int"])
def test_an_index_into_an_empty_axis_is_numpys_index_error(key):
    empty = np.zeros((0, 3))
    with pytest.raises(IndexError):
        empty[key]
    with pytest.raises(IndexError, match="test_indexing.py"):
        kiln.compile(lambda x: x[key] * 2)(empty)


def test_narrow_integer_indices_that_always_fit_are_not_checked(rng):
    """A uint8 index into an axis of 256 or more (a lookup table t[img]) can never be out of
    bounds or negative: no bounds check, no wrap in the graph. Narrower axes, and signed
    indices, keep NumPy's IndexError and negative wrap."""
    table = rng.random(256)

    def lookup(t, image):
        return t[image]

    image = rng.integers(0, 256, (64, 64)).astype(np.uint8)
    report = kiln.explain(lookup)(table, image)
    np.testing.assert_array_equal(report.result, lookup(table, image))
    assert " lt(" not in report.graphs[0].graph_text and " any(" not in report.graphs[0].graph_text
    signed = np.array([-128, -1, 0, 127], np.int8)
    np.testing.assert_array_equal(kiln.compile(lookup)(table, signed), table[signed])
    with pytest.raises(IndexError, match="index 200 is out of bounds for axis 0 with size 100"):
        kiln.compile(lookup)(table[:100].copy(), np.array([3, 200], np.uint8))
