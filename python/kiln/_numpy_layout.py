"""Tracer implementations of NumPy's layout functions (diag, flips, rot90, the split family,
stacking, append, insert, delete, resize, meshgrid, kron, vander, unravel_index). Each takes the
TraceContext
first, then NumPy's arguments, and is built from the tracer's own operations; arguments that
decide shapes must be concrete (a traced one is a graph break). Views stay views: split parts,
flips and rot90 write through to their array, as in NumPy (_numpy_selection.py's docstring says
how NumPy's own rules are followed)."""
import operator

import numpy as np

from . import _stacked_rows
from ._numpy_functions import (_as_traced, _k, ravel, read_only_view, reshape, swapaxes,
                               transpose)
from ._numpy_joining import _at_least, _at_least_shape, concatenate
from ._numpy_manipulation import _join, _new, _range
from ._numpy_selection import (_LEGACY, _SEQUENCE, _concrete, _fitted, _flat_or_axis, _flip,
                               _gather, _typed, broadcast_arrays)
from ._numpy_statistics import diagonal
from ._tracer import TracedArray, cast, graph_break


# ---- diagonals, flips ----

def _diagonal_matrix(context, v, k):
    """The square matrix with the 1-d `v` on its k-th diagonal and zeros elsewhere."""
    k = operator.index(_concrete(k, "np.diag with a traced k"))
    kiln = _k()
    n = v.shape[0] + abs(k)
    row = kiln.reshape(kiln.arange(v.tensor, n, "int64"), [n, 1])
    column = kiln.reshape(kiln.arange(v.tensor, n, "int64"), [1, n])
    on = kiln.equal(kiln.subtract(column, row), float(k))
    # v[r] on row r (k >= 0) or v[c] on column c (k < 0), zero-padded to n.
    padded = _join([v.tensor, context.constant(0, v.dtype, [abs(k)]) if k else None], 0)
    padded = kiln.reshape(padded, [n, 1] if k >= 0 else [1, n])
    return _new(context, kiln.where(on, padded, context.constant(0, v.dtype)))


def diag(context, v, k=0):
    x = _as_traced(context, v)
    if x.ndim == 1:
        return _diagonal_matrix(context, x, k)
    if x.ndim == 2:
        return diagonal(context, x, k)  # a read-only view, as NumPy's
    raise ValueError("Input must be 1- or 2-d.")


def diagflat(context, v, k=0):
    return _diagonal_matrix(context, ravel(context, _as_traced(context, v)), k)


def fliplr(context, m):
    x = _as_traced(context, m)
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return _flip(x, 1)


def flipud(context, m):
    x = _as_traced(context, m)
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return _flip(x, 0)


