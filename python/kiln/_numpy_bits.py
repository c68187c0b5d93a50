"""np.unpackbits and np.packbits: bytes to bits and back, of shapes the arguments fix, as shifts,
masks and weighted sums (a bitset scan per row in a loop was a graph break that unrolled it)."""
import numpy as np

from ._numpy_functions import _as_traced
from ._tracer import call_eagerly
from ._tracer_types import normalize_axis

_ORDERS = ("big", "little")


def _eager(function, args, kwargs, why):
    return call_eagerly(function, args, kwargs, f"numpy.{function.__name__} {why}")


def _bit_shape(ndim, axis):
    """The shape of the eight bits' weights beside `axis` of an array of ndim + 1 axes."""
    shape = [1] * (ndim + 1)
    shape[axis + 1] = 8
    return tuple(shape)


def unpackbits(context, a, /, axis=None, count=None, bitorder="big"):
    x = _as_traced(context, a)
    arguments = {"axis": axis, "count": count, "bitorder": bitorder}
    if x.dtype != np.uint8 or bitorder not in _ORDERS or not (
            count is None or isinstance(count, int) and not isinstance(count, bool)):
        return _eager(np.unpackbits, (a,), arguments, "of this dtype or these arguments")
    if axis is None or x.ndim == 0:  # (NumPy reads a 0-d array as 1-d)
        x, axis = np.ravel(x), 0 if axis is None else axis
    axis = normalize_axis(axis, x.ndim, "unpackbits")
    shifts = np.arange(7, -1, -1) if bitorder == "big" else np.arange(8)
    bits = (np.expand_dims(x, axis + 1) >> shifts.astype(np.uint8).reshape(
        _bit_shape(x.ndim, axis))) & np.uint8(1)
    shape = list(x.shape)
    shape[axis] *= 8
    bits = bits.reshape(shape)
    if count is None:
        return bits
    length = shape[axis]
    kept = count if count >= 0 else max(length + count, 0)
    if count < 0 and length + count < 0:
        return _eager(np.unpackbits, (a,), arguments, "with a count past the bits")
    if kept <= length:
        return np.take(bits, np.arange(kept), axis=axis)
    # zeros past the bits (NumPy's docs; its run leaves them unwritten for an empty array)
    padding = [(0, 0)] * len(shape)
    padding[axis] = (0, kept - length)
    return np.pad(bits, padding)


def packbits(context, a, /, axis=None, bitorder="big"):
    x = _as_traced(context, a)
    if x.dtype.kind not in "biu" or bitorder not in _ORDERS:
        return _eager(np.packbits, (a,), {"axis": axis, "bitorder": bitorder},
                      "of this dtype or bit order")
    if axis is None or x.ndim == 0:
        x, axis = np.ravel(x), 0 if axis is None else axis
    axis = normalize_axis(axis, x.ndim, "packbits")
    bits = (x != 0).astype(np.uint8)
    length = bits.shape[axis]
    if length % 8:
        padding = [(0, 0)] * bits.ndim
        padding[axis] = (0, 8 - length % 8)
        bits = np.pad(bits, padding)
    shape = list(bits.shape)
    shape[axis:axis + 1] = [shape[axis] // 8, 8]
    weights = np.left_shift(np.uint8(1), np.arange(7, -1, -1) if bitorder == "big"
                            else np.arange(8)).astype(np.uint8)
    return np.sum(bits.reshape(shape) * weights.reshape(_bit_shape(bits.ndim, axis)),
                  axis=axis + 1, dtype=np.uint8)


FUNCTIONS = {np.unpackbits: unpackbits, np.packbits: packbits}
