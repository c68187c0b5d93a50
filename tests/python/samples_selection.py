"""Conformance samples for kiln/_numpy_selection.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import sample_array

DTYPES = ("float64", "float32", "int32", "int8", "uint8", "bool")
SHAPES = ((3, 4), (), (0, 3), "view")   # a 0-d array, a size-0 one, a strided view


def shaped(function, shapes=SHAPES, dtypes=DTYPES, indices=None):
    """`function` over an array of each shape and dtype (a view: every other row of a (2n, m)
    one), then, when given, an int array of indices(shape) drawn in [-3, 3) (traced too)."""
    def samples(rng):
        cases = []
        for dtype in dtypes:
            for shape in shapes:
                # np.asarray: a 0-d bool sample is a NumPy scalar, which kiln treats as static
                array = (sample_array(rng, dtype, (6, 4))[::2] if shape == "view"
                         else np.asarray(sample_array(rng, dtype, shape)))
                extra = () if indices is None else (
                    np.asarray(rng.integers(-3, 3, indices(array.shape))),)
                cases.append((function, (array,) + extra))
        return cases
    return samples


def other(x):
    """A second operand of x's dtype and shape (bool: its negation)."""
    return ~x if x.dtype == np.bool_ else np.flip(x) + x


def takes(x, i):
    results = [np.take(x, 0 if x.size else []), np.take(x, 7, mode="wrap") if x.size else x,
               np.take(x, i % max(x.size, 1)) if x.size else x]
    if x.ndim == 2:
        results += [np.take(x, i, axis=1), np.take(x, [[1, -2]], axis=1, mode="clip"),
                    np.take(x, i * 3, axis=-1, mode="clip"), x.take(i[0], axis=1, mode="wrap"),
                    np.take(x, (i > 0).astype(np.uint8), axis=1), np.take(x, i > 0, axis=1)]
        if x.shape[0]:
            results += [np.take(x, [2, -1, 0], axis=0), np.take(x, np.int8(-3), axis=0)]
    return tuple(results)


def takes_along(x, i):
    if x.ndim < 2:   # axis=None flattens (a 0-d array too)
        return np.take_along_axis(x, np.array([0, -1] if x.size else [], np.intp), None)
    results = [np.take_along_axis(x, i, axis=1), np.take_along_axis(x, i[:, :1], -1),
               np.take_along_axis(x, np.zeros((1, 5), np.uint8), axis=1)]
    if x.size:
        results += [np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=1),
                    np.take_along_axis(x, i[:2, :1] % 3, axis=0),
                    np.take_along_axis(x, np.array([11, -2, 0]), axis=None)]
    return tuple(results)


def puts_along(x, i):
    y = x.copy()
    if x.ndim < 2:   # (axis=None: NumPy 2 writes through only into contiguous arrays)
        return y
    unique = np.array([[2, 0], [1, 3]])   # no index twice in a row
    if x.size:
        np.put_along_axis(y, unique[:1], other(x)[:1, :2], axis=1)
        np.put_along_axis(y, i[:1] % 3, 2.5, axis=0)
        np.put_along_axis(y[1:, 1:], unique[1:2] - 2, x[:1, :1], axis=1)  # through a view
    np.put_along_axis(y, np.zeros((x.shape[0], 1), np.int8), 1, axis=-1)
    return y


def puts(x, i):
    y = x.copy()
    if x.size:
        np.put(y, [0, -1, 5 % x.size], [1, 0])   # values repeat, in order
        np.put(y, i[:2, 0], np.ravel(other(x))[:1], mode="wrap")
        np.put(y, i[0] * 4, 2.5, mode="clip")
        np.put(y, np.array([False, x.size > 1]), np.ravel(x)[-1])
    if x.ndim == 2 and x.size:
        np.put(y[1:, ::-2], [1, -2], x[0, :1])   # through a view
    np.put(y, [], [3])
    return y