def rot90(context, m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    x = _as_traced(context, m)
    k, axes = _concrete((k, axes), "np.rot90 with a traced k or axes")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == x.ndim:
        raise ValueError("Axes must be different.")
    if not all(-x.ndim <= axis < x.ndim for axis in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={x.ndim}.")
    k %= 4
    if k == 0:
        return x[:]
    if k == 2:
        return _flip(_flip(x, axes[0]), axes[1])
    order = list(range(x.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return transpose(context, _flip(x, axes[1]), order)
    return _flip(transpose(context, x, order), axes[1])


# ---- split ----

def array_split(context, ary, indices_or_sections, axis=0):
    indices_or_sections = _concrete(indices_or_sections, "np.array_split at traced positions")
    x = _as_traced(context, ary)
    total = x.shape[axis]
    try:
        sections = len(indices_or_sections) + 1
        points = [0] + list(indices_or_sections) + [total]
    except TypeError:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(total, sections)
        points = np.array([0] + extras * [each + 1] + (sections - extras) * [each],
                          dtype=np.intp).cumsum()
    swapped = swapaxes(context, x, axis, 0)  # views all along: the parts write through
    return [swapaxes(context, swapped[points[i]:points[i + 1]], axis, 0)
            for i in range(sections)]


def split(context, ary, indices_or_sections, axis=0):
    indices_or_sections = _concrete(indices_or_sections, "np.split at traced positions")
    try:
        len(indices_or_sections)
    except TypeError:
        if _as_traced(context, ary).shape[axis] % indices_or_sections:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(context, ary, indices_or_sections, axis)


def hsplit(context, ary, indices_or_sections):
    x = _as_traced(context, ary)
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(context, x, indices_or_sections, 1 if x.ndim > 1 else 0)


def _split_along(name, rank, axis):
    def split_along(context, ary, indices_or_sections):
        x = _as_traced(context, ary)
        if x.ndim < rank:
            raise ValueError(f"{name} only works on arrays of {rank} or more dimensions")
        return split(context, x, indices_or_sections, axis)
    return split_along


# ---- stacking, append, insert, delete, resize ----

def column_stack(context, tup):
    tup = _stacked_rows.gathered(tup, lambda shape: (*shape, 1) if len(shape) == 1 else
                                 _at_least_shape(2, shape), 1) or tup
    arrays = []
    for value in tup:
        x = _as_traced(context, value)
        if x.ndim < 2:  # a column: np.array(x, ndmin=2).T
            x = transpose(context, reshape(context, x, (1,) * (2 - x.ndim) + x.shape))
        arrays.append(x)
    return concatenate(context, arrays, 1)


def dstack(context, tup):
    tup = _stacked_rows.gathered(tup, lambda shape: _at_least_shape(3, shape), 2) or tup
    return concatenate(context, [_at_least(3)(context, a) for a in tup], 2)


def append(context, arr, values, axis=None):
    x = _as_traced(context, arr)
    if axis is None:
        if x.ndim != 1:
            x = ravel(context, x)
        values = ravel(context, _as_traced(context, values))
        axis = x.ndim - 1
    return concatenate(context, [x, values], axis)


def insert(context, arr, obj, values, axis=None):
    x, axis = _flat_or_axis(context, arr, axis, "insert")
    obj = _concrete(obj, "np.insert at traced positions")
    n = x.shape[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            graph_break("np.insert with a boolean obj (NumPy 1.x casts it, NumPy 2 masks)")
        if indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    shape = list(x.shape)
    if indices.size == 1:
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        index = operator.index(index) + (n if index < 0 else 0)
        if isinstance(values, TracedArray):  # np.array(values, ndmin=x.ndim, dtype=x.dtype)
            values = reshape(context, values, (1,) * (x.ndim - values.ndim) + values.shape)
        else:
            values = np.array(values, ndmin=x.ndim, dtype=x.dtype)
        if indices.ndim == 0:
            values = np.moveaxis(values, 0, axis)
        shape[axis] = values.shape[axis]
        slot = (Ellipsis,)
        positions = np.concatenate([np.arange(index), n + np.arange(shape[axis]),
                                    np.arange(index, n)])
    else:
        if indices.size == 0 and not isinstance(obj, np.ndarray):
            indices = indices.astype(np.intp)
        indices[indices < 0] += n
        count = len(indices)
        order = indices.argsort(kind="mergesort")  # stable: equal indices keep their order
        indices[order] += np.arange(count)
        old = np.ones(n + count, dtype=bool)
        old[indices] = False  # NumPy's IndexError for indices out of bounds or not integers
        shape[axis] = count
        slot = (slice(None),) * axis + (np.arange(count),)
        positions = np.empty(n + count, np.intp)
        positions[old] = np.arange(n)
        positions[indices] = n + np.arange(count)
    if isinstance(values, TracedArray):
        block = _fitted(cast(values.tensor, x.dtype), shape)
    else:  # NumPy converts and broadcasts concrete values itself
        holder = np.empty(shape, x.dtype)
        holder[slot] = values
        block = context.lift(holder).tensor
    combined = _k().concatenate([x.tensor, block], axis)
    return _new(context, _gather(context, combined, positions, axis))


def delete(context, arr, obj, axis=None):
    x, axis = _flat_or_axis(context, arr, axis, "delete")
    obj = _concrete(obj, "np.delete at traced positions")
    n = x.shape[axis]
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        single = isinstance(obj, (int, np.integer)) and not isinstance(obj, bool)
        if not single:
            given, obj = obj, np.asarray(obj)
            if obj.size == 0 and not isinstance(given, np.ndarray):
                obj = obj.astype(np.intp)
            elif obj.size == 1 and obj.dtype.kind in "ui":
                obj, single = obj.item(), True
        if single:
            if obj < -n or obj >= n:
                raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
            keep[obj] = False
        elif obj.dtype == bool:
            if obj.shape != (n,):
                raise ValueError("boolean array argument obj to delete must be one dimensional "
                                 f"and match the axis length of {n}")
            keep = ~obj
        else:
            keep[obj,] = False  # NumPy's IndexError for indices out of bounds or not integers
    return _new(context, _gather(context, x.tensor, np.flatnonzero(keep), axis))


def resize(context, a, new_shape):
    new_shape = _concrete(new_shape, "np.resize to a traced shape")
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    x = ravel(context, _as_traced(context, a))
    new_size = 1
    for length in new_shape:
        new_size *= length
        if length < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    shape = [operator.index(length) for length in new_shape]
    if x.size == 0 or new_size == 0:
        return _new(context, context.constant(0, x.dtype, shape))
    repeats = -(-new_size // x.size)
    flat = _range(_k().tile(x.tensor, [repeats]), 0, 0, new_size)
    return _new(context, _k().reshape(flat, shape))


# ---- broadcasting, grids, products ----

def meshgrid(context, *xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    if not copy and any(isinstance(x, np.ndarray) for x in xi):
        graph_break("np.meshgrid(copy=False) of an array that is not traced (its views)")
    ndim = len(xi)
    ones = (1,) * ndim
    output = [reshape(context, _as_traced(context, x), ones[:i] + (-1,) + ones[i + 1:])
              for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = reshape(context, output[0], (1, -1) + ones[2:])
        output[1] = reshape(context, output[1], (-1, 1) + ones[2:])
    if not sparse:
        output = broadcast_arrays(context, *output)
    if copy:
        output = _SEQUENCE(x.copy() for x in output)
    return output


def kron(context, a, b):
    y = _as_traced(context, b)
    x = _as_traced(context, a)
    if x.ndim < y.ndim:  # np.array(a, ndmin=b.ndim)
        x = reshape(context, x, (1,) * (y.ndim - x.ndim) + x.shape)
    if x.ndim == 0 or y.ndim == 0:
        # NumPy 1.x types a 0-d operand beside an array by its value
        dtype = _typed(lambda p, q: np.multiply(p, q).dtype, [a, b]) if _LEGACY else None
        return np.multiply(x, y, dtype=dtype, casting="unsafe")
    a_shape = (1,) * (y.ndim - x.ndim) + x.shape
    b_shape = (1,) * (x.ndim - y.ndim) + y.shape
    # a's axes at the even positions, b's at the odd ones: a product of all pairs, merged.
    a_parts = reshape(context, x, [n for length in a_shape for n in (length, 1)])
    b_parts = reshape(context, y, [n for length in b_shape for n in (1, length)])
    product = np.multiply(a_parts, b_parts)
    return _new(context, _k().reshape(product.tensor, [p * q for p, q in zip(a_shape, b_shape)]))


def vander(context, x, N=None, increasing=False):
    v = _as_traced(context, x)
    if v.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    N = len(v) if N is None else operator.index(_concrete(N, "np.vander with a traced N"))
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(v.dtype, int)
    if dtype.kind == "c":
        graph_break("np.vander of complex values (kiln's cumprod takes no complex values)")
    rows = v.shape[0]
    k = _k()
    columns = context.constant(1, dtype, [rows, min(N, 1)])
    if N > 1:  # x, x*x, ...: NumPy's multiply.accumulate, in the result's dtype
        powers = k.broadcast_to(k.reshape(cast(v.tensor, dtype), [rows, 1]), [rows, N - 1])
        columns = k.concatenate([columns, k.cumprod(powers, 1)], 1)
    return _new(context, columns if increasing else k.flip(columns, [1]))


def sliding_window_view(context, x, window_shape, axis=None, *, subok=False, writeable=False):
    """NumPy's read-only view of every window (image and signal code's convolutions): per
    windowed axis a gather of positions i + j (window i, offset j), its window axis moved last.
    A view: it follows later writes to x and refuses writes, as NumPy's does."""
    v = _as_traced(context, x)
    if writeable:
        graph_break("sliding_window_view(writeable=True): windows that share their elements")
    window_shape = _concrete(window_shape, "sliding_window_view with a traced window shape")
    axis = _concrete(axis, "sliding_window_view with a traced axis")
    # NumPy's errors and result shape, from a stand-in of x's shape that holds no memory
    stand_in = np.broadcast_to(np.zeros((), v.dtype), v.shape)
    shape = np.lib.stride_tricks.sliding_window_view(stand_in, window_shape, axis).shape
    windows = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    axes = (range(v.ndim) if axis is None else
            [a % v.ndim for a in (axis if np.iterable(axis) else (axis,))])
    kiln = _k()

    def forward(tensor):
        if 0 in shape:   # no window, or windows of no element: nothing to read
            return context.constant(0, v.dtype, list(shape))
        for ax, width in zip(axes, windows):
            count = int(tensor.shape[ax]) - int(width) + 1
            starts = kiln.reshape(kiln.arange(tensor, count, "int64"), [count, 1])
            offsets = kiln.reshape(kiln.arange(tensor, int(width), "int64"), [1, int(width)])
            tensor = kiln.take(tensor, kiln.add(starts, offsets), ax, check_bounds=False)
            order = list(range(len(tensor.shape)))
            tensor = kiln.transpose(tensor, order[:ax + 1] + order[ax + 2:] + [ax + 1])
        return tensor
    return read_only_view(v, forward)


def unravel_index(context, indices, shape, order="C"):
    """Flat indices of a static shape as one index array per axis. An index out of the shape's
    size raises NumPy's ValueError when the graph runs."""
    dims = _concrete(shape, "np.unravel_index with a traced shape")
    dims = (operator.index(dims),) if np.ndim(dims) == 0 else tuple(map(operator.index, dims))
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    flat = _as_traced(context, indices)
    if flat.dtype.kind not in "iu":  # NumPy's own TypeError (floats) or casting (bools)
        graph_break(f"np.unravel_index of {flat.dtype} indices")
    flat = flat.astype(np.int64)
    size = int(np.prod(dims, dtype=np.int64))
    if flat.size:
        outside = ravel(context, (flat < 0) | (flat >= size))
        first_outside = ravel(context, flat)[np.argmax(outside)]
        _k().check_flag(np.any(outside).tensor, first_outside.tensor, "index ",
                        f" is out of bounds for array with size {size}", "unravel_index")
    coordinates, rest = [], flat
    for length in reversed(dims) if order == "C" else dims:
        coordinates.append(rest % max(length, 1))  # a zero extent has no index in bounds
        rest = rest // max(length, 1)
    return tuple(reversed(coordinates)) if order == "C" else tuple(coordinates)


FUNCTIONS = {
    np.unravel_index: unravel_index,
    np.lib.stride_tricks.sliding_window_view: sliding_window_view,
    np.diag: diag, np.diagflat: diagflat, np.fliplr: fliplr, np.flipud: flipud, np.rot90: rot90,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit,
    np.vsplit: _split_along("vsplit", 2, 0), np.dsplit: _split_along("dsplit", 3, 2),
    np.column_stack: column_stack, np.dstack: dstack, np.append: append, np.insert: insert,
    np.delete: delete, np.resize: resize, np.meshgrid: meshgrid, np.kron: kron,
    np.vander: vander,
}
