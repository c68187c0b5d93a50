"""ufunc.reduceat of a traced array at indices the trace knows ("100 NumPy exercises" #87's
block sums, `np.add.reduceat(Z, np.arange(0, n, k), axis=0)`). Segment i is
x[idx[i]:idx[i + 1]] where the indices rise, else the single x[idx[i]], as NumPy's. One gather
reads every segment as a row padded to the longest one, at positions the trace computes; the
padding holds the ufunc's identity (add, multiply) or repeats the segment's first element
(maximum, minimum, logical and/or: a repeat changes nothing); one reduction along the rows
follows. NumPy's result on a stand-in of x's shape (no memory) gives the errors, the dtype and
the shape. Traced indices, out=, ufuncs without a traced reduction, and segments so uneven
that the padded rows hold more than PADDING_AT_MOST times x's elements run eagerly
(UNSUPPORTED)."""
import numpy as np

from ._numpy_reductions import _UFUNC_REDUCTIONS
from ._numpy_math import _known
from ._tracer import TracedArray, context_of, normalize_axis
from ._ufunc_loops import UNSUPPORTED

PADDING_AT_MOST = 4


def reduceat(ufunc, inputs, kwargs):
    if len(inputs) != 2 or not set(kwargs) <= {"axis", "dtype"} or ufunc not in _UFUNC_REDUCTIONS:
        return UNSUPPORTED
    x, indices = inputs
    if not isinstance(x, TracedArray) or x._selection is not None:
        return UNSUPPORTED
    indices = _known(context_of([x]), indices)
    if indices is None:
        return UNSUPPORTED
    indices = np.asarray(indices)
    axis, dtype = kwargs.get("axis", 0), kwargs.get("dtype")
    stand_in = np.broadcast_to(np.zeros((), x.dtype), x.shape)
    expected = ufunc.reduceat(stand_in, indices, axis=axis, dtype=dtype)  # NumPy's errors
    if indices.ndim != 1 or indices.size == 0:
        return UNSUPPORTED
    axis = normalize_axis(axis, x.ndim, "reduceat")
    extent = x.shape[axis]
    starts = indices.astype(np.int64)
    ends = np.append(starts[1:], extent)
    lengths = np.where(starts < ends, ends - starts, 1)
    width = int(lengths.max())
    if starts.size * width > PADDING_AT_MOST * extent + 64:
        return UNSUPPORTED
    offsets = np.arange(width)
    inside = offsets < lengths[:, None]
    positions = np.where(inside, starts[:, None] + offsets, starts[:, None])
    rows = np.moveaxis(x, axis, 0).astype(expected.dtype, copy=False)[positions]
    if ufunc in (np.add, np.multiply):
        inside = inside.reshape(inside.shape + (1,) * (x.ndim - 1))
        rows = np.where(inside, rows, ufunc.identity)
    return np.moveaxis(ufunc.reduce(rows, axis=1, dtype=expected.dtype), 0, axis)