def chooses(x, i):
    fill = True if x.dtype == np.bool_ else 3
    results = [np.choose(np.zeros(x.shape, np.int8), [x, fill]),
               np.choose(i, [x, other(x), fill], mode="wrap"),
               np.choose(i, [other(x), x], mode="clip"),
               np.choose(np.ones((), bool), [fill, x])]
    if x.ndim == 2:
        results += [np.choose(np.array([[1], [0], [2]])[:x.shape[0]], [x, x[:, :1], fill]),
                    np.choose(i[:, :1] % 2, [x, np.float32(0.5)], mode="wrap")]
    return tuple(results)


def selects(x, i):
    if x.dtype == np.bool_:
        conditions = [x, i > 0]
    else:
        conditions = [x > 2, (x < 0) | (i > 0)]
    return (np.select(conditions, [x, other(x)]),
            np.select(conditions, [x, 2], default=np.ravel(x)[0] if x.size else 1),
            np.select(conditions[1:], [i], 1.5),
            np.select([i < 0], [x], default=i.astype(x.dtype)))


def compresses(x):
    results = [np.compress([True, False, True][:x.size], x), np.compress([], x)]
    if x.ndim == 2:
        results += [np.compress([0, 1, 1, 0][:x.shape[1]], x, axis=1),
                    np.compress([True, True], x, axis=0) if x.shape[0] else x,
                    np.compress(np.array([False, True]), x, axis=-1)]
    return tuple(results)


def diagonals(x):
    if x.ndim == 0:
        return np.diagflat(x), np.diagflat(x, 2)
    return (np.diag(x), np.diag(x, 1), np.diag(x, -2), np.diag(x[0] if x.size else x[:, 0]),
            np.diag(x[:, 0], 2), np.diag(x[:, 1], -1), np.diagflat(x), np.diagflat(x, -1))


def flips(x):
    if x.ndim == 0:
        return x
    return (np.fliplr(x), np.flipud(x), np.flipud(x[0] if x.size else x[:, 0]),
            np.fliplr(x[None]), np.flipud(x[:, None]))


def rotations(x):
    if x.ndim == 0:
        return x
    return (np.rot90(x), np.rot90(x, 2), np.rot90(x, 3), np.rot90(x, 0), np.rot90(x, -1),
            np.rot90(x, 5, axes=(1, 0)), np.rot90(x[None], 1, (0, -1)), np.rot90(x[None], 2,
                                                                                (2, 1)))


def splits(x):
    if x.ndim == 0:
        return x
    parts = np.split(x, 2 if x.shape[1] % 2 == 0 else x.shape[1], axis=1)
    parts += np.split(x, [1, 2], axis=-1) + np.split(x, [2, 1, 7])
    parts += np.array_split(x, 3, axis=1) + np.array_split(x, [0, -1]) + np.array_split(x, 1)
    return tuple(parts)


def axis_splits(x):
    if x.ndim == 0:
        return x
    cube = np.reshape(x, (x.shape[0], 2, -1))
    return tuple(np.hsplit(x, [1, 2]) + np.hsplit(x[0] if x.size else x[:, 0], 1) +
                 np.vsplit(x, [1]) + np.vsplit(cube, 1) + np.dsplit(cube, [1]) +
                 np.hsplit(cube, 2))


def stackings(x):
    column = x[:, 0] if x.ndim == 2 else x
    return (np.column_stack([x, x]), np.column_stack([column, x if x.ndim == 2 else column]),
            np.column_stack([column, np.ones(column.shape, np.int8)]),
            np.column_stack((column, column.astype(np.float32))),
            np.dstack([x, x]), np.dstack([column, column]), np.dstack((x, np.zeros_like(x))))


def appends(x):
    return (np.append(x, x), np.append(x, 5), np.append(x, [1.5, 2]),
            np.append(x, other(x)[:1], axis=0) if x.ndim else np.append(x, x, axis=None),
            np.append(x, np.zeros_like(x)[..., :1], axis=-1) if x.ndim else x)


def insertions(x):
    results = [np.insert(x, 1 if x.size else 0, 7), np.insert(x, [0, 0, -1] if x.size else [], 2),
               np.insert(x, slice(None, None, 3), other(x).ravel()[:1])]
    if x.ndim == 2:
        results += [np.insert(x, 1, x[:, 0], axis=1), np.insert(x, [1], x[:, :1], axis=1),
                    np.insert(x, [3, 0, 3], other(x)[:, :1], axis=-1),
                    np.insert(x, -1, 2.7, axis=1), np.insert(x, 0, x[:1], axis=0),
                    np.insert(x, [0, 2], np.arange(2)[None], axis=1)]
    return tuple(results)


