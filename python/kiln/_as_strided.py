"""np.lib.stride_tricks.as_strided of a traced array ("100 NumPy exercises" #75 and #84: sliding
windows and blocks, `as_strided(a, shape, a.strides + a.strides)`).

x.strides are NumPy's (kiln._memory_layout: an argument's own, a transpose's or a slice's), and
as_strided addresses x's memory as NumPy does: position sum(i_d * strides[d] / itemsize) from
x's first element. kiln holds x's elements, not the memory around them, so the positions are
mapped to x's elements through its memory image (_MemoryImage: x with its negative axes
flipped, its axes in decreasing stride, flattened); a layout with gaps between its elements
other than a common step (x[:, ::2] of a row-major array has one), or of unknown layout, is a
graph break. The result is a view, a gather of those positions; writes through it
(writeable=True, NumPy's default) scatter back to those positions, as NumPy's write into the
shared memory. Writes through a view whose positions may repeat (windows that overlap)
are a graph break: NumPy's result depends on the order it writes in (its documentation calls
it unpredictable). Strides that are not a multiple of the element size, or positions
outside the array (NumPy reads whatever memory lies there), are a graph break: the call runs
eagerly. While a trace runs, the stride_tricks namespace holds the wrapper (kiln._numpy_creation's
_SWAPPED); calls on arrays go to NumPy unchanged.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np

from . import _memory_layout
from ._aliasing import view_index
from ._graph_breaks import graph_break
from ._memory_layout import strides_of
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


def write_positions(tensor, shape, steps, value, start=0):
    """`tensor` with `value` (of `shape`) written at the flat positions start + sum(i_d *
    steps[d]): a strided view's write back into the array it views."""
    if not math.prod(shape):
        return tensor
    k, size = backend(), math.prod(tensor.shape)
    index = k.reshape(view_index(k, tensor, shape, start, steps), [-1])
    flat = k.index_put(k.reshape(tensor, [size]), index, k.reshape(value, [-1]), 0, False,
                       check_bounds=False)
    return k.reshape(flat, list(tensor.shape))


@dataclass
class _MemoryImage:
    """x's elements in NumPy's memory order: image[j] is the element at memory position
    origin + j * step from x's first element (positions and step in elements)."""
    flipped: list     # axes of negative stride, flipped first
    order: list       # then the axes by decreasing stride
    origin: int = 0
    step: int = 1

    def of(self, k, tensor):
        if self.flipped:
            tensor = k.flip(tensor, self.flipped)
        if self.order != sorted(self.order):
            tensor = k.transpose(tensor, self.order)
        return k.reshape(tensor, [-1])

    def back(self, k, flat, shape):
        """The tensor of x's shape whose image is `flat`."""
        tensor = k.reshape(flat, [shape[d] for d in self.order])
        if self.order != sorted(self.order):
            tensor = k.transpose(tensor, [self.order.index(d) for d in range(len(shape))])
        return k.flip(tensor, self.flipped) if self.flipped else tensor


def _in_memory_order(x, shape, positions):
    """(image, start, steps): the view's elements at image positions start + sum(i_d *
    steps[d]) of x's memory image, where x's memory holds only its elements (up to a common
    step) and the view stays inside them; else None."""
    sizes, strides = [int(n) for n in x.shape], strides_of(x)
    axes = [d for d in range(len(sizes)) if sizes[d] > 1]
    if strides is None or any(strides[d] == 0 for d in axes):
        return None
    step = math.gcd(*(abs(strides[d]) for d in axes)) or 1
    order = [d for d in range(len(sizes)) if sizes[d] <= 1] + sorted(
        axes, key=lambda d: -abs(strides[d]))
    expected = 1
    for d in reversed(order):
        if sizes[d] > 1 and abs(strides[d]) != expected * step:
            return None  # gaps between the elements
        expected *= sizes[d]
    if any(p % step for p in positions):
        return None
    flipped = [d for d in axes if strides[d] < 0]
    image = _MemoryImage(flipped, order, sum((sizes[d] - 1) * strides[d] for d in flipped), step)
    start, steps = -image.origin // step, [p // step for p in positions]
    if math.prod(shape) and (
            start + sum(min(0, (n - 1) * s) for n, s in zip(shape, steps)) < 0
            or start + sum(max(0, (n - 1) * s) for n, s in zip(shape, steps)) >= x.size):
        return None
    return image, start, steps


def _on_the_lattice(x, shape, positions):
    """(image, 0, steps): each of the view's strides a fixed step between x's elements (a
    window of x's own strides), the view's elements inside x, addressed in x's row-major
    order; else None. x's elements lie at sum(i_a * strides[a]); NumPy's layouts never place
    two at one position, so a decomposition that keeps every index in range is the one."""
    sizes, strides = [int(n) for n in x.shape], strides_of(x)
    if strides is None:
        return None
    # (an axis of stride 0, a broadcast's, holds one element's memory: index 0 stands for it)
    axes = sorted((a for a in range(len(sizes)) if sizes[a] > 1 and strides[a]),
                  key=lambda a: -abs(strides[a]))
    lowest, highest, steps = [0] * len(sizes), [0] * len(sizes), []
    row_major = _memory_layout.c_strides(sizes)  # (in elements)
    for extent, position in zip(shape, positions):
        rest, step = position, 0
        for a in axes:
            index_step = round(rest / strides[a])
            rest -= index_step * strides[a]
            lowest[a] += min(0, (extent - 1) * index_step)
            highest[a] += max(0, (extent - 1) * index_step)
            step += index_step * row_major[a]
        if rest:
            return None
        steps.append(step)
    if math.prod(shape) and any(lo < 0 or hi >= n for lo, hi, n in zip(lowest, highest, sizes)):
        return None
    return _MemoryImage([], list(range(len(sizes)))), 0, steps


def _traced_as_strided(x, shape, strides, writeable):
    x._check_plain("as_strided")  # x[mask], or a window in a loop: their size is the data's
    shape = tuple(x.shape) if shape is None else tuple(shape_entries(shape))
    strides = x.strides if strides is None else tuple(shape_entries(strides))
    if len(strides) != len(shape):
        raise ValueError("mismatch in length of strides and shape")
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    if any(s % x.itemsize for s in strides):
        graph_break("as_strided with strides that are not a multiple of the element size")
    positions = [s // x.itemsize for s in strides]
    moves = [p if n > 1 else 0 for n, p in zip(shape, positions)]  # (an axis of one element)
    addressed = _in_memory_order(x, shape, moves) or _on_the_lattice(x, shape, moves)
    if addressed is None:
        graph_break("as_strided reaches memory between or around the array's elements, or "
                    "of a layout kiln does not follow (NumPy reads whatever lies there)")
    image, start, steps = addressed
    k = backend()

    def forward(tensor):
        if not math.prod(shape):  # no element: nothing to read
            return x._context.constant(0, x.dtype, list(shape))
        flat = image.of(k, tensor)
        return k.take(flat, view_index(k, flat, shape, start, steps), 0, check_bounds=False)

    def backward(tensor, value):
        flat = write_positions(image.of(k, tensor), shape, steps, value, start)
        return image.back(k, flat, [int(n) for n in tensor.shape])

    view = x._make_view(forward(x.tensor), forward, backward, tuple(positions))
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
