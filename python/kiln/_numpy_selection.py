"""Tracer implementations of NumPy's selection functions (take, take_along_axis, put, choose,
select, compress, copyto, fill_diagonal, broadcast_arrays; layout ones are _numpy_layout.py's).
Each takes the TraceContext first, then NumPy's arguments, and is built from the tracer's own
operations; arguments that decide shapes must be concrete (a traced one is a graph break).

They follow NumPy's own code (numpy/lib/_shape_base_impl.py, _function_base_impl.py,
_twodim_base_impl.py, _core/multiarray's take/put/choose). Where NumPy's rules are intricate
(index dtypes, clip modes, value casts, out= dtypes) NumPy itself decides them on small concrete
stand-ins, so its errors and warnings are its own. put, put_along_axis, copyto and
fill_diagonal update the traced array (through views, like setitem)."""
import operator

import numpy as np

from ._indexing import _fit_value, _shape_text, stripped_to_fit
from ._numpy_functions import _as_traced, _k, _result, axis_operand, ravel, reshape, reshape_view
from ._numpy_manipulation import _join, _new, _range
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
    if isinstance(value, TracedArray) and value._selection is None:
        known = value._context.known.get(value._tensor_id())
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
    x = axis_operand(context, a, axis)
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
        flat = reshape_view(x, [x.size])  # the writes reach x, whatever its layout
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
    stripped = stripped_to_fit(shape, target, strip)
    if stripped is None:
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
        flat = reshape_view(x, [x.size])  # the writes reach x, whatever its layout
        flat[:end:step] = values


# ---- broadcasting ----

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


FUNCTIONS = {
    np.take: take, np.take_along_axis: take_along_axis, np.put_along_axis: put_along_axis,
    np.put: put, np.choose: choose, np.select: select, np.compress: compress,
    np.broadcast_arrays: broadcast_arrays, np.copyto: copyto, np.fill_diagonal: fill_diagonal,
}
