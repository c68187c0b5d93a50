"""Tracer implementations of NumPy's tile, repeat, roll and pad. Each takes the TraceContext
first, then NumPy's arguments.

Everything is built from reshape, broadcast, slice, flip, pad and concatenate, which kiln's
scheduler turns into index arithmetic: no intermediate copies. Arguments that decide shapes
(reps, repeats, shifts, pad widths) must be concrete; a traced one is a graph break."""
import operator

import numpy as np

from ._numpy_functions import _as_traced, _k, _result
from ._tracer import TracedArray, cast, has_tracer, materialize_all, normalize_axis
from ._tracer_types import check_not_bool_axis


def _new(context, tensor):
    """A fresh array (NumPy returns copies here, never views or NumPy scalars)."""
    return _result(context, tensor, scalar=False)


def _range(tensor, axis, start, stop, step=1):
    """tensor[..., start:stop:step, ...] along `axis`."""
    return _k().slice(tensor, [slice(None)] * axis + [slice(start, stop, step)])


def _join(parts, axis):
    """Concatenates the parts that are not None along `axis`."""
    parts = [p for p in parts if p is not None]
    return parts[0] if len(parts) == 1 else _k().concatenate(parts, axis)


def _with_axis(shape, axis, size):
    return [size if d == axis else n for d, n in enumerate(shape)]


# ---- tile and repeat ----

def tile(context, A, reps):
    x = _as_traced(context, A)
    try:
        reps = tuple(reps)
    except TypeError:
        reps = (reps,)
    reps = tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    return _new(context, _k().tile(x.tensor, list(reps)))


def repeat(context, a, repeats, axis=None):
    check_not_bool_axis(axis)
    x = _as_traced(context, a)
    if has_tracer(repeats):
        repeats = materialize_all(repeats, "np.repeat with traced repeats has a data-dependent "
                                  "shape")
    k = _k()
    tensor = x.tensor
    if axis is None or x.ndim == 0:  # NumPy treats a 0-d array as 1-d here
        tensor = k.reshape(tensor, [-1])
    shape = list(tensor.shape)
    axis = normalize_axis(0 if axis is None else operator.index(axis), len(shape), "repeat")
    n = shape[axis]
    counts = np.asarray(repeats).ravel()
    # NumPy itself checks repeats (type, sign, length) and gives the gather index.
    index = np.repeat(np.arange(min(n, 1) if counts.size == 1 else n), repeats)
    if counts.size and (counts == counts[0]).all():  # one count: a broadcast view (C++)
        count = len(index) // len(counts) if counts.size > 1 else len(index)
        return _new(context, k.repeat(tensor, count, axis))
    return _new(context, k.take(tensor, context.lift(index).tensor, axis, check_bounds=False))


# ---- roll ----

def _roll_traced(context, x, shift, axis):
    """Roll by a traced integer along one axis: a gather at (i - shift) mod n."""
    k = _k()
    n = x.shape[axis]
    if n == 0:
        return _new(context, x.tensor)
    positions = k.arange(x.tensor, n, "int64")
    index = k.mod(k.subtract(positions, cast(shift.tensor, np.int64)), float(n))
    return _new(context, k.take(x.tensor, index, axis, check_bounds=False))  # mod n: in range


def roll(context, a, shift, axis=None):
    x = _as_traced(context, a)
    k = _k()
    if axis is None:
        flat = roll(context, _new(context, k.reshape(x.tensor, [-1])), shift, 0)
        return _new(context, k.reshape(flat.tensor, list(x.shape)))
    axes = [normalize_axis(operator.index(d), x.ndim, "roll")
            for d in (axis if np.ndim(axis) else [axis])]
    if (isinstance(shift, TracedArray) and shift.ndim == 0 and shift.dtype.kind in "iu"
            and len(axes) == 1):
        return _roll_traced(context, x, shift, axes[0])
    shift = materialize_all(shift, "np.roll by traced shifts along several axes")
    broadcast = np.broadcast(shift, axes)
    if broadcast.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    pairs = list(broadcast)  # (shift, axis); an axis may repeat, its shifts add up
    shifts, axes = [int(amount) for amount, _ in pairs], [int(d) for _, d in pairs]
    return _new(context, k.roll(x.tensor, shifts, axes))


