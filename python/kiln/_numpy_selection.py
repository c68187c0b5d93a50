"""Tracer implementations of NumPy's selection and layout functions (take, take_along_axis,
choose, select, split, stacking, insert/delete, meshgrid, ...). Each takes the TraceContext
first, then NumPy's arguments, and is built from the tracer's own operations; arguments that
decide shapes must be concrete (a traced one is a graph break).

They follow NumPy's own code (numpy/lib/_shape_base_impl.py, _function_base_impl.py,
_twodim_base_impl.py, _core/multiarray's take/put/choose). Where NumPy's rules are intricate
(index dtypes, clip modes, value casts, out= dtypes) NumPy itself decides them on small concrete
stand-ins, so its errors and warnings are its own. Views stay views: split parts, flips and
rot90 write through to their array, as in NumPy; put, put_along_axis, copyto and fill_diagonal
update the traced array (through views, like setitem)."""
import operator

import numpy as np

from ._indexing import _fit_value, _shape_text
from ._numpy_functions import (_as_traced, _at_least, _k, _result, concatenate, ravel, reshape,
                               swapaxes, transpose)
from ._numpy_manipulation import _join, _new, _range
from ._numpy_statistics import diagonal
from ._tracer import TracedArray, cast, graph_break, materialize_all, normalize_axis

# NumPy 1.x: value-based casting of 0-d arrays and Python scalars, lists from several functions.
_LEGACY = np.lib.NumpyVersion(np.__version__) < "2.0.0"
_SEQUENCE = type(np.broadcast_arrays(np.zeros(1)))  # broadcast_arrays, meshgrid: tuple from 2.0


def _flat_put_writes_through():
    """NumPy 1.x's put_along_axis(axis=None) writes through arr.flat; NumPy 2 through a flat copy
    that is arr's memory only when arr is contiguous (else 'read-only'): layout kiln can't see."""
    strided = np.zeros((2, 2))[:, :1]
    try:
        np.put_along_axis(strided, np.array([0]), 1, None)
    except ValueError:
        return False
    return strided[0, 0] == 1


_FLAT_PUT_WRITES = _flat_put_writes_through()


# ---- helpers ----

def _concrete(value, what):
    """`value` with its tracers made concrete: a graph break, as it decides a shape."""
    return materialize_all(value, f"{what} (a traced value decides the result's shape)")


def _known(value):
    """A tracer whose value the trace knows (made by np.zeros, np.arange... of static arguments)
    as that ndarray, with no graph break; anything else as it is."""
    if isinstance(value, TracedArray) and value._mask is None:
        known = value._context.known.get(value.tensor.id)
        if known is not None:
            return np.asarray(known())
    return value


def _target(a, name):
    """The traced array an in-place function updates; NumPy arrays (and NumPy scalars, which
    NumPy refuses) are left to eager NumPy."""
    if not isinstance(a, TracedArray) or a._scalar:
        graph_break(f"{name} updates an array that is not traced")
    return a


def _mode(mode):
    """NumPy's clip mode ('raise', 'wrap' or 'clip') for any spelling it takes; NumPy's own
    error (or deprecation warning) for the others."""
    try:
        taken = np.take(np.arange(2), [-1, 2], mode=mode)
    except IndexError:
        return "raise"
    return "wrap" if taken[1] == 0 else "clip"


def _index_array(indices, check):
    """`indices` as int64 (traced) or intp (concrete), once check(them, or a stand-in of a
    tracer) has let NumPy refuse them (TypeError) as the function does: a float array, not a
    list of floats."""
    if isinstance(indices, TracedArray):
        check(np.zeros(1, indices.dtype))
        return indices.astype(np.int64)  # bools are numbers here, not masks
    check(indices)
    return np.asarray(indices).astype(np.intp)


def _in_range(indices, n, mode):
    """Indices into an axis of length n wrapped or clipped as `mode` does; 'raise' leaves them to
    indexing, which raises NumPy's IndexError (at run time for traced ones)."""
    if n == 0:  # only no indices get here
        return indices
    if mode == "wrap":
        return np.mod(indices, n)
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    return indices


def _output(context, tensor, out, check, shape_error):
    """The result, or `out` updated with it after NumPy's checks of out's shape and dtype."""
    if out is None:
        return _result(context, tensor)
    if not isinstance(out, TracedArray):
        graph_break("out= an array that is not traced")
    if out.shape != tuple(tensor.shape):
        raise shape_error
    check(np.zeros(1, out.dtype))
    out._assign(tensor)
    return out


