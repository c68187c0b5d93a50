"""ufunc methods that NumPy computes one element after another, traced as one loop node each.

`ufunc.accumulate` of ufuncs other than add/multiply (`np.logical_or.accumulate`, a running
`np.bitwise_xor`) and `ufunc.at(a, idx, v)` of ufuncs other than add/subtract
(`np.multiply.at`, `np.maximum.at`: unbuffered, so a repeated index applies its values in turn)
have no primitive of their own; they ran eagerly, a graph break. Here each is the loop NumPy
runs, captured by kiln._loop_capture as one `loop` node (compiled once, any length):
`y[i] = ufunc(y[i - 1], x[i])` for accumulate, and `a[idx[j]] = ufunc(a[idx[j]], v[j])` for at,
each step in NumPy's own promotion and cast back on assignment, as NumPy's inner loop casts each
step. Where the loop cannot be captured the caller runs the method eagerly, as before.
`np.maximum.accumulate` and `np.minimum.accumulate` of real arrays (running maxima: drawdowns,
envelopes) are kiln's cummax and cummin scans, which combine as those loop steps do (NaN sticks,
of equal values the later): one fused kernel, where the loop (a step per element) ran 3x slower
than NumPy along rows (1000 x 10000 float64, 167 against 54 ms).
"""
import math
import operator

import numpy as np

from ._graph_breaks import user_location
from ._loop_capture import LoopCapture, _plain
from ._loop_types import CaptureFailed
from ._numpy_functions import _k, _result
from ._tracer import TracedArray, context_of

UNSUPPORTED = object()  # the caller runs the method eagerly
_SCANS = {np.maximum: "cummax", np.minimum: "cummin"}  # accumulate of real arrays: kiln's scans
# ufunc.at over more index positions runs eagerly: a loop step costs a few nanoseconds, and
# NumPy 2's own loop of many positions (its fast path) beats the graph break it costs (an
# np.maximum.at of 10,000 positions in a small function: 0.08 ms as a loop, 0.04 ms eager).
AT_LOOP_AT_MOST = 4096


def _loop(context, count, body, state):
    """`for i in range(count): body(i, state)` as one loop node; `state` (name -> traced array)
    holds what the body updates in place or rebinds, and is updated to the values after it."""
    names = tuple(state) + ("__kiln_index",)

    def get():
        return tuple(state.get(name, LoopCapture.UNBOUND) for name in names)

    def set_(values):
        for name, value in zip(names, values):
            if value is LoopCapture.UNBOUND:
                state.pop(name, None)
            elif value is not LoopCapture.KEEP:
                state[name] = value

    capture = LoopCapture(context, lambda kind, location, reason: None)
    capture._capture((0, count), range(count), lambda index: body(index, state), get, set_,
                     names, tuple(state), user_location())
    state.pop("__kiln_index", None)


def accumulate(ufunc, x, axis=0, dtype=None, out=None):
    """ufunc.accumulate of a binary ufunc whose result keeps the operands' dtype (maximum,
    minimum, logical_or on bools, ...), or UNSUPPORTED."""
    if not isinstance(x, TracedArray) or ufunc.nin != 2 or x._selection is not None:
        return UNSUPPORTED
    if axis is None:
        if x.ndim != 1:
            return UNSUPPORTED  # NumPy's error
        axis = 0
    try:
        axis = operator.index(axis)
    except TypeError:
        return UNSUPPORTED      # NumPy's error (a tuple or a float axis)
    if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
        return UNSUPPORTED      # NumPy's errors
    work_dtype = np.dtype(dtype) if dtype is not None else x.dtype
    try:
        resolved = ufunc.resolve_dtypes((work_dtype, work_dtype, None))
    except (TypeError, AttributeError):  # no loop for it (NumPy's error), or NumPy < 1.24
        return UNSUPPORTED
    if resolved[2] != work_dtype:
        return UNSUPPORTED
    context = context_of([x])
    if ufunc in _SCANS and work_dtype.kind in "biuf":  # along the axis itself: no transposes
        scanned = getattr(_k(), _SCANS[ufunc])(x.astype(work_dtype).tensor, axis % x.ndim)
        result = _result(context, scanned, scalar=False)
    else:
        values = np.moveaxis(x, axis, 0).astype(work_dtype)  # a copy of its own
        try:
            values = _scan(context, ufunc, values)
        except CaptureFailed:
            return UNSUPPORTED
        result = np.moveaxis(values, 0, axis)
    if out is not None:
        out[...] = result
        return out
    return result


def _scan(context, ufunc, values):
    """values[i] = ufunc(values[i - 1], values[i]) along the first axis, one loop step each."""
    if values.shape[0] < 2:
        return values

    def step(i, state):
        state["y"][i + 1] = ufunc(state["y"][i], state["y"][i + 1])
    state = {"y": values}
    _loop(context, values.shape[0] - 1, step, state)
    return state["y"]


def _index_arrays(key):
    """The integer index arrays of an at() key (an integer array, or a tuple of them and of
    integers), or None for keys kiln leaves to NumPy (slices, masks, Ellipsis, None)."""
    items = key if isinstance(key, tuple) else (key,)
    arrays = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or item is None or item is Ellipsis or isinstance(
                item, slice):
            return None
        if isinstance(item, TracedArray):
            if item.dtype.kind not in "iu" or item._selection is not None:
                return None
            arrays.append(item)
            continue
        try:
            array = np.asarray(item)
        except Exception:  # noqa: BLE001 - tracers inside a list: NumPy's path
            return None
        if array.dtype.kind not in "iu":
            return None
        arrays.append(array)
    return arrays


def _traced(context, value):
    return value if isinstance(value, TracedArray) else context.lift(np.asarray(value))


def at(ufunc, target, key, value=None):
    """ufunc.at(target, key[, value]) as a loop over the index positions, or UNSUPPORTED."""
    if (not isinstance(target, TracedArray) or target._selection is not None
            or ufunc.nin != (1 if value is None else 2) or ufunc.nout != 1):
        return UNSUPPORTED
    arrays = _index_arrays(key)
    if arrays is None or len(arrays) > target.ndim:
        return UNSUPPORTED
    try:
        shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
        selected = shape + tuple(target.shape[len(arrays):])
        if value is not None:
            np.broadcast_shapes(np.shape(value), selected)  # NumPy's error where they differ
    except ValueError:
        return UNSUPPORTED
    count = math.prod(shape)
    if count == 0:
        return None
    if count > AT_LOOP_AT_MOST:
        return UNSUPPORTED
    context = context_of([target])
    flat = [np.broadcast_to(_traced(context, a), shape).reshape(count) for a in arrays]
    scalar = value is None or (np.ndim(value) == 0 and not isinstance(value, TracedArray))
    if not scalar:  # a Python or NumPy scalar stays one: NumPy's promotion of each step
        value = np.broadcast_to(_traced(context, value), selected).reshape(
            (count,) + selected[len(shape):])
    work = target if _plain(target) else target.copy()

    def step(j, state):
        index = tuple(a[j] for a in flat)
        a = state["a"]
        a[index] = (ufunc(a[index]) if value is None else
                    ufunc(a[index], value if scalar else value[j]))
    state = {"a": work}
    try:
        _loop(context, count, step, state)
    except CaptureFailed:
        return UNSUPPORTED
    if work is not target:
        target[...] = state["a"]
    return None
