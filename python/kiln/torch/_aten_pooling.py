"""Conversion-table entries: pooling (max with its indices, average, adaptive average) as
pointwise work over the window's shifted strided views (see _aten_table.py).
"""
import operator

import torch

from .. import _kiln
from ._aten_structure import _slice_any
from ._aten_table import Unconvertible, lowers, out_dtype, out_shape

aten = torch.ops.aten


def _window_views(context, x, kernel, stride, padding, dilation, pad_value):
    """The kernel's shifted strided views of x's spatial dims (one per kernel position), and
    the output's spatial extents: pooling as pointwise work over these views."""
    spatial = len(kernel)
    widths = [(0, 0)] * (x.ndim - spatial) + [(p, p) for p in padding]
    padded = _kiln.pad(x, widths, "constant", pad_value) if any(padding) else x
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


@lowers(aten.max_pool2d_with_indices.default)
def _max_pool(context, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    if ceil_mode:
        raise Unconvertible("max pooling with ceil_mode=True")
    kernel, stride, padding, dilation = _pool_arguments(
        x, kernel, stride, [padding] if isinstance(padding, int) else padding,
        [dilation] if isinstance(dilation, int) else dilation, 2)
    views, _ = _window_views(context, x, kernel, stride, padding, dilation, float("-inf"))
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


def _flat_index(context, node, x, offset, stride, padding, dilation):
    """h * W + w of kernel position `offset` for every output position (torch's indices)."""
    out = out_shape(context, node, 0)
    height, width = out[-2], out[-1]
    rows = _kiln.arange(context.anchor(), height, "int64")
    columns = _kiln.arange(context.anchor(), width, "int64")
    h = _kiln.add(_kiln.multiply(rows, context.full((), stride[0], torch.int64)),
                  context.full((), offset[0] * dilation[0] - padding[0], torch.int64))
    w = _kiln.add(_kiln.multiply(columns, context.full((), stride[1], torch.int64)),
                  context.full((), offset[1] * dilation[1] - padding[1], torch.int64))
    flat = _kiln.add(_kiln.multiply(_kiln.reshape(h, [height, 1]),
                                    context.full((), x.shape[-1], torch.int64)),
                     _kiln.reshape(w, [1, width]))
    return flat


@lowers(aten.avg_pool2d.default)
def _avg_pool(context, node, x, kernel, stride=(), padding=0, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if ceil_mode:
        raise Unconvertible("average pooling with ceil_mode=True")
    kernel, stride, padding, dilation = _pool_arguments(
        x, kernel, stride, [padding] if isinstance(padding, int) else padding, [1], 2)
    if any(padding) and not count_include_pad and divisor_override is None:
        raise Unconvertible("average pooling with count_include_pad=False over padding")
    dtype = out_dtype(node)
    views, _ = _window_views(context, x, kernel, stride, padding, dilation, 0.0)
    total = views[0][1]
    for _, view in views[1:]:
        total = _kiln.add(total, view)
    divisor = divisor_override or kernel[0] * kernel[1]
    return _kiln.divide(total, context.full((), divisor, dtype))


@lowers(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool(context, node, x, output_size):
    height, width = x.shape[-2:]
    out_height, out_width = out_shape(context, node)[-2:]
    if height % out_height or width % out_width:
        raise Unconvertible("adaptive pooling with windows of unequal sizes")
    if (out_height, out_width) == (1, 1):
        return _kiln.mean(x, [x.ndim - 2, x.ndim - 1], True)
    kernel = [height // out_height, width // out_width]
    views, _ = _window_views(context, x, kernel, kernel, [0, 0], [1, 1], 0.0)
    total = views[0][1]
    for _, view in views[1:]:
        total = _kiln.add(total, view)
    return _kiln.divide(total, context.full((), kernel[0] * kernel[1], out_dtype(node)))
