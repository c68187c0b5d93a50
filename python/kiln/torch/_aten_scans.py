"""Conversion-table entries for the scans kiln has no scan op for (see _aten_table.py): cummax,
cummin and logcumsumexp along a dimension of n elements, each as a reduction over the n x n
triangle of earlier elements (element i reads elements 0..i). kiln fuses the triangle's mask and
broadcast into the reduction's loads, so nothing n x n is stored: n^2 work per row, which bounds
n (MOST_SCAN_LENGTH; longer dimensions stay in eager PyTorch).

cummax's index is torch's: the last position of the running extreme (ties move it forward), the
last NaN once one is seen; its value is the element at that index, -0.0 or 0.0 as eager's.
"""
import numpy as np
import torch

from .. import _kiln
from ._aten_table import Unconvertible, axis, cast, computing_dtype, lowers, out_dtype

aten = torch.ops.aten

MOST_SCAN_LENGTH = 4096


def _last_axis(x, dim):
    """x with `dim` moved last, and the permutation that moves it back."""
    order = [d for d in range(x.ndim) if d != dim] + [dim]
    back = list(np.argsort(order))
    return _kiln.transpose(x, order), back


def _triangle(x):
    """(x along a new second-to-last axis: element [i, j] is x[j], the mask j <= i)."""
    length = x.shape[-1]
    if not isinstance(length, int):
        raise Unconvertible("a scan along a dimension of dynamic size")
    if length > MOST_SCAN_LENGTH:
        raise Unconvertible(f"a scan of {length} elements (kiln's scans take n^2 steps; "
                            f"at most {MOST_SCAN_LENGTH})")
    positions = _kiln.arange(x, length, "int64")
    earlier = _kiln.less_equal(_kiln.reshape(positions, [1, length]),
                               _kiln.reshape(positions, [length, 1]))
    return _kiln.expand_dims(x, x.ndim - 1), earlier, positions


def _extreme(dtype, largest):
    """The identity of a running max (min) in kiln dtype `dtype`."""
    if "float" in dtype:
        return -np.inf if largest else np.inf
    info = np.iinfo(np.dtype(dtype))
    return info.min if largest else info.max


def _scan_along(x, dim, scan):
    """scan(x with dim last, as a 1-d+ tensor) with dim put back; 0-d x as one element."""
    if x.ndim == 0:
        return tuple(_kiln.reshape(part, []) for part in scan(_kiln.reshape(x, [1])))
    dim = axis(dim, x.ndim)
    moved, back = _last_axis(x, dim)
    return tuple(_kiln.transpose(part, back) for part in scan(moved))


def _running_extreme(context, x, largest):
    rows, earlier, positions = _triangle(x)
    fill = _extreme(x.dtype, largest)
    if isinstance(fill, float):
        filler = _kiln.full(x, [], fill, x.dtype)
    else:
        filler = _kiln.full_integer(x, [], int(fill), x.dtype)
    reduce = _kiln.max if largest else _kiln.min
    extreme = reduce(_kiln.where(earlier, rows, filler), [x.ndim], True)  # [..., n, 1]
    match = _kiln.equal(rows, extreme)
    if "float" in x.dtype:
        match = _kiln.logical_or(match, _kiln.logical_and(_kiln.isnan(rows), _kiln.isnan(extreme)))
    position = _kiln.where(_kiln.logical_and(earlier, match), positions,
                           _kiln.full_integer(x, [], -1, "int64"))
    index = _kiln.max(position, [x.ndim], False)
    return _kiln.take_along_axis(x, index, x.ndim - 1), index


@lowers(aten.cummax.default, aten.cummin.default)
def _cummax_or_cummin(context, node, x, dim):
    dtype = out_dtype(node, 0)
    computing = torch.uint8 if dtype == torch.bool else computing_dtype(dtype)
    largest = node.target == aten.cummax.default
    values, indices = _scan_along(
        cast(x, computing), dim, lambda moved: _running_extreme(context, moved, largest))
    return cast(values, dtype), indices


@lowers(aten.logcumsumexp.default)
def _logcumsumexp(context, node, x, dim):
    dtype = out_dtype(node)
    if not dtype.is_floating_point:
        raise Unconvertible(f"logcumsumexp of {dtype}")

    def scan(moved):
        rows, earlier, _ = _triangle(moved)
        masked = _kiln.where(earlier, rows, _kiln.full(moved, [], -np.inf, moved.dtype))
        return (_kiln.logsumexp(masked, [moved.ndim], False),)
    (result,) = _scan_along(cast(x, computing_dtype(dtype)), dim, scan)
    return cast(result, dtype)