def _proxy(value, extreme=None):
    """What NumPy types `value` by: a concrete value as it is (an n-d array as a (1,...) one); a
    tracer as an array of its dtype, or when 0-d a scalar of it (0, or with `extreme` 0/1 its
    lowest/highest value: NumPy 1.x types 0-d arrays by value); a weak tracer (a Python number's
    stand-in) as a Python number."""
    if not isinstance(value, TracedArray):
        if isinstance(value, (int, float, complex, np.generic)):
            return value
        array = np.asarray(value)
        return array if array.ndim == 0 else np.zeros((1,) * array.ndim, array.dtype)
    dtype = np.dtype(value._weak or value.dtype)  # a weak int: int64's range
    if value.ndim and value._weak is None:
        return np.zeros((1,) * value.ndim, dtype)
    fill = 0
    if extreme is not None and dtype.kind != "b":
        info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
        fill = info.max if extreme else info.min
    elif extreme is not None:
        fill = bool(extreme)
    return value._weak(fill) if value._weak is not None else np.full((), fill, dtype)


def _typed(function, values):
    """function(*stand-ins of values): how NumPy types them; a graph break on NumPy 1.x where
    the type depends on the value of a traced 0-d array."""
    typed = function(*[_proxy(v) for v in values])
    if _LEGACY and any(isinstance(v, TracedArray) and v.ndim == 0 for v in values):
        if any(function(*[_proxy(v, extreme) for v in values]) != typed for extreme in (0, 1)):
            graph_break("NumPy 1.x types a traced 0-d array by its value")
    return typed


def _fitted(tensor, shape):
    """A traced value broadcast into `shape` as assignment does (NumPy's ValueError if not)."""
    return _k().broadcast_to(_fit_value(tensor, list(shape)), list(shape))


def _gather(context, tensor, positions, axis):
    """tensor's slices at the concrete `positions` along `axis`: a few runs of consecutive
    positions as slices joined together (index arithmetic), more as one gather."""
    if not len(positions):
        return _range(tensor, axis, 0, 0)
    ends = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = [0, *ends]
    if len(starts) > 8:
        return _k().take(tensor, context.lift(np.asarray(positions, np.int64)).tensor, axis,
                         check_bounds=False)
    stops = [*ends, len(positions)]
    return _join([_range(tensor, axis, int(positions[s]), int(positions[e - 1]) + 1)
                  for s, e in zip(starts, stops)], axis)


def _cycled(value, count, dtype, assign):
    """`value` flattened and repeated to `count` elements, as NumPy's put and a.flat[...] = value
    take it (None when it is empty: nothing is written). NumPy converts a concrete one itself,
    through assign(holder, value): its casts, warnings and errors."""
    if not isinstance(value, TracedArray):
        if np.size(value) == 0:
            return None
        holder = np.zeros(count, dtype)
        assign(holder, value)
        return holder
    flat = np.reshape(value, -1)
    if flat.size == 0:
        return None
    return flat if flat.size in (1, count) else flat[np.arange(count) % flat.size]


def _flip(x, axis):
    """x reversed along `axis`: a view, as NumPy's flip gives."""
    key = [slice(None)] * x.ndim
    key[normalize_axis(operator.index(axis), x.ndim, "flip")] = slice(None, None, -1)
    return x[tuple(key)]


def _flat_or_axis(context, arr, axis, name):
    """insert/delete's array and axis: flattened when axis is None."""
    x = _as_traced(context, arr)
    if axis is None:
        return (x if x.ndim == 1 else ravel(context, x)), 0
    return x, normalize_axis(operator.index(axis), x.ndim, name)


# ---- take, put, choose, compress ----

def take(context, a, indices, axis=None, out=None, mode="raise"):
    mode = _mode(mode)
    x = _as_traced(context, a)
    if axis is None:
        x, axis = ravel(context, x), 0
    else:
        axis = normalize_axis(operator.index(axis), x.ndim, "take")
    index = _index_array(indices, lambda proxy: np.take(np.zeros(1), proxy, mode="clip"))
    n = x.shape[axis]
    if n == 0 and mode != "raise" and index.size:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    taken = x[(slice(None),) * axis + (_in_range(index, n, mode),)]
    return _output(context, taken.tensor, out,
                   lambda proxy: np.take(np.zeros(1, x.dtype), [0], out=proxy),
                   ValueError("output array does not match result of ndarray.take"))


def compress(context, condition, a, axis=None, out=None):
    condition = np.asarray(_concrete(condition, "np.compress with a traced condition"))
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    return take(context, a, np.nonzero(condition)[0], axis, out)


def put(context, a, ind, v, mode="raise"):
    x = _target(a, "np.put")
    mode = _mode(mode)
    index = np.reshape(_index_array(ind, lambda proxy: np.put(np.zeros(1), proxy, 0, "clip")),
                       -1)
    count = index.size
    if count == 0:
        return None
    if x.size == 0:
        if _LEGACY:  # NumPy 1.x reads out of bounds here (or loops forever)
            graph_break("np.put into an empty array on NumPy 1.x")
        raise IndexError("cannot replace elements of an empty array")
    values = _cycled(v, count, x.dtype, lambda holder, value: np.put(holder, np.arange(count),
                                                                      value))
    if values is not None:
        flat = reshape(context, x, -1)  # a view: the writes reach x
        flat[_in_range(index, x.size, mode)] = values
    return None