# ---- pad ----

_PAD_KWARGS = {
    "empty": [], "edge": [], "wrap": [], "constant": ["constant_values"],
    "linear_ramp": ["end_values"], "maximum": ["stat_length"], "mean": ["stat_length"],
    "median": ["stat_length"], "minimum": ["stat_length"], "reflect": ["reflect_type"],
    "symmetric": ["reflect_type"],
}


def _object_array(value):
    """A nested sequence holding tracers as an object array (np.array would materialise)."""
    if isinstance(value, TracedArray) and value.ndim > 0:
        value = list(value)
    if isinstance(value, (list, tuple)):
        items = [_object_array(v) for v in value]
        result = np.empty((len(items),) + (items[0].shape if items else ()), object)
        for i, item in enumerate(items):
            result[i, ...] = item  # ValueError for ragged nesting, as NumPy
        return result
    if isinstance(value, np.ndarray):
        return value.astype(object)
    result = np.empty((), object)
    result[()] = value
    return result


def _as_pairs(x, ndim, as_index=False):
    """NumPy's _as_pairs (lib/_arraypad_impl.py): x broadcast to `ndim` (before, after) pairs.
    Values may be tracers (for constant_values and end_values)."""
    if x is None:
        return [(None, None)] * ndim
    x = _object_array(x) if has_tracer(x) else np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x < 0:
                raise ValueError("index can't contain negative values")
            return [(x[0], x[0])] * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return [(x[0], x[1])] * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _pad_widths(pad_width, ndim):
    if isinstance(pad_width, dict):
        widths = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            if isinstance(width, int):
                widths[axis] = width, width
            elif (isinstance(width, tuple) and len(width) == 2
                  and all(isinstance(w, int) for w in width)):
                widths[axis] = width
            else:
                raise AssertionError(f"Expected code to be unreachable, but got: {width!r}")
        pad_width = widths
    pad_width = np.asarray(pad_width)
    if pad_width.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    return [(int(b), int(a)) for b, a in _as_pairs(pad_width, ndim, as_index=True)]


def _fill_value(value, dtype):
    """A concrete fill converted to `dtype` as NumPy's assignment does (errors included)."""
    holder = np.empty((), dtype)
    holder[()] = value
    return holder.item()


def _block(context, value, dtype, shape):
    """A constant block of `shape` holding `value` (a concrete scalar or a traced one)."""
    if isinstance(value, TracedArray):
        return _k().broadcast_to(cast(value.tensor, dtype), shape)
    return context.constant(_fill_value(value, dtype), dtype, shape)


def _pad_constant(context, x, widths, values):
    k = _k()
    shape, dtype = list(x.shape), x.dtype
    flat = [v for pair in values for v in pair]
    if not has_tracer(flat):
        fills = {_fill_value(v, dtype) for v in flat}
        fill = next(iter(fills), 0)
        # One value everywhere: one pad node, whose fill is a double (integers past 2**53 are
        # blocks of their own dtype instead).
        if len(fills) <= 1 and (dtype.kind not in "iu" or float(fill) == fill):
            return k.pad(x.tensor, [tuple(w) for w in widths], "constant", float(fill))
    tensor = x.tensor
    for axis, ((before, after), (low, high)) in enumerate(zip(widths, values)):
        # Later axes pad over earlier ones: their values win in the corners, as in NumPy.
        tensor = _join([_block(context, low, dtype, _with_axis(shape, axis, before))
                        if before else None, tensor,
                        _block(context, high, dtype, _with_axis(shape, axis, after))
                        if after else None], axis)
        shape[axis] += before + after
    return tensor


def _stat_blocks(context, tensor, axis, widths, lengths, mode, dtype):
    """Blocks of the maximum/minimum/mean of the first/last `lengths` values (_get_stats)."""
    k = _k()
    shape = list(tensor.shape)
    n = shape[axis]
    lengths = [n if length is None or length > n else int(length) for length in lengths]
    if 0 in lengths and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")

    def statistic(start, stop):
        chunk = _range(tensor, axis, start, stop)
        if mode == "maximum":
            return k.max(chunk, [axis], True)
        if mode == "minimum":
            return k.min(chunk, [axis], True)
        value = np.mean(_new(context, chunk), axis=axis, keepdims=True).tensor
        if np.issubdtype(dtype, np.integer):
            value = k.round(value)
        return cast(value, dtype)

    low = statistic(0, lengths[0])
    high = low if lengths[0] == lengths[1] == n else statistic(n - lengths[1], n)
    return [k.broadcast_to(stat, _with_axis(shape, axis, width)) if width else None
            for stat, width in zip((low, high), widths)]


