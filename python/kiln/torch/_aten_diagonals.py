"""Conversion-table entries: diagonals (see _aten_table.py). torch.diagonal, einsum's repeated
index ("bii->bi") and their gradients (diagonal_scatter) ran in eager PyTorch between kiln's
parts. A diagonal is index arithmetic: its two axes moved last and merged into one of n*m
elements, of which it is the slice start::m+1; its gradient writes that slice."""
import torch

from .. import _kiln
from ._aten_slice_writes import _scatter_run
from ._aten_table import Unconvertible, axis, lowers

aten = torch.ops.aten


def _merged(x, offset, dim1, dim2):
    """(x with axes dim1, dim2 moved last and merged, the axis order of that transpose, the
    diagonal's first place, step and length in the merged axis)."""
    first, second = axis(dim1, x.ndim), axis(dim2, x.ndim)
    n, m = x.shape[first], x.shape[second]
    if not all(type(extent) is int for extent in x.shape):
        raise Unconvertible("the diagonal of a tensor with size symbols")
    rest = [d for d in range(x.ndim) if d not in (first, second)]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    merged = _kiln.reshape(_kiln.transpose(x, rest + [first, second]),
                           [x.shape[d] for d in rest] + [n * m])
    return merged, rest + [first, second], start, m + 1, length


@lowers(aten.diagonal.default, view=True)
def _diagonal(context, node, x, offset=0, dim1=0, dim2=1):
    merged, _, start, step, length = _merged(x, offset, dim1, dim2)
    window = (start, start + (length - 1) * step + 1, step) if length else (0, 0, 1)
    return _kiln.slice(merged, [slice(None)] * (merged.ndim - 1) + [window])


@lowers(aten.diagonal_scatter.default)
def _diagonal_scatter(context, node, base, src, offset=0, dim1=0, dim2=1):
    """base with its diagonal replaced by src (the gradient of a diagonal)."""
    merged, order, start, step, length = _merged(base, offset, dim1, dim2)
    if length:
        merged = _scatter_run(node, merged, src, merged.ndim - 1, start, step)
    spread = _kiln.reshape(merged, [base.shape[d] for d in order])
    return _kiln.transpose(spread, sorted(range(base.ndim), key=order.__getitem__))