def _along_axis(shape, indices, axis):
    """NumPy's _make_along_axis_idx: `indices` along `axis`, aranges along the others."""
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if len(shape) != indices.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ones = (1,) * len(shape)
    return tuple(indices if dim == axis else np.arange(n).reshape(ones[:dim] + (-1,) +
                                                                  ones[dim + 1:])
                 for dim, n in enumerate(shape))


def _flat_axis(indices):
    if indices.ndim != 1:
        raise ValueError("when axis=None, `indices` must have a single dimension.")


def take_along_axis(context, arr, indices, axis=-1):
    x = _as_traced(context, arr)
    if axis is None:
        _flat_axis(indices)
        x, axis = ravel(context, x), 0
    else:
        axis = normalize_axis(operator.index(axis), x.ndim, "take_along_axis")
    return _new(context, x[_along_axis(x.shape, indices, axis)].tensor)


def put_along_axis(context, arr, indices, values, axis):
    x = _target(arr, "np.put_along_axis")
    if axis is None:
        _flat_axis(indices)
        if not _FLAT_PUT_WRITES:
            graph_break("np.put_along_axis(axis=None) writes through to arr only when arr is "
                        "contiguous (NumPy >= 2)")
        x, axis = reshape(context, x, -1), 0  # a view: the writes reach arr
    else:
        axis = normalize_axis(operator.index(axis), x.ndim, "put_along_axis")
    x[_along_axis(x.shape, indices, axis)] = values


def choose(context, a, choices, out=None, mode="raise"):
    mode = _mode(mode)
    choices = list(choices)
    if not choices:
        raise ValueError("0-length sequence.")
    index = _index_array(_known(a), lambda proxy: np.choose(proxy, [0], mode="clip"))
    dtype = _typed(lambda *proxies: np.choose(np.zeros((), np.intp), proxies).dtype, choices)
    shape = np.broadcast_shapes(np.shape(index), *[np.shape(c) for c in choices])
    n = len(choices)
    if mode == "raise" and isinstance(index, TracedArray):
        graph_break("np.choose(mode='raise') of traced indices: NumPy's ValueError for an "
                    "invalid entry cannot be raised at run time (modes 'wrap' and 'clip' can)")
    if mode == "raise" and np.prod(shape) and ((index < 0) | (index >= n)).any():
        raise ValueError("invalid entry in choice array")
    index = _in_range(index, n, mode)
    result = None
    for k in reversed(range(n)):
        choice = choices[k]
        choice = (choice.astype(dtype) if isinstance(choice, TracedArray)
                  else np.asarray(choice).astype(dtype))
        result = choice if result is None else np.where(index == k, choice, result)
    tensor = _k().broadcast_to(_as_traced(context, result).tensor, list(shape))
    return _output(context, tensor, out,
                   lambda proxy: np.choose([0], [np.zeros(1, dtype)], out=proxy),
                   TypeError("choose: invalid shape for output array."))


def select(context, condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")

    def as_array(value):  # NumPy 2 keeps Python numbers weak here
        weak = not _LEGACY and type(value) in (int, float, complex)
        return value if weak or isinstance(value, TracedArray) else np.asarray(value)
    choices = [as_array(c) for c in choicelist] + [as_array(default)]
    try:
        if _LEGACY:  # the choices' type, then with the default (0-d: by its value)
            common = _typed(np.result_type, choices[:-1])
            dtype = _typed(lambda value: np.result_type(common, value), choices[-1:])
        else:
            dtype = _typed(np.result_type, choices)
    except TypeError as error:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {error}") \
            from None
    conditions = broadcast_arrays(context, *condlist)
    choices = broadcast_arrays(context, *choices)
    for i, condition in enumerate(conditions):
        if condition.dtype.type is not np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = (conditions[0].shape if choices[0].ndim == 0 else
             np.broadcast_shapes(conditions[0].shape, choices[0].shape))
    result = _new(context, context.constant(0, dtype, shape))
    copyto(context, result, choices[-1], casting="unsafe")  # np.full(shape, default, dtype)
    for choice, condition in zip(choices[-2::-1], conditions[::-1]):
        copyto(context, result, choice, where=condition)
    return result


# ---- copyto, fill_diagonal ----

def _broadcast_into(shape, target, what, strip=True):
    """copyto's broadcast of `shape` into `target` (a value's extra leading 1s dropped, not a
    mask's), as the shape to reshape to first; NumPy's ValueError if it does not fit."""
    stripped = tuple(shape)
    while strip and len(stripped) > len(target) and stripped[0] == 1:
        stripped = stripped[1:]
    try:
        fits = np.broadcast_shapes(stripped, tuple(target)) == tuple(target)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"could not broadcast {what} from shape {_shape_text(shape)} into "
                         f"shape {_shape_text(target)}")
    return list(stripped)


