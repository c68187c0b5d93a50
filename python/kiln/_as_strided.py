"""np.lib.stride_tricks.as_strided of a traced array ("100 NumPy exercises" #75 and #84: sliding
windows and blocks, `as_strided(a, shape, a.strides + a.strides)`).

A traced array's layout is row-major: x.strides are those of a C-contiguous array of its dtype
and shape (kiln._tracer_operators), and as_strided addresses its elements in that order. The
result is a view, a gather of the flat positions sum(i_d * strides[d] / itemsize); writes
through it (writeable=True, NumPy's default) scatter back to those positions, as NumPy's write
into the shared memory. Writes through a view whose positions may repeat (windows that overlap)
are a graph break: NumPy's result depends on the order it writes in (its documentation calls
it unpredictable). Strides that are not a multiple of the element size, or positions
outside the array (NumPy reads whatever memory lies there), are a graph break: the call runs
eagerly. While a trace runs, the stride_tricks namespace holds the wrapper (kiln._numpy_creation's
_SWAPPED); calls on arrays go to NumPy unchanged.
"""
import functools
import math

import numpy as np

from ._aliasing import view_index
from ._graph_breaks import graph_break
from ._tracer import TracedArray, backend
from ._tracer_types import shape_entries

_ORIGINAL = np.lib.stride_tricks.as_strided


def c_strides(shape, itemsize):
    """The byte strides of a C-contiguous array of `shape`."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def _may_overlap(shape, steps):
    """Whether two positions of the view may be one element (sliding windows): unless each
    axis's step, in increasing order, passes every position the smaller ones reach."""
    reach = 0
    for extent, step in sorted(((n, abs(s)) for n, s in zip(shape, steps) if n > 1),
                               key=lambda axis: axis[1]):
        if step <= reach:
            return True
        reach += (extent - 1) * step
    return False


def write_positions(tensor, shape, steps, value):
    """`tensor` with `value` (of `shape`) written at the flat positions sum(i_d * steps[d]): a
    strided view's write back into the array it views."""
    if not math.prod(shape):
        return tensor
    k, size = backend(), math.prod(tensor.shape)
    index = k.reshape(view_index(k, tensor, shape, 0, steps), [-1])
    flat = k.index_put(k.reshape(tensor, [size]), index, k.reshape(value, [-1]), 0, False,
                       check_bounds=False)
    return k.reshape(flat, list(tensor.shape))


def _traced_as_strided(x, shape, strides, writeable):
    x._check_plain("as_strided")  # x[mask], or a window in a loop: their size is the data's
    shape = tuple(x.shape) if shape is None else tuple(shape_entries(shape))
    strides = c_strides(x.shape, x.itemsize) if strides is None else tuple(
        shape_entries(strides))
    if len(strides) != len(shape):
        raise ValueError("mismatch in length of strides and shape")
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    if any(s % x.itemsize for s in strides):
        graph_break("as_strided with strides that are not a multiple of the element size")
    steps = [s // x.itemsize for s in strides]
    if math.prod(shape) and (
            sum(min(0, (n - 1) * s) for n, s in zip(shape, steps)) < 0
            or sum(max(0, (n - 1) * s) for n, s in zip(shape, steps)) >= x.size):
        graph_break("as_strided reaches outside the array's elements (NumPy reads the memory "
                    "around it)")
    k, size = backend(), x.size

    def forward(tensor):
        if not math.prod(shape):  # no element: nothing to read
            return x._context.constant(0, x.dtype, list(shape))
        flat = k.reshape(tensor, [size])
        return k.take(flat, view_index(k, flat, shape, 0, steps), 0, check_bounds=False)

    def backward(tensor, value):
        return write_positions(tensor, shape, steps, value)

    view = x._make_view(forward(x.tensor), forward, backward, tuple(steps))
    view._scalar = False
    view._overlapping = _may_overlap(shape, steps)
    view._hidden_base = True  # NumPy's views an array it made over x's memory (x.base's)
    if not writeable:
        view._read_only = True
    return view


@functools.wraps(_ORIGINAL)
def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    if not isinstance(x, TracedArray):
        return _ORIGINAL(x, shape, strides, subok, writeable)
    return _traced_as_strided(x, shape, strides, writeable)


ORIGINALS = {"as_strided": _ORIGINAL}
WRAPPERS = {"as_strided": as_strided}
