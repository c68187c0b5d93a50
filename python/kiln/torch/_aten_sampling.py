"""Conversion-table entries: F.grid_sample's 2-d sampling (spatial transformers, deformable
detection heads, optical flow warps) as gathers of the corners a grid point falls between, with
their weights computed once per point and shared by every channel (see _aten_table.py), and its
gradient (grid_sampler_2d_backward: scatters into the input, a sum over channels for the grid).

PyTorch's own decomposition of grid_sampler_2d was 3-7x slower than eager here: it computes the
coordinates for every channel and checks its computed indices' bounds with a reduction each.
"""
import numpy as np
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


class _SamplingPoints:
    """Where each grid point samples x: its row and column in x's pixel coordinates, the
    derivatives of those by the grid's y and x, and x's values at integral positions."""

    def __init__(self, context, x, grid, dtype, padding, align_corners):
        batch, channels, height, width = x.shape
        out_height, out_width = grid.shape[1:3]
        if not all(isinstance(extent, int) for extent in (batch, channels, height, width,
                                                           out_height, out_width)):
            raise Unconvertible("grid_sample of dynamic sizes")
        self.context, self.dtype = context, dtype
        self.shape, self.height, self.width = list(x.shape), height, width
        self.point_shape = [batch, 1, out_height, out_width]
        grid = cast(grid, dtype)
        self.column, self.column_slope = self._source(
            _kiln.slice(grid, [slice(None)] * 3 + [(0, 1, 1)]), width, padding, align_corners)
        self.row, self.row_slope = self._source(
            _kiln.slice(grid, [slice(None)] * 3 + [(1, 2, 1)]), height, padding, align_corners)
        # one flat index into x per (n, c) plane start, shared by the corners
        self.planes = _kiln.multiply(
            _kiln.add(_kiln.reshape(_kiln.multiply(
                _kiln.arange(context.anchor(), batch, "int64"),
                context.full((), channels, torch.int64)), [batch, 1, 1, 1]),
                _kiln.reshape(_kiln.arange(context.anchor(), channels, "int64"),
                              [1, channels, 1, 1])),
            context.full((), height * width, torch.int64))
        self.values = _kiln.reshape(cast(x, dtype), [-1])

    def number(self, value):
        return self.context.full((), value, self.dtype)

    def _source(self, coordinate, size, padding, align_corners):
        """[-1, 1] to x's pixel coordinates, and the derivative of that map (zero where the
        border clips, as PyTorch's clip_coordinates_set_grad: at the bounds too)."""
        coordinate = _kiln.reshape(coordinate, self.point_shape)
        number = self.number
        if align_corners:
            position = _kiln.multiply(_kiln.add(coordinate, number(1)), number((size - 1) / 2))
            slope = number((size - 1) / 2)
        else:
            position = _kiln.divide(_kiln.subtract(
                _kiln.multiply(_kiln.add(coordinate, number(1)), number(size)), number(1)),
                number(2))
            slope = number(size / 2)
        if padding == _BORDER:
            inside = _kiln.logical_and(_kiln.greater(position, number(0)),
                                       _kiln.less(position, number(size - 1)))
            slope = _kiln.where(inside, slope, number(0))
            position = _kiln.minimum(_kiln.maximum(position, number(0)), number(size - 1))
        return position, slope

    def inside(self, r, c):
        number = self.number
        return _kiln.logical_and(
            _kiln.logical_and(_kiln.greater_equal(r, number(0)),
                              _kiln.less(r, number(self.height))),
            _kiln.logical_and(_kiln.greater_equal(c, number(0)),
                              _kiln.less(c, number(self.width))))

    def flat(self, r, c):
        """The flat index of x at (r, c), clamped into x (callers mask what lies outside)."""
        number = self.number
        r_index = _kiln.astype(_kiln.minimum(_kiln.maximum(r, number(0)),
                                             number(self.height - 1)), "int64")
        c_index = _kiln.astype(_kiln.minimum(_kiln.maximum(c, number(0)),
                                             number(self.width - 1)), "int64")
        return _kiln.add(self.planes, _kiln.add(
            _kiln.multiply(r_index, self.context.full((), self.width, torch.int64)), c_index))

    def corner(self, r, c):
        """x at integral coordinates (r, c), zero outside the input."""
        return _kiln.where(self.inside(r, c), _kiln.take(self.values, self.flat(r, c), 0, False),
                           self.number(0))

    def nearest(self):  # torch rounds half to even (nearbyint)
        return _kiln.round(self.row), _kiln.round(self.column)

    def bilinear(self):
        """The four corners around each point: (row, column, weight, d weight / d row,
        d weight / d column)."""
        number = self.number
        top, left = _kiln.floor(self.row), _kiln.floor(self.column)
        bottom, right = _kiln.add(top, number(1)), _kiln.add(left, number(1))
        down, across = _kiln.subtract(self.row, top), _kiln.subtract(self.column, left)
        up, back = _kiln.subtract(number(1), down), _kiln.subtract(number(1), across)
        return ((top, left, _kiln.multiply(up, back), _kiln.negative(back), _kiln.negative(up)),
                (top, right, _kiln.multiply(up, across), _kiln.negative(across), up),
                (bottom, left, _kiln.multiply(down, back), back, _kiln.negative(down)),
                (bottom, right, _kiln.multiply(down, across), across, down))