def copyto(context, dst, src, casting="same_kind", where=True):
    x = _target(dst, "np.copyto")
    holder = np.zeros(1, x.dtype)
    strong = isinstance(src, TracedArray) and src._weak is None
    try:  # NumPy's casting rule on a stand-in (a Python scalar: the value itself)
        np.copyto(holder, np.zeros(1, src.dtype) if strong else _proxy(src), casting=casting)
    except TypeError:
        if _LEGACY and strong and src.ndim == 0:  # NumPy 1.x casts 0-d arrays by value
            graph_break("np.copyto: NumPy 1.x casts a traced 0-d array by its value")
        raise
    if where is not True:  # NumPy's TypeError for a mask that is not bool
        mask = _proxy(where)
        np.copyto(np.zeros(np.shape(mask)), 0, where=mask)
    k = _k()
    if isinstance(src, TracedArray):
        value = cast(src.tensor, x.dtype)
    elif isinstance(src, (int, float, complex)):
        value = context.lift(holder.reshape(())).tensor  # as NumPy converted it
    else:
        value = context.lift(np.asarray(src).astype(x.dtype)).tensor
    target = list(x.shape)
    value = k.broadcast_to(k.reshape(value, _broadcast_into(value.shape, target,
                                                            "input array")), target)
    if where is not True:
        mask = _as_traced(context, where)
        mask = k.reshape(cast(mask.tensor, np.bool_),
                         _broadcast_into(mask.shape, target, "where mask", strip=False))
        value = k.where(mask, value, x.tensor)
    x._assign(value)


def _assign_flat(holder, value):
    holder.flat[:] = value


def fill_diagonal(context, a, val, wrap=False):
    x = _target(a, "np.fill_diagonal")
    if x.ndim < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if x.ndim == 2:
        step = x.shape[1] + 1
        if not wrap:
            end = x.shape[1] * x.shape[1]
    else:
        if not np.all(np.diff(x.shape) == 0):
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(x.shape[:-1]).sum())
    count = len(range(*slice(None, end, step).indices(x.size)))
    values = _cycled(val, count, x.dtype, _assign_flat)
    if values is not None:
        flat = reshape(context, x, -1)  # a view: the writes reach x
        flat[:end:step] = values


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
    arrays = []
    for value in tup:
        x = _as_traced(context, value)
        if x.ndim < 2:  # a column: np.array(x, ndmin=2).T
            x = transpose(context, reshape(context, x, (1,) * (2 - x.ndim) + x.shape))
        arrays.append(x)
    return concatenate(context, arrays, 1)


def dstack(context, tup):
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

def _no_writes(root, value):
    graph_break("a write to an np.broadcast_arrays view (NumPy writes the elements it repeats)")


def broadcast_arrays(context, *args, subok=False):
    # np.array(a, copy=None): arrays as they are, a NumPy scalar as a new 0-d array
    values = [(_new(context, a.tensor) if a._scalar else a) if isinstance(a, TracedArray) else
              a if isinstance(a, np.ndarray) else np.array(a) for a in args]
    shape = np.broadcast_shapes(*[np.shape(v) for v in values])
    if _LEGACY and all(np.shape(v) == shape for v in values):
        return list(values)
    results = []
    for value in values:
        if np.shape(value) == shape and not _LEGACY:  # NumPy returns the array itself
            results.append(value)
            continue
        x = _as_traced(context, value)
        view = x._make_view(_k().broadcast_to(x.tensor, list(shape)),
                            lambda root: _k().broadcast_to(root, list(shape)), _no_writes)
        view._scalar = False
        results.append(view)
    return _SEQUENCE(results)


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


FUNCTIONS = {
    np.take: take, np.take_along_axis: take_along_axis, np.put_along_axis: put_along_axis,
    np.put: put, np.choose: choose, np.select: select, np.compress: compress, np.diag: diag,
    np.diagflat: diagflat, np.fliplr: fliplr, np.flipud: flipud, np.rot90: rot90,
    np.split: split, np.array_split: array_split, np.hsplit: hsplit,
    np.vsplit: _split_along("vsplit", 2, 0), np.dsplit: _split_along("dsplit", 3, 2),
    np.column_stack: column_stack, np.dstack: dstack, np.append: append, np.insert: insert,
    np.delete: delete, np.resize: resize, np.broadcast_arrays: broadcast_arrays,
    np.meshgrid: meshgrid, np.copyto: copyto, np.kron: kron, np.vander: vander,
    np.fill_diagonal: fill_diagonal,
}