def deletions(x):
    results = [np.delete(x, 0) if x.size else x, np.delete(x, []), np.delete(x, slice(1, None, 2))]
    if x.ndim == 2:
        results += [np.delete(x, 1, axis=1), np.delete(x, [0, -1, 0], axis=1),
                    np.delete(x, slice(None, None, -2), axis=-1),
                    np.delete(x, np.array([False, True, False, True])[:x.shape[1]], axis=1),
                    np.delete(x, np.array([2], np.uint8), axis=1)]
    return tuple(results)


def resizes(x):
    return (np.resize(x, (2, 7)), np.resize(x, 5), np.resize(x, (0, 3)), np.resize(x, ()),
            np.resize(x, [1, 2, 3]))


def broadcasts(x):
    results = np.broadcast_arrays(x, x)
    if x.ndim == 2:
        results += np.broadcast_arrays(x, x[:1], 1, x[0, :, None, None] if x.size else x[:1])
    return tuple(results) + tuple(np.broadcast_arrays(x, [[2]]))


def grids(x):
    a, b = np.ravel(x), np.ravel(other(x))[:3]
    return tuple(np.meshgrid(a, b) + np.meshgrid(a, b, indexing="ij") +
                 np.meshgrid(a, b, x, sparse=True) + np.meshgrid(b, copy=False) +
                 np.meshgrid(a, b, a, copy=False, indexing="ij"))


def copies(x, i):
    y = x.copy()
    one = x.dtype.type(1)
    np.copyto(y, other(x))
    np.copyto(y, 1 if x.dtype != np.bool_ else True, where=i > 0)
    np.copyto(y, one, where=x != one)
    np.copyto(y, (i * i).astype(np.float32), casting="unsafe", where=i < -1)
    if x.ndim == 2:
        np.copyto(y[1:], x[:1])                        # through a view, broadcast
        np.copyto(y, x[:, :1], where=np.arange(x.shape[1]) % 2 == 0)
        np.copyto(y[:, ::2], x.T[:2].T[None] if x.size else x[:, :2])
    return y


def krons(x):
    return (np.kron(x, x[:2, :2] if x.ndim else x), np.kron(x[..., :1] if x.ndim else x, x),
            np.kron(np.ravel(x)[:3], x), np.kron(2, x), np.kron(x, [[1, 0], [0, 1]]),
            np.kron(x, 2), np.kron(x, np.ravel(x)[-1] if x.size else x))


def vanders(x):
    v = np.ravel(x)[:4]
    return (np.vander(v), np.vander(v, 3, increasing=True), np.vander(v, 0), np.vander(v, 1),
            np.vander(v, 5))


def windows(x):
    swv = np.lib.stride_tricks.sliding_window_view
    if x.ndim == 0:
        return swv(x, ())
    return (swv(x, min(2, x.shape[-1]), axis=-1), swv(x, (1,) * x.ndim),
            swv(x, 0, axis=0), swv(x, x.shape))


def diagonal_fills(x):
    y = x.copy()
    if x.ndim < 2:
        return y
    one = True if x.dtype == np.bool_ else 2
    np.fill_diagonal(y, one)
    np.fill_diagonal(y[:, 1:], other(x).ravel()[:2])   # through a view, values repeat
    tall = np.zeros((7, 3), x.dtype)
    np.fill_diagonal(tall, x.ravel()[:2] if x.size else one, wrap=True)
    cube = np.zeros((3, 3, 3), x.dtype)
    np.fill_diagonal(cube, 2.7)
    np.fill_diagonal(y, [])
    return y, tall, cube


def unravelled(x, flat):
    """np.unravel_index of flat indices drawn in [0, 12) (traced), in both orders."""
    flat = (flat + 3) * 2
    return (*np.unravel_index(flat, (3, 4)), *np.unravel_index(flat, (4, 3), order="F"),
            *np.unravel_index(flat[0, 0], (2, 6)), x)