def _check_modes(interpolation, padding):
    if interpolation not in (_BILINEAR, _NEAREST):
        raise Unconvertible("grid_sample with mode='bicubic'")
    if padding not in (_ZEROS, _BORDER):
        raise Unconvertible("grid_sample with padding_mode='reflection'")


@lowers(aten.grid_sampler_2d.default)
def _grid_sampler_2d(context, node, x, grid, interpolation, padding, align_corners):
    _check_modes(interpolation, padding)
    points = _SamplingPoints(context, x, grid, computing_dtype(out_dtype(node)), padding,
                             align_corners)
    if interpolation == _NEAREST:
        return points.corner(*points.nearest())
    total = None
    for r, c, weight, _, _ in points.bilinear():
        term = _kiln.multiply(points.corner(r, c), weight)
        total = term if total is None else _kiln.add(total, term)
    return total


@lowers(aten.grid_sampler_2d_backward.default)
def _grid_sampler_2d_backward(context, node, grad_output, x, grid, interpolation, padding,
                              align_corners, output_mask):
    """(grad_input, grad_grid) of grid_sample, as PyTorch's kernel computes them: each point's
    output gradient times a corner's weight added into x at that corner (inside x only); the
    grid's gradient the sum over channels of the output gradient times each corner's value
    times its weight's derivative, times the coordinate map's slope (nearest: zero)."""
    _check_modes(interpolation, padding)
    dtype = computing_dtype(out_dtype(node, 0) if output_mask[0] else out_dtype(node, 1))
    points = _SamplingPoints(context, x, grid, dtype, padding, align_corners)
    grad = cast(grad_output, dtype)
    corners = ([(*points.nearest(), None, None, None)] if interpolation == _NEAREST
               else points.bilinear())
    grad_input = None
    if output_mask[0]:
        grad_input = context.full([int(np.prod(points.shape))], 0, dtype)
        for r, c, weight, _, _ in corners:
            term = grad if weight is None else _kiln.multiply(grad, weight)
            term = _kiln.where(points.inside(r, c), term, points.number(0))
            grad_input = _kiln.index_put(grad_input, _kiln.reshape(points.flat(r, c), [-1]),
                                         _kiln.reshape(term, [-1]), 0, True,
                                         check_bounds=False)
        grad_input = cast(_kiln.reshape(grad_input, points.shape), out_dtype(node, 0))
    grad_grid = None
    if output_mask[1]:
        grid_shape = list(grid.shape[:3]) + [1]
        if interpolation == _NEAREST:
            along_row = along_column = context.full(grid_shape, 0, dtype)
        else:
            along_row = along_column = None
            for r, c, _, by_row, by_column in corners:
                value = _kiln.multiply(points.corner(r, c), grad)
                row_term, column_term = (_kiln.multiply(value, by_row),
                                         _kiln.multiply(value, by_column))
                along_row = row_term if along_row is None else _kiln.add(along_row, row_term)
                along_column = (column_term if along_column is None
                                else _kiln.add(along_column, column_term))
            along_row = _kiln.reshape(_kiln.multiply(_kiln.sum(along_row, [1], True),
                                                     points.row_slope), grid_shape)
            along_column = _kiln.reshape(_kiln.multiply(_kiln.sum(along_column, [1], True),
                                                        points.column_slope), grid_shape)
        grad_grid = cast(_kiln.concatenate([along_column, along_row], 3), out_dtype(node, 1))
    return grad_input, grad_grid
