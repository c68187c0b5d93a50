"""np.concatenate, np.append, np.hstack and np.vstack of windows (kiln._windows): an array that
grows in a loop (`x = np.append(x, value)`, `rows = np.vstack([rows, row])`: kiln._loop_extents)
or a moving slice joined with others. Each operand's positions go after the ones before it, on
the whole axis of the first window, and the result is a window from 0 to their total extent.
Windows on another axis than the joined one, or a total that may pass the whole axis, are a
graph break (the loop is unrolled)."""
import numpy as np

from ._tracer import TracedArray, backend, graph_break, to_tensor, traced
from ._affine_indices import difference, extent, lowest, total
from ._windows import Window, resized, shifted, whole_and_window


def concatenate(arrays, axis=0):
    if axis is None:
        graph_break("np.concatenate(axis=None) of a loop-varying slice")
    context = next(a for a in arrays if isinstance(a, TracedArray))._context
    parts = [whole_and_window(context, a) if isinstance(a, TracedArray) else
             (traced(context, to_tensor(context, a)), None) for a in arrays]
    ndim = len(parts[0][0].tensor.shape)
    if any(len(whole.tensor.shape) != ndim for whole, _ in parts) or not -ndim <= axis < ndim:
        graph_break("np.concatenate of loop-varying slices of different ranks")
    axis %= ndim
    size = next(whole.tensor.shape[axis] for whole, window in parts if window is not None)
    shape = None
    for whole, window in parts:
        others = [n for k, n in enumerate(whole.tensor.shape) if k != axis]
        if shape not in (None, others) or window is not None and any(
                bound is not None for k, bound in enumerate(window.bounds) if k != axis):
            graph_break("np.concatenate of loop-varying slices along another axis")
        shape = others
    dtype = np.result_type(*[whole.dtype for whole, _ in parts])
    result, offset = None, 0
    for whole, window in parts:
        bound = window.bounds[axis] if window is not None else None
        bound = bound if bound is not None else (0, whole.tensor.shape[axis])
        end = total(offset, extent(bound))
        if end is None:
            graph_break("np.concatenate of slices moving with different loops' indices")
        # room on both sides, then the operand's first position moved to `offset`
        whole = resized(context, whole, axis, max(size, whole.tensor.shape[axis]))
        whole = resized(context, shifted(context, whole, axis, difference(bound[0], offset)),
                        axis, size)
        whole = whole.astype(dtype)
        if result is None:
            result = whole
        else:
            bounds = [None] * ndim
            bounds[axis] = (offset, end)
            inside = Window(bounds).mask(context, tuple(whole.tensor.shape))
            result = traced(context, backend().where(inside.tensor, whole.tensor, result.tensor))
        offset = end
    room = lowest(difference(size, offset))
    if room is None or room < 0:
        graph_break("np.concatenate of loop-varying slices that may outgrow the whole axis")
    bounds = [None] * ndim
    bounds[axis] = (0, offset)
    result._selection, result._scalar = Window(bounds), False
    return result


def append(arr, values, axis=None):
    if axis is None:  # NumPy flattens both
        if not isinstance(arr, TracedArray) or len(arr.tensor.shape) != 1:
            graph_break("np.append(axis=None) of a loop-varying slice of more than 1 dimension")
        return concatenate([arr, np.ravel(values)], 0)
    return concatenate([arr, values], axis)


def hstack(arrays, **kwargs):
    if kwargs:
        graph_break("np.hstack with keywords of loop-varying slices")
    ndim = max(len(a.tensor.shape) if isinstance(a, TracedArray) else np.ndim(a) for a in arrays)
    return concatenate(list(arrays), 1 if ndim > 1 else 0)


def vstack(arrays, **kwargs):
    if kwargs:
        graph_break("np.vstack with keywords of loop-varying slices")
    if not all(isinstance(a, TracedArray) for a in arrays):
        graph_break("np.vstack of a loop-varying slice and an array the trace does not hold")
    return concatenate([a if len(a.tensor.shape) >= 2 else a[None] for a in arrays], 0)


FUNCTIONS = {np.concatenate: concatenate, np.append: append, np.hstack: hstack,
             np.vstack: vstack}
