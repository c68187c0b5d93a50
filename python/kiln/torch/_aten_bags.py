"""Conversion-table entries: embedding bags (nn.EmbeddingBag, F.embedding_bag: recommendation
models' sparse features), sums and means of the rows each bag's indices name, as one gather and
one scatter-add (see _aten_table.py).
"""
import operator

import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, meta, out_shape

aten = torch.ops.aten
_SUM, _MEAN = 0, 1


@lowers(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def _embedding_bag(context, node, weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                   sparse=False, per_sample_weights=None, include_last_offset=False,
                   padding_idx=-1):
    """(result, offset2bag, bag_size, max_indices) with eager PyTorch's CPU values for the last
    three, which its backward (run eagerly) reads: zeros for a sum (and offset2bag empty, or each
    index's bag with a padding index), each index's bag and the bags' sizes (twice) for a mean.
    Max bags stay eager (a scatter-max)."""
    if mode not in (_SUM, _MEAN):
        raise Unconvertible("embedding_bag with mode='max'")
    if indices.ndim != 1 or weight.ndim != 2:
        raise Unconvertible("embedding_bag of 2-d indices")
    auxiliary_used = any(user.target is not operator.getitem or user.args[1] != 0
                         for user in node.users)
    if auxiliary_used and meta(node)[0].device.type != "cpu":
        raise Unconvertible("embedding_bag whose bag sizes a backward reads, off the CPU")
    count = indices.shape[0]
    bags, width = out_shape(context, node, 0)
    if not all(isinstance(extent, int) for extent in (count, bags, width)):
        raise Unconvertible("embedding_bag of dynamic sizes")
    index = cast(indices, torch.int64)
    starts = cast(offsets, torch.int64)
    if include_last_offset:
        starts = _kiln.slice(starts, [(0, bags, 1)])
    # each index's bag: how many offsets are at or before it, less one (offsets ascend)
    _kiln.check_index(starts, count + 1, 0, "embedding_bag", negative=False)
    marks = _kiln.index_put(context.full([count + 1], 0, torch.int64), starts,
                            context.full([bags], 1, torch.int64), 0, True, check_bounds=False)
    bag = _kiln.subtract(_kiln.slice(_kiln.cumsum(marks, 0), [(0, count, 1)]),
                         context.full((), 1, torch.int64))
    _kiln.check_index(bag, bags, 0, "embedding_bag (offsets[0] must be 0)", negative=False)
    _kiln.check_index(index, weight.shape[0], 0, "embedding_bag", negative=False)
    dtype = computing_dtype(meta(node)[0].dtype)
    rows = _kiln.take(cast(weight, dtype), index, 0, False)
    if per_sample_weights is not None:
        rows = _kiln.multiply(rows, _kiln.reshape(cast(per_sample_weights, dtype), [count, 1]))
    kept = None
    if padding_idx is not None and padding_idx >= 0:
        kept = _kiln.not_equal(index, context.full((), padding_idx, torch.int64))
        rows = _kiln.where(_kiln.reshape(kept, [count, 1]), rows, context.full((), 0, dtype))
    total = _kiln.index_put(context.full([bags, width], 0, dtype), bag, rows, 0, True,
                            check_bounds=False)
    size = _kiln.index_put(context.full([bags], 0, torch.int64), bag,
                           context.full([count], 1, torch.int64) if kept is None
                           else cast(kept, torch.int64), 0, True, check_bounds=False)
    if mode == _MEAN:
        divisor = _kiln.maximum(size, context.full((), 1, torch.int64))
        total = _kiln.divide(total, _kiln.reshape(cast(divisor, dtype), [bags, 1]))
    if not auxiliary_used:  # no backward reads them
        return (total,) + tuple(context.full(out_shape(context, node, k), 0, torch.int64)
                                for k in (1, 2, 3))
    if mode == _MEAN:
        if out_shape(context, node, 2) != [bags]:
            raise Unconvertible("embedding_bag whose bag sizes are not one per bag")
        return total, bag, size, size
    # a sum's offset2bag: each index's bag where eager fills it (a padding index), else empty
    offset2bag = bag if out_shape(context, node, 1) == [count] else context.full(
        out_shape(context, node, 1), 0, torch.int64)
    return (total, offset2bag) + tuple(context.full(out_shape(context, node, k), 0, torch.int64)
                                       for k in (2, 3))
