"""np.concatenate, np.stack, np.hstack, np.vstack and np.atleast_1d/2d/3d of traced arrays
(their entries of _numpy_api.FUNCTIONS): NumPy's dtype= and casting= rules, an out= that
overlaps the inputs copied into in turn as NumPy does, and the rows of a loop's appends
joined whole (kiln._stacked_rows)."""
import numpy as np

from . import _stacked_rows
from ._numpy_functions import (_as_traced, _check_casting, _check_out, _k, _result, expand_dims,
                               ravel, reshape)
from ._tracer import TracedArray, cast, check_dtype, normalize_axis, traced
from ._tracer_types import check_not_bool_axis


def _common(context, arrays, dtype=None):
    values = [_as_traced(context, a) for a in arrays]
    common = check_dtype(dtype) if dtype is not None else np.result_type(
        *[v.dtype for v in values])
    return values, common


def concatenate(context, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    check_not_bool_axis(axis)
    if axis is not None:  # the rows of a loop's appends, whole: their stack, reshaped
        arrays = _stacked_rows.gathered(arrays, tuple, axis) or arrays
    values, common = _common(context, arrays, dtype)
    _check_casting(values, common, out, casting)
    if axis is None:
        values, axis = [ravel(context, v) for v in values], 0
    axis = normalize_axis(axis, values[0].ndim, "concatenate")
    tensor = _k().concatenate([cast(v.tensor, common) for v in values], axis)
    if isinstance(out, TracedArray) and _shares_root(values, out):
        _check_out(tensor, out)
        return _copied_in_turn(context, values, axis, common, out)
    return _result(context, tensor, out, scalar=False)


def _root_of(x):
    return x._root if x._root is not None else x


def _shares_root(values, out):
    return any(_root_of(v) is _root_of(out) for v in values)


def _copied_in_turn(context, values, axis, common, out):
    """np.concatenate into an out= that overlaps its inputs: NumPy copies one input after the
    other, each read as the copies before it left the memory (`np.concatenate([x[:2], x[:2]],
    out=x[1:5])` copies the first copy again); one concatenation of the inputs as they were
    gave other values."""
    start = 0
    for value in values:
        stop = start + value.shape[axis]
        index = (slice(None),) * axis + (slice(start, stop),)
        out[index] = traced(context, cast(value.tensor, common))
        start = stop
    return out


def stack(context, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    parts = _stacked_rows.stacked_along(arrays, axis, lambda a, at: expand_dims(context, a, at))
    if parts is not None:  # the rows of a loop's appends, whole: their stack, its axis moved
        return concatenate(context, *parts, out, dtype=dtype, casting=casting)
    values, common = _common(context, arrays, dtype)
    _check_casting(values, common, out, casting)
    shapes = {v.shape for v in values}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis(axis, values[0].ndim + 1, "stack")
    if isinstance(out, TracedArray) and _shares_root(values, out):  # NumPy's: in turn
        return concatenate(context, [expand_dims(context, v, axis) for v in values], axis, out,
                           dtype=dtype, casting=casting)
    tensor = _k().stack([cast(v.tensor, common) for v in values], axis)
    return _result(context, tensor, out, scalar=False)


def _at_least_shape(rank, shape):
    """The shape np.atleast_2d / np.atleast_3d (rank 2, 3; 1: np.atleast_1d) give `shape`."""
    shape = list(shape)
    if len(shape) < rank:
        if rank == 3 and len(shape) == 2:
            shape = shape + [1]
        elif rank == 3 and len(shape) == 1:
            shape = [1] + shape + [1]
        else:
            shape = [1] * (rank - len(shape)) + shape
    return shape


def _at_least(rank):
    def at_least(context, *arrays):
        results = []
        for a in arrays:
            x = _as_traced(context, a)
            shape = _at_least_shape(rank, x.shape)
            results.append(reshape(context, x, shape) if len(shape) != x.ndim else x)
        return results[0] if len(results) == 1 else results
    return at_least


def hstack(context, tup, *, dtype=None, casting="same_kind"):
    rows = _stacked_rows.row_shape(tup)
    if rows is not None:  # concatenated along 0 or 1, as the items' rank makes it
        tup = _stacked_rows.gathered(tup, lambda shape: _at_least_shape(1, shape),
                                     0 if len(rows) <= 1 else 1) or tup
    values = [_at_least(1)(context, a) for a in tup]
    return concatenate(context, values, 0 if values[0].ndim == 1 else 1, dtype=dtype,
                       casting=casting)


def vstack(context, tup, *, dtype=None, casting="same_kind"):
    tup = _stacked_rows.gathered(tup, lambda shape: _at_least_shape(2, shape), 0) or tup
    return concatenate(context, [_at_least(2)(context, a) for a in tup], 0, dtype=dtype,
                       casting=casting)


FUNCTIONS = {
    np.concatenate: concatenate, np.stack: stack, np.hstack: hstack, np.vstack: vstack,
    np.atleast_1d: _at_least(1), np.atleast_2d: _at_least(2), np.atleast_3d: _at_least(3),
}
