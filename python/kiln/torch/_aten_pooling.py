"""Conversion-table entries: 2-d and 3-d pooling (max with its indices, average, adaptive
average) and the average pools' gradients, as pointwise work over the window's shifted strided
views (see _aten_table.py).
"""
import operator

import numpy as np
import torch

from .. import _kiln
from ._aten_structure import _slice_any
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, out_dtype, out_shape

aten = torch.ops.aten


def _window_views(context, x, kernel, stride, widths, dilation, pad_value):
    """The kernel's shifted strided views of x's spatial dims (one per kernel position), and
    the output's spatial extents: pooling as pointwise work over these views. `widths`: the
    padding (before, after) of each spatial dim."""
    spatial = len(kernel)
    padded = (_kiln.pad(x, [(0, 0)] * (x.ndim - spatial) + list(widths), "constant", pad_value)
              if any(before or after for before, after in widths) else x)
    sizes = padded.shape[x.ndim - spatial:]
    extents = [(size - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1
               for d, size in enumerate(sizes)]
    views = []
    for offset in _positions(kernel):
        slices = [slice(None)] * (x.ndim - spatial)
        for d in range(spatial):
            begin = offset[d] * dilation[d]
            slices.append((begin, begin + (extents[d] - 1) * stride[d] + 1, stride[d]))
        views.append((offset, _slice_any(padded, slices)))
    return views, extents


def _window_widths(sizes, outs, kernel, stride, padding, dilation):
    """Each spatial dim's padding (before, after): `padding` both sides, and after it the
    overhang ceil_mode's last window reaches past it (torch's windows there hold fewer
    places; the output extents `outs` are torch's, a window never starting in the overhang)."""
    widths = []
    for size, out, k, step, pad, dil in zip(sizes, outs, kernel, stride, padding, dilation):
        if not all(isinstance(extent, int) for extent in (size, out)):
            raise Unconvertible("pooling with ceil_mode=True over dynamic sizes")
        reach = (out - 1) * step + dil * (k - 1) + 1
        widths.append((pad, pad + max(0, reach - (size + 2 * pad))))
    return widths


def _positions(kernel):
    positions = [()]
    for extent in kernel:
        positions = [position + (k,) for position in positions for k in range(extent)]
    return positions


def _pool_arguments(x, kernel, stride, padding, dilation, spatial):
    def expand(values, default):
        values = list(values) if values else list(default)
        return values * spatial if len(values) == 1 else values
    kernel = expand(kernel, [1])
    return kernel, expand(stride, kernel), expand(padding, [0]), expand(dilation, [1])


@lowers(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def _max_pool(context, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    spatial = 3 if node.target is aten.max_pool3d_with_indices.default else 2
    kernel, stride, padding, dilation = _pool_arguments(
        x, kernel, stride, [padding] if isinstance(padding, int) else padding,
        [dilation] if isinstance(dilation, int) else dilation, spatial)
    widths = ([(pad, pad) for pad in padding] if not ceil_mode else _window_widths(
        x.shape[-spatial:], out_shape(context, node, 0)[-spatial:], kernel, stride, padding,
        dilation))
    return _window_maxima(context, node, x, kernel, stride, padding, dilation, widths)


def _window_maxima(context, node, x, kernel, stride, padding, dilation, widths):
    """Each window's maximum and its flat input position (_flat_index), as torch's max pools
    return them."""
    views, _ = _window_views(context, x, kernel, stride, widths, dilation, float("-inf"))
    best = views[0][1]
    index = None
    if len(node.users) and any(user.args[1] == 1 for user in node.users
                               if user.target == operator.getitem):
        index = _flat_index(context, node, x, views[0][0], stride, padding, dilation)
    floating = out_dtype(node, 0).is_floating_point
    for offset, view in views[1:]:
        better = _kiln.greater(view, best)  # the first maximum wins, as in torch
        if floating:  # and NaN wins over any number, the last NaN over the ones before it
            better = _kiln.logical_or(better, _kiln.isnan(view))
        best = _kiln.where(better, view, best)
        if index is not None:
            candidate = _flat_index(context, node, x, offset, stride, padding, dilation)
            index = _kiln.where(better, candidate, index)
    if index is None:
        index = context.full(out_shape(context, node, 1), 0, torch.int64)
    return best, _kiln.broadcast_to(index, out_shape(context, node, 1))


# An adaptive max pool's windows as strided views: at most this many kernel positions (one
# view each); a global pool is a reduction whatever its size.
_MOST_WINDOW_VIEWS = 64


@lowers(aten.adaptive_max_pool2d.default, aten.adaptive_max_pool3d.default)
def _adaptive_max_pool(context, node, x, output_size):
    """Adaptive max pooling of windows of one size (CBAM's and SPP's global pools included):
    a max pool with the window as its stride; a global one the planes' maxima and argmaxima."""
    spatial = 3 if node.target is aten.adaptive_max_pool3d.default else 2
    out_sizes = out_shape(context, node, 0)[-spatial:]
    if all(out == 1 for out in out_sizes):
        lead = list(x.shape[:-spatial])
        plane = _kiln.reshape(x, lead + [-1])
        return (_kiln.max(x, list(range(x.ndim - spatial, x.ndim)), True),
                _kiln.reshape(_kiln.argmax(plane, len(lead), False), lead + [1] * spatial))
    kernel = _adaptive_kernel(node, x, out_sizes)
    if kernel is None:
        raise Unconvertible("adaptive max pooling over windows of unequal sizes")
    if _count(kernel) > _MOST_WINDOW_VIEWS:
        raise Unconvertible(f"adaptive max pooling of windows of {_count(kernel)} places")
    ones, zeros = [1] * spatial, [0] * spatial
    return _window_maxima(context, node, x, kernel, kernel, zeros, ones, [(0, 0)] * spatial)


def _flat_index(context, node, x, offset, stride, padding, dilation):
    """The input position of kernel position `offset` for every output position, flat within
    its plane ((d * H + h) * W + w), as torch's indices are."""
    spatial = len(offset)
    out = out_shape(context, node, 0)[-spatial:]
    flat = None
    for d in range(spatial):
        positions = _kiln.arange(context.anchor(), out[d], "int64")
        positions = _kiln.add(_kiln.multiply(positions, context.full((), stride[d], torch.int64)),
                              context.full((), offset[d] * dilation[d] - padding[d], torch.int64))
        positions = _kiln.reshape(positions, [1] * d + [out[d]] + [1] * (spatial - d - 1))
        flat = positions if flat is None else _kiln.add(
            _kiln.multiply(flat, context.full((), x.shape[x.ndim - spatial + d], torch.int64)),
            positions)
    return flat


def _avg_pool_window(context, node, x, outs, kernel, stride, padding, ceil_mode,
                     count_include_pad, divisor_override, dtype):
    """The average pool's kernel, stride, padding widths (_window_widths) and divisor: a
    number, or where windows hold different counts (count_include_pad=False over padding,
    ceil_mode's shorter last windows) each window's count as torch takes it."""
    spatial = len(outs)
    kernel, stride, padding, _ = _pool_arguments(
        x, kernel, stride, [padding] if isinstance(padding, int) else padding, [1], spatial)
    sizes, ones = list(x.shape[-spatial:]), [1] * spatial
    widths = ([(pad, pad) for pad in padding] if not ceil_mode else
              _window_widths(sizes, outs, kernel, stride, padding, ones))
    if divisor_override:
        return kernel, stride, widths, context.full((), divisor_override, dtype)
    overhang = any(after > before for before, after in widths)
    if not overhang and (count_include_pad or not any(padding)):
        return kernel, stride, widths, context.full((), _count(kernel), dtype)
    # places counted: the input's, the padding's with count_include_pad, never the overhang's
    counted = context.full(sizes, 1, dtype)
    if any(padding):
        counted = _kiln.pad(counted, [(pad, pad) for pad in padding], "constant",
                            1.0 if count_include_pad else 0.0)
    views, _ = _window_views(context, counted, kernel, stride,
                             [(0, after - before) for before, after in widths], ones, 0.0)
    return kernel, stride, widths, _window_total(views)


def _count(kernel):
    count = 1
    for extent in kernel:
        count *= extent
    return count


def _window_total(views):
    total = views[0][1]
    for _, view in views[1:]:
        total = _kiln.add(total, view)
    return total


@lowers(aten.avg_pool2d.default, aten.avg_pool3d.default)
def _avg_pool(context, node, x, kernel, stride=(), padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    outs = out_shape(context, node)[-(3 if node.target is aten.avg_pool3d.default else 2):]
    kernel, stride, widths, divisor = _avg_pool_window(
        context, node, x, outs, kernel, stride, padding, ceil_mode, count_include_pad,
        divisor_override, out_dtype(node))
    views, _ = _window_views(context, x, kernel, stride, widths, [1] * len(kernel), 0.0)
    return _kiln.divide(_window_total(views), divisor)


@lowers(aten.avg_pool2d_backward.default, aten.avg_pool3d_backward.default)
def _avg_pool_backward(context, node, grad_output, x, kernel, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    dtype = computing_dtype(out_dtype(node))
    spatial = 3 if node.target is aten.avg_pool3d_backward.default else 2
    kernel, stride, widths, divisor = _avg_pool_window(
        context, node, x, list(grad_output.shape[-spatial:]), kernel, stride, padding,
        ceil_mode, count_include_pad, divisor_override, dtype)
    return _window_sums_back(_kiln.divide(cast(grad_output, dtype), divisor), list(x.shape),
                             kernel, stride, [before for before, _ in widths])


def _window_sums_back(gradient, input_shape, kernel, stride, padding):
    """For every input position, the sum of the gradients of the windows that hold it: each
    kernel position's gradients spread to every stride-th place (zeros between), shifted by
    that position, added (pointwise work over shifted views, as the forward's); then the
    padding cropped."""
    spatial = len(kernel)
    lead = gradient.ndim - spatial
    sizes = input_shape[lead:]
    if not all(isinstance(extent, int) for extent in list(gradient.shape) + sizes):
        raise Unconvertible("average pooling's gradient of dynamic sizes")
    outs = list(gradient.shape[lead:])
    spread = _kiln.reshape(gradient, list(gradient.shape[:lead])
                           + [extent for out in outs for extent in (out, 1)])
    spread = _kiln.pad(spread, [(0, 0)] * lead + [width for step in stride
                                                  for width in ((0, 0), (0, step - 1))],
                       "constant", 0.0)
    spread = _kiln.reshape(spread, list(gradient.shape[:lead])
                           + [out * step for out, step in zip(outs, stride)])
    padded = [size + 2 * pad for size, pad in zip(sizes, padding)]
    total = None
    for offset in _positions(kernel):
        # place offset + o * stride of the padded input; past its end: cropped
        lengths = [min(out * step, size - k) for out, step, size, k
                   in zip(outs, stride, padded, offset)]
        view = _slice_any(spread, [slice(None)] * lead + [(0, n, 1) for n in lengths])
        view = _kiln.pad(view, [(0, 0)] * lead + [(k, size - k - n) for k, size, n
                                                  in zip(offset, padded, lengths)],
                         "constant", 0.0)
        total = view if total is None else _kiln.add(total, view)
    if any(padding):
        total = _slice_any(total, [slice(None)] * lead + [(pad, pad + size, 1) for pad, size
                                                          in zip(padding, sizes)])
    return total


def _adaptive_kernel(node, x, out_sizes):
    """The window of adaptive pooling where every window has one size (the input's sides
    multiples of the output's), else None."""
    sizes = x.shape[x.ndim - len(out_sizes):]
    if any(size % out for size, out in zip(sizes, out_sizes)):
        return None
    return [size // out for size, out in zip(sizes, out_sizes)]


def _adaptive_windows(size, out):
    """torch's adaptive windows along one dim: output i averages [floor(i*size/out),
    ceil((i+1)*size/out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _weighted_taps(context, x, axis, taps, dtype):
    """sum over taps of take(x, indices, axis) * weights (each weight one per taken place)."""
    total = None
    shape = [1] * x.ndim
    for indices, weights in taps:
        shape[axis] = len(weights)
        taken = _kiln.take(x, context.trace.constant(np.asarray(indices, np.int64)), axis, False)
        term = _kiln.multiply(taken, _kiln.reshape(
            cast(context.trace.constant(np.asarray(weights, np.float64)), dtype), list(shape)))
        total = term if total is None else _kiln.add(total, term)
    return total


def _unequal_adaptive(context, x, sizes, out_sizes, dtype, backward):
    """Adaptive average pooling (or its gradient) over windows of unequal sizes, one spatial dim
    after another (a box's mean is the mean of its rows' means): each output gathers its
    window's places, weighted 1/count; the gradient gathers, for each input place, the outputs
    whose windows hold it."""
    spatial = len(sizes)
    if not all(isinstance(extent, int) for extent in list(sizes) + list(out_sizes)):
        raise Unconvertible("adaptive pooling of windows of unequal sizes over dynamic sizes")
    for d, (size, out) in enumerate(zip(sizes, out_sizes)):
        windows = _adaptive_windows(size, out)
        if not backward:  # output i: places start_i + j of its window
            longest = max(end - start for start, end in windows)
            taps = [([min(start + j, end - 1) for start, end in windows],
                     [1 / (end - start) if start + j < end else 0.0 for start, end in windows])
                    for j in range(longest)]
        else:  # input place p: the outputs holding it, first_p + m
            holders = [[i for i, (start, end) in enumerate(windows) if start <= p < end]
                       for p in range(size)]
            most = max(len(held) for held in holders)
            taps = [([held[min(m, len(held) - 1)] for held in holders],
                     [1 / (windows[held[m]][1] - windows[held[m]][0]) if m < len(held) else 0.0
                      for held in holders]) for m in range(most)]
        x = _weighted_taps(context, x, x.ndim - spatial + d, taps, dtype)
    return x


@lowers(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool(context, node, x, output_size):
    spatial = 3 if node.target is aten._adaptive_avg_pool3d.default else 2
    out_sizes = out_shape(context, node)[-spatial:]
    kernel = _adaptive_kernel(node, x, out_sizes)
    if all(out == 1 for out in out_sizes):
        return _kiln.mean(x, list(range(x.ndim - spatial, x.ndim)), True)
    if kernel is None:
        return _unequal_adaptive(context, x, x.shape[-spatial:], out_sizes, out_dtype(node), False)
    views, _ = _window_views(context, x, kernel, kernel, [(0, 0)] * spatial, [1] * spatial, 0.0)
    return _kiln.divide(_window_total(views), context.full((), _count(kernel), out_dtype(node)))


@lowers(aten._adaptive_avg_pool2d_backward.default, aten._adaptive_avg_pool3d_backward.default)
def _adaptive_avg_pool_backward(context, node, grad_output, x):
    """The input's gradient: with windows of one size an average pool's gradient with the
    window as its stride, each input in one window; else _unequal_adaptive's."""
    spatial = 3 if node.target is aten._adaptive_avg_pool3d_backward.default else 2
    out_sizes = list(grad_output.shape[-spatial:])
    kernel = _adaptive_kernel(node, x, out_sizes)
    dtype = computing_dtype(out_dtype(node))
    if kernel is None:
        return _unequal_adaptive(context, cast(grad_output, dtype), x.shape[-spatial:], out_sizes,
                                 dtype, True)
    total = _window_sums_back(cast(grad_output, dtype), list(x.shape), kernel, kernel,
                              [0] * spatial)
    return _kiln.divide(total, context.full((), _count(kernel), dtype))


@lowers(aten.max_unpool2d.default, aten.max_unpool3d.default)
def _max_unpool(context, node, x, indices, output_size, *_):
    """Zeros of `output_size` per (batch, channel) holding x's elements at `indices`, each
    checked to lie in its plane, as eager's kernel ("Found an invalid max index": a
    RuntimeError). PyTorch's decomposition wrote through _unsafe_index_put, unchecked: an index
    past the plane landed in the next channel or was clamped, silently."""
    spatial = len(output_size)
    extents = list(x.shape) + list(output_size)
    if not all(isinstance(extent, int) for extent in extents) or x.ndim <= spatial:
        raise Unconvertible("max_unpool of dynamic sizes or with no channel dim")
    planes = int(np.prod(x.shape[:-spatial]))
    plane = int(np.prod(output_size))
    index = _kiln.reshape(cast(indices, torch.int64), [planes, -1])
    _kiln.check_index(index, plane, 1, str(node.target.overloadpacket.__name__),
                      negative=False, error="RuntimeError")
    starts = _kiln.multiply(_kiln.reshape(_kiln.arange(context.anchor(), planes, "int64"),
                                          [planes, 1]),
                            context.full((), plane, torch.int64))
    flat = _kiln.reshape(_kiln.add(index, starts), [-1])
    dtype = computing_dtype(out_dtype(node))
    zeros = context.full([planes * plane], 0, dtype)
    values = _kiln.reshape(cast(x, dtype), [-1])
    result = _kiln.index_put(zeros, flat, values, 0, False, check_bounds=False)
    return cast(_kiln.reshape(result, out_shape(context, node)), out_dtype(node))