def _ramp_blocks(context, tensor, axis, widths, end_values, dtype):
    """np.linspace(end_value, edge, width, endpoint=False) on each side (_get_linear_ramps),
    in float64 with linspace's own formula (it matters for the floor of integer ramps)."""
    k = _k()
    shape = list(tensor.shape)
    n = shape[axis]
    blocks = []
    for side, (width, end) in enumerate(zip(widths, end_values)):
        if not width:
            blocks.append(None)
            continue
        edge = cast(_range(tensor, axis, n - 1, n) if side else _range(tensor, axis, 0, 1),
                    np.float64)
        start = (cast(end.tensor, np.float64) if isinstance(end, TracedArray)
                 else context.constant(float(end), np.float64))
        steps = k.reshape(k.arange(tensor, width, "float64"),
                          [width if d == axis else 1 for d in range(len(shape))])
        delta = k.subtract(edge, start)
        step = k.divide(delta, float(width))
        any_zero = k.any(k.equal(step, 0.0), [], False)
        ramp = k.where(any_zero, k.multiply(k.divide(steps, float(width)), delta),
                       k.multiply(steps, step))
        ramp = k.add(ramp, start)
        if np.issubdtype(dtype, np.integer):  # floor, then wrap like C's conversion does
            ramp = cast(k.floor(ramp), np.int64)
        ramp = cast(ramp, dtype)
        blocks.append(k.flip(ramp, [axis]) if side else ramp)
    return blocks


def _reflect_step(tensor, axis, widths, period, include_edge, odd):
    """One round of NumPy's _set_reflect_both: returns the grown tensor and the widths left."""
    k = _k()
    length = tensor.shape[axis]
    if include_edge:
        usable, offset = length // period * period, 0
    else:
        usable, offset = (length - 1) // (period - 1) * (period - 1), 1
    parts, left = [], []
    for side, width in enumerate(widths):
        chunk_length = min(usable, width)
        if not chunk_length:
            parts.append(None)
            left.append(width)
            continue
        if side == 0:  # values offset .. offset+chunk-1, mirrored
            chunk = k.flip(_range(tensor, axis, offset, offset + chunk_length), [axis])
            edge = _range(tensor, axis, 0, 1)
        else:
            stop = length - offset
            chunk = k.flip(_range(tensor, axis, stop - chunk_length, stop), [axis])
            edge = _range(tensor, axis, length - 1, length)
        if odd:  # 2 * edge - chunk, in the array's type (bool through int64, as NumPy)
            dtype = tensor.dtype
            wide = (lambda t: cast(t, np.int64)) if dtype == "bool" else (lambda t: t)
            chunk = cast(k.subtract(k.add(wide(edge), wide(edge)), wide(chunk)), dtype)
        parts.append(chunk)
        left.append(width - chunk_length)
    return _join([parts[0], tensor, parts[1]], axis), left


def _wrap_step(tensor, axis, widths, period):
    """One round of NumPy's _set_wrap_both."""
    length = tensor.shape[axis]
    usable = length // period * period
    before, after = (min(usable, w) for w in widths)
    low = _range(tensor, axis, usable - before, usable) if before else None
    high = _range(tensor, axis, length - usable, length - usable + after) if after else None
    return _join([low, tensor, high], axis), [widths[0] - before, widths[1] - after]


def _backend_pad(tensor, axis, widths, mode):
    """The backend's pad node (edge or reflect) along one axis."""
    axis_widths = [(0, 0)] * len(tensor.shape)
    axis_widths[axis] = tuple(widths)
    return _k().pad(tensor, axis_widths, mode, 0.0)


