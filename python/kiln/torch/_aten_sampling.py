"""Conversion-table entries: F.grid_sample's 2-d sampling (spatial transformers, deformable
detection heads, optical flow warps) as gathers of the corners a grid point falls between, with
their weights computed once per point and shared by every channel (see _aten_table.py). Its
gradient (grid_sampler_2d_backward) stays eager.

PyTorch's own decomposition of grid_sampler_2d was 3-7x slower than eager here: it computes the
coordinates for every channel and checks its computed indices' bounds with a reduction each.
"""
import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, out_dtype

aten = torch.ops.aten
_BILINEAR, _NEAREST = 0, 1
_ZEROS, _BORDER = 0, 1


@lowers(aten.cudnn_grid_sampler.default)
def _cudnn_grid_sampler(context, node, x, grid):
    """F.grid_sample on a GPU where cuDNN takes it: bilinear, zeros, align_corners=True (RAFT's
    warps ran eagerly between kiln's parts)."""
    return _grid_sampler_2d(context, node, x, grid, _BILINEAR, _ZEROS, True)


@lowers(aten.grid_sampler_2d.default)
def _grid_sampler_2d(context, node, x, grid, interpolation, padding, align_corners):
    if interpolation not in (_BILINEAR, _NEAREST):
        raise Unconvertible("grid_sample with mode='bicubic'")
    if padding not in (_ZEROS, _BORDER):
        raise Unconvertible("grid_sample with padding_mode='reflection'")
    batch, channels, height, width = x.shape
    out_height, out_width = grid.shape[1:3]
    if not all(isinstance(extent, int) for extent in (batch, channels, height, width,
                                                       out_height, out_width)):
        raise Unconvertible("grid_sample of dynamic sizes")
    dtype = computing_dtype(out_dtype(node))
    grid = cast(grid, dtype)

    def number(value):
        return context.full((), value, dtype)

    def source(coordinate, size):  # [-1, 1] to the input's pixel coordinates
        if align_corners:
            position = _kiln.multiply(_kiln.add(coordinate, number(1)), number((size - 1) / 2))
        else:
            position = _kiln.divide(_kiln.subtract(
                _kiln.multiply(_kiln.add(coordinate, number(1)), number(size)), number(1)),
                number(2))
        if padding == _BORDER:
            position = _kiln.minimum(_kiln.maximum(position, number(0)), number(size - 1))
        return _kiln.reshape(position, [batch, 1, out_height, out_width])

    column = source(_kiln.reshape(_kiln.slice(grid, [slice(None)] * 3 + [(0, 1, 1)]),
                                  [batch, out_height, out_width]), width)
    row = source(_kiln.reshape(_kiln.slice(grid, [slice(None)] * 3 + [(1, 2, 1)]),
                               [batch, out_height, out_width]), height)
    # one flat index into x per (n, c) plane start, shared by the corners
    planes = _kiln.multiply(
        _kiln.add(_kiln.reshape(_kiln.multiply(_kiln.arange(context.anchor(), batch, "int64"),
                                               context.full((), channels, torch.int64)),
                                [batch, 1, 1, 1]),
                  _kiln.reshape(_kiln.arange(context.anchor(), channels, "int64"),
                                [1, channels, 1, 1])),
        context.full((), height * width, torch.int64))
    values = _kiln.reshape(cast(x, dtype), [-1])

    def corner(r, c):
        """x at integral coordinates (r, c), zero outside the input."""
        inside = _kiln.logical_and(
            _kiln.logical_and(_kiln.greater_equal(r, number(0)), _kiln.less(r, number(height))),
            _kiln.logical_and(_kiln.greater_equal(c, number(0)), _kiln.less(c, number(width))))
        r_index = _kiln.astype(_kiln.minimum(_kiln.maximum(r, number(0)), number(height - 1)),
                               "int64")
        c_index = _kiln.astype(_kiln.minimum(_kiln.maximum(c, number(0)), number(width - 1)),
                               "int64")
        flat = _kiln.add(planes, _kiln.add(
            _kiln.multiply(r_index, context.full((), width, torch.int64)), c_index))
        return _kiln.where(inside, _kiln.take(values, flat, 0, False), number(0))

    if interpolation == _NEAREST:  # torch rounds half to even (nearbyint)
        return corner(_kiln.round(row), _kiln.round(column))
    top, left = _kiln.floor(row), _kiln.floor(column)
    bottom, right = _kiln.add(top, number(1)), _kiln.add(left, number(1))
    down, across = _kiln.subtract(row, top), _kiln.subtract(column, left)
    up, back = _kiln.subtract(number(1), down), _kiln.subtract(number(1), across)
    total = None
    for r, c, weight in ((top, left, _kiln.multiply(up, back)),
                         (top, right, _kiln.multiply(up, across)),
                         (bottom, left, _kiln.multiply(down, back)),
                         (bottom, right, _kiln.multiply(down, across))):
        term = _kiln.multiply(corner(r, c), weight)
        total = term if total is None else _kiln.add(total, term)
    return total
