"""Conversion-table entries for the scans kiln has no scan op for (see _aten_table.py):
logcumsumexp along a dimension of n elements, as log2(n) rounds of Hillis and Steele's scan:
round r combines each element's running value with the one 2^r places before it (pad and slice:
index arithmetic) by logaddexp. O(n log n) work in a few kernels: logcumsumexp of 64 x 512 within
2x of eager's time, and no graph break.

cummax and cummin are kiln's scans of those names (op_list.h), and their indices one more scan:
the running maximum of the positions where x equals its running extreme (or is NaN, which
sticks). That is the last position the extreme was attained, as torch returns for ties.
"""
import numpy as np
import torch

from .. import _kiln
from ._aten_table import Unconvertible, axis, cast, computing_dtype, lowers, out_dtype

aten = torch.ops.aten


def _last_axis(x, dim):
    """x with `dim` moved last, and the permutation that moves it back."""
    order = [d for d in range(x.ndim) if d != dim] + [dim]
    return _kiln.transpose(x, order), [int(d) for d in np.argsort(order)]


def _scan_along(x, dim, scan):
    """scan(x with dim last) with dim put back (a tuple of tensors); 0-d x as one element."""
    if x.ndim == 0:
        return tuple(_kiln.reshape(part, []) for part in scan(_kiln.reshape(x, [1])))
    moved, back = _last_axis(x, axis(dim, x.ndim))
    if not isinstance(moved.shape[-1], int):
        raise Unconvertible("a scan along a dimension of dynamic size")
    return tuple(_kiln.transpose(part, back) for part in scan(moved))


def _shifted(x, distance):
    """x moved `distance` places along its last axis (the first `distance` places zero)."""
    length = x.shape[-1]
    head = _kiln.slice(x, [slice(None)] * (x.ndim - 1) + [(0, length - distance, 1)])
    return _kiln.pad(head, [(0, 0)] * (x.ndim - 1) + [(distance, 0)])


def _hillis_steele(parts, combine):
    """The inclusive scan of the tuple of tensors `parts` along their last axis, by
    combine(earlier parts, later parts, has_earlier) -> parts."""
    length = parts[0].shape[-1]
    positions = _kiln.arange(parts[0], length, "int64")
    distance = 1
    while distance < length:
        earlier = tuple(_shifted(part, distance) for part in parts)
        parts = combine(earlier, parts, _kiln.greater_equal(positions, distance))
        distance *= 2
    return parts


def _log_sums(x):
    def combine(earlier, later, has_earlier):
        return (_kiln.where(has_earlier, _kiln.logaddexp(earlier[0], later[0]), later[0]),)
    return _hillis_steele((x,), combine)


@lowers(aten.logcumsumexp.default)
def _logcumsumexp(context, node, x, dim):
    dtype = out_dtype(node)
    if not dtype.is_floating_point:
        raise Unconvertible(f"logcumsumexp of {dtype}")
    (result,) = _scan_along(cast(x, computing_dtype(dtype)), dim, _log_sums)
    return cast(result, dtype)


def _running_extreme_with_indices(x, dim, floating, maximum):
    """(values, int64 indices) of torch.cummax (cummin) along x's axis `dim`, scanned in place:
    moving the axis last would make the scan write across rows, and a transpose follow it."""
    values = (_kiln.cummax if maximum else _kiln.cummin)(x, dim)
    attained = _kiln.equal(x, values)
    if floating:
        attained = _kiln.logical_or(attained, _kiln.isnan(x))
    length = x.shape[dim]
    positions = _kiln.reshape(_kiln.arange(x, length, "int64"), [length] + [1] * (x.ndim - 1 - dim))
    last = _kiln.where(attained, positions, _kiln.zeros_like(positions))
    return values, _kiln.cummax(last, dim)


@lowers(aten.cummax.default, aten.cummin.default)
def _cummax_or_cummin(context, node, x, dim):
    dtype = out_dtype(node, 0)
    maximum = node.target == aten.cummax.default
    computing = cast(x, torch.uint8 if dtype == torch.bool else dtype)  # bool's extremes: 0, 1
    if x.ndim == 0:  # one element
        values, indices = _running_extreme_with_indices(
            _kiln.reshape(computing, [1]), 0, dtype.is_floating_point, maximum)
        values, indices = _kiln.reshape(values, []), _kiln.reshape(indices, [])
    else:
        dim = axis(dim, x.ndim)
        if not isinstance(x.shape[dim], int):
            raise Unconvertible("a scan along a dimension of dynamic size")
        values, indices = _running_extreme_with_indices(computing, dim, dtype.is_floating_point,
                                                        maximum)
    return cast(values, dtype), indices
