"""ufunc.reduceat of a traced array at indices the trace knows ("100 NumPy exercises" #87's
block sums, `np.add.reduceat(Z, np.arange(0, n, k), axis=0)`): one ufunc.reduce per segment,
stacked along the axis. Segment i is x[idx[i]:idx[i + 1]] where the indices rise, else the
single x[idx[i]], as NumPy's. NumPy's result on a stand-in of x's shape (no memory) gives the
errors, the dtype and the shape. Traced indices, out=, ufuncs without a traced reduction and
more than SEGMENTS_AT_MOST segments run eagerly (UNSUPPORTED)."""
import numpy as np

from ._numpy_functions import _UFUNC_REDUCTIONS
from ._numpy_math import _known
from ._tracer import TracedArray, context_of, normalize_axis
from ._ufunc_loops import UNSUPPORTED

SEGMENTS_AT_MOST = 256  # a reduction node per segment


def reduceat(ufunc, inputs, kwargs):
    if len(inputs) != 2 or not set(kwargs) <= {"axis", "dtype"} or ufunc not in _UFUNC_REDUCTIONS:
        return UNSUPPORTED
    x, indices = inputs
    if not isinstance(x, TracedArray) or x._selection is not None:
        return UNSUPPORTED
    context = context_of([x])
    indices = _known(context, indices)
    if indices is None:
        return UNSUPPORTED
    indices = np.asarray(indices)
    axis, dtype = kwargs.get("axis", 0), kwargs.get("dtype")
    stand_in = np.broadcast_to(np.zeros((), x.dtype), x.shape)
    expected = ufunc.reduceat(stand_in, indices, axis=axis, dtype=dtype)  # NumPy's errors
    if indices.ndim != 1 or indices.size > SEGMENTS_AT_MOST or indices.size == 0:
        return UNSUPPORTED
    axis = normalize_axis(axis, x.ndim, "reduceat")
    x = np.moveaxis(x, axis, 0)
    ends = np.append(indices[1:], x.shape[0])
    segments = [ufunc.reduce(x[start:end] if start < end else x[start:start + 1], axis=0,
                             dtype=expected.dtype)
                for start, end in zip(indices.tolist(), ends.tolist())]
    return np.moveaxis(np.stack(segments), 0, axis).astype(expected.dtype, copy=False)