def _pad_axis(context, tensor, axis, widths, mode, options):
    """Pads one axis of `tensor` (already padded along the earlier axes, as NumPy does)."""
    n = tensor.shape[axis]
    dtype = np.dtype(tensor.dtype)
    if mode in ("reflect", "symmetric") and n == 1:  # NumPy's legacy rule: edge padding
        return _backend_pad(tensor, axis, widths, "edge")
    if mode in ("maximum", "minimum", "mean"):
        low, high = _stat_blocks(context, tensor, axis, widths, options, mode, dtype)
        return _join([low, tensor, high], axis)
    if mode == "linear_ramp":
        low, high = _ramp_blocks(context, tensor, axis, widths, options, dtype)
        return _join([low, tensor, high], axis)
    odd = mode != "wrap" and options == "odd"
    if mode == "reflect" and not odd and max(widths) < n:  # one mirror: the backend's pad
        return _backend_pad(tensor, axis, widths, "reflect")
    while any(widths):  # wider than the array: mirror/wrap again, like NumPy
        if mode == "wrap":
            tensor, widths = _wrap_step(tensor, axis, widths, n)
        else:
            tensor, widths = _reflect_step(tensor, axis, widths, n, mode == "symmetric", odd)
    return tensor


# NumPy < 1.25 pads wider than the array with a different (since fixed) chunking.
_WHOLE_PERIODS = np.lib.NumpyVersion(np.__version__) >= "1.25.0"


def _needs_old_rounds(shape, widths, mode):
    if _WHOLE_PERIODS or mode not in ("reflect", "symmetric", "wrap"):
        return False
    return any(n > 1 and max(pair) > n - (mode == "reflect") for n, pair in zip(shape, widths))


def pad(context, array, pad_width, mode="constant", **kwargs):
    x = _as_traced(context, array)
    widths = _pad_widths(pad_width, x.ndim)
    if x.dtype.kind == "c" and mode not in ("maximum", "minimum", "median") and not callable(mode):
        # Every other mode acts on the real and imaginary parts apart (so do its values).
        k = _k()
        parts = [pad(context, _new(context, take(x.tensor)), pad_width, mode, **{
            key: (np.real(value) if take is k.real else np.imag(value))
            if key in ("constant_values", "end_values") else value
            for key, value in kwargs.items()}) for take in (k.real, k.imag)]
        return _new(context, k.complex(parts[0].tensor, parts[1].tensor))
    ordered = x.dtype.kind == "c"  # maximum, minimum: NumPy orders complex values
    if callable(mode) or mode == "median" or ordered or _needs_old_rounds(x.shape, widths, mode):
        reason = ("np.pad with a function as mode" if callable(mode) else
                  "np.pad with mode 'median'" if mode == "median" else
                  f"np.pad ({mode}) of complex values" if ordered else
                  f"np.pad ({mode}) wider than the array on NumPy < 1.25")
        array, kwargs = materialize_all((x, kwargs), reason)
        return np.pad(array, widths, mode, **kwargs)
    try:
        unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    except KeyError:
        raise ValueError(f"mode '{mode}' is not supported") from None
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    k = _k()
    if mode in ("constant", "empty"):
        values = _as_pairs(kwargs.get("constant_values", 0), x.ndim)
        return _new(context, _pad_constant(context, x, widths, values))
    padded_shape = [n + b + a for n, (b, a) in zip(x.shape, widths)]
    if x.size == 0:
        for axis, (n, pair) in enumerate(zip(x.shape, widths)):
            if n == 0 and any(pair):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
        return _new(context, context.constant(0, x.dtype, padded_shape))
    if mode == "edge":  # separable: one pad node for all axes
        return _new(context, k.pad(x.tensor, widths, "edge", 0.0))
    if mode in ("maximum", "minimum", "mean"):
        options = _as_pairs(kwargs.get("stat_length"), x.ndim, as_index=True)
    elif mode == "linear_ramp":
        options = _as_pairs(kwargs.get("end_values", 0), x.ndim)
    else:
        options = [kwargs.get("reflect_type", "even")] * x.ndim
    tensor = x.tensor
    for axis, (pair, option) in enumerate(zip(widths, options)):
        if mode in ("maximum", "minimum", "mean") or any(pair):
            tensor = _pad_axis(context, tensor, axis, list(pair), mode, option)
    return _new(context, tensor)


FUNCTIONS = {np.tile: tile, np.repeat: repeat, np.roll: roll, np.pad: pad}
