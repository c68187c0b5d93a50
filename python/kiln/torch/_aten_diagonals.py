"""Conversion-table entries: diagonals (see _aten_table.py). torch.diagonal, einsum's repeated
index ("bii->bi") and their gradients (diagonal_scatter) ran in eager PyTorch between kiln's
parts. A diagonal is index arithmetic: its two axes moved last and merged into one of n*m
elements, of which it is the places start + k (m + 1): a strided slice where n and m are
numbers, a take at computed places where they are size symbols (dynamic=True); its gradient
writes those places."""
import torch

from .. import _kiln
from ._aten_slice_writes import _scatter_run
from ._aten_structure import _slice_any
from ._aten_table import axis, cast, lowers, out_dtype, out_shape

aten = torch.ops.aten


def _merged(x, offset, dim1, dim2):
    """(x with axes dim1, dim2 moved last and merged, the axis order of that transpose, the
    diagonal's first place and step in the merged axis)."""
    first, second = axis(dim1, x.ndim), axis(dim2, x.ndim)
    m = x.shape[second]
    rest = [d for d in range(x.ndim) if d not in (first, second)]
    merged = _kiln.reshape(_kiln.transpose(x, rest + [first, second]),
                           [x.shape[d] for d in rest] + [x.shape[first] * m])
    return merged, rest + [first, second], offset if offset >= 0 else -offset * m, m + 1


def _places(context, start, step, length):
    """The int64 places start + k * step, k < length, of a diagonal with size symbols."""
    k = _kiln.arange(context.anchor(), length, "int64")
    return _kiln.add(_kiln.multiply(k, context.full((), step, torch.int64)),
                     context.full((), start, torch.int64))


@lowers(aten.diagonal.default, view=True)
def _diagonal(context, node, x, offset=0, dim1=0, dim2=1):
    merged, _, start, step = _merged(x, offset, dim1, dim2)
    length = out_shape(context, node)[-1]
    if not all(type(v) is int for v in (start, step, length)):
        return _kiln.take(merged, _places(context, start, step, length), merged.ndim - 1, False)
    window = (start, start + (length - 1) * step + 1, step) if length else (0, 0, 1)
    return _slice_any(merged, [slice(None)] * (merged.ndim - 1) + [window])


@lowers(aten.diagonal_scatter.default)
def _diagonal_scatter(context, node, base, src, offset=0, dim1=0, dim2=1):
    """base with its diagonal replaced by src (the gradient of a diagonal)."""
    merged, order, start, step = _merged(base, offset, dim1, dim2)
    length = src.shape[-1]
    if not all(type(v) is int for v in (start, step, length)):
        dtype = out_dtype(node)
        merged = _kiln.index_put(cast(merged, dtype), _places(context, start, step, length),
                                 cast(src, dtype), merged.ndim - 1, False, check_bounds=False)
    elif length:
        merged = _scatter_run(node, merged, src, merged.ndim - 1, start, step)
    spread = _kiln.reshape(merged, [base.shape[d] for d in order])
    return _kiln.transpose(spread, sorted(range(base.ndim), key=order.__getitem__))