def _each_shift(x, read):
    """read(x + k) for k = 0..3 in a loop of four iterations (one loop node, where kiln's
    selections of data-dependent length stay lazy: kiln._masked_selections), stacked."""
    rows = []
    for k in range(4):
        rows.append(read(x + k if x.dtype != np.bool_ else x ^ bool(k % 2)))
    return np.stack(rows)


def nonzeros(x):
    def read(y):
        flat = np.ravel(y)
        positions = np.nonzero(y) if y.ndim else (np.flatnonzero(y),)
        return np.stack([positions[0].size, np.flatnonzero(y).sum(),
                         flat[np.flatnonzero(y)].sum() if y.size else 0, np.where(flat)[0].size])
    return np.nonzero(np.atleast_1d(x)), np.flatnonzero(x), _each_shift(x, read)


def uniques(x):
    def read(y):
        values = np.unique(y)
        return np.stack([values.size, values.sum(), values[0] if y.size else 0])
    return np.unique(x), np.unique(x, return_counts=True), _each_shift(x, read)


def bits(x):
    b = (x * 37).astype(np.uint8) if x.dtype != np.bool_ else x.astype(np.uint8)
    # (a count past an empty array's bits: NumPy leaves them unwritten, kiln's are zeros)
    more = 5 if x.size else 0
    results = [np.unpackbits(b), np.packbits(x), np.packbits(x, bitorder="little"),
               np.unpackbits(b, count=more, bitorder="little"), np.unpackbits(b, count=-3)]
    if x.ndim == 2:
        results += [np.unpackbits(b, axis=1), np.unpackbits(b, axis=0, count=9 if x.size else 0),
                    np.packbits(x, axis=-1), np.packbits(x > 1, axis=0, bitorder="little")]
    return tuple(results)


SAMPLES = {
    np.unravel_index: shaped(unravelled, shapes=((3, 4),), dtypes=("float64",),
                             indices=lambda shape: shape),
    np.take: shaped(takes, indices=lambda shape: (3,)),
    np.take_along_axis: shaped(takes_along, indices=lambda shape: (shape[0], 2)
                               if len(shape) == 2 else ()),
    np.put_along_axis: shaped(puts_along, indices=lambda shape: (1, shape[-1]) if shape else ()),
    np.put: shaped(puts, indices=lambda shape: (2, 2)),
    np.choose: shaped(chooses, indices=lambda shape: shape),
    np.select: shaped(selects, indices=lambda shape: shape),
    np.compress: shaped(compresses), np.diag: shaped(diagonals),
    np.diagflat: shaped(diagonals, shapes=((), (3, 4))), np.fliplr: shaped(flips),
    np.flipud: shaped(flips, shapes=((3, 4),)), np.rot90: shaped(rotations),
    np.split: shaped(splits, shapes=((4, 6), (0, 6), "view")),
    np.array_split: shaped(splits, shapes=((5, 4), (0, 5)), dtypes=("int8", "bool")),
    np.hsplit: shaped(axis_splits, shapes=((4, 6), "view")),
    np.vsplit: shaped(axis_splits, shapes=((2, 4),), dtypes=("uint8",)),
    np.dsplit: shaped(axis_splits, shapes=((4, 6),), dtypes=("float32",)),
    np.column_stack: shaped(stackings), np.dstack: shaped(stackings, dtypes=("int32", "bool")),
    np.append: shaped(appends), np.insert: shaped(insertions), np.delete: shaped(deletions),
    np.resize: shaped(resizes), np.broadcast_arrays: shaped(broadcasts),
    np.meshgrid: shaped(grids), np.copyto: shaped(copies, indices=lambda shape: shape),
    np.kron: shaped(krons), np.vander: shaped(vanders),
    np.fill_diagonal: shaped(diagonal_fills),
    np.lib.stride_tricks.sliding_window_view: shaped(windows),
    np.nonzero: shaped(nonzeros), np.flatnonzero: shaped(nonzeros), np.unique: shaped(uniques),
    np.unpackbits: shaped(bits), np.packbits: shaped(bits),
}
