"""torch.bucketize and torch.searchsorted as ops kiln converts (they ran in eager PyTorch between
kiln's parts: histogram features, quantisation bins, T5-style position buckets by boundaries).

PyTorch's decomposition of bucketize is a binary search whose every step runs over all elements
at once (comparisons, a gather, wheres: ops kiln converts), equal to eager's kernel, NaN and ties
included. It is used as it is, except where its result would not be eager's:
- no boundaries: it returns zeros of the input's dtype, where eager's are int64 (int32);
- boundaries of another dtype than the input: eager compares in neither's promotion exactly,
  so such calls keep the op whole, for eager PyTorch.
searchsorted of a 1-d sorted sequence without a sorter is bucketize with its arguments swapped
(side="right" is right=True); a batched sequence or a sorter keeps the op whole.
"""
import torch
from torch._decomp import decomposition_table

aten = torch.ops.aten
_PYTORCH_BUCKETIZE = decomposition_table[aten.bucketize.Tensor]


def _bucketize(values, boundaries, *, out_int32=False, right=False):
    if values.dtype != boundaries.dtype:
        return NotImplemented
    if boundaries.shape[-1] == 0:
        return torch.zeros(values.shape, dtype=torch.int32 if out_int32 else torch.int64,
                           device=values.device)
    return _PYTORCH_BUCKETIZE(values, boundaries, out_int32=out_int32, right=right)


def _searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                  sorter=None):
    if sorted_sequence.dim() != 1 or sorter is not None:
        return NotImplemented
    return _bucketize(values, sorted_sequence, out_int32=out_int32,
                      right=right or side == "right")


BUCKETIZE_DECOMPOSITIONS = {aten.bucketize.Tensor: _bucketize,
                            aten.searchsorted.Tensor: _searchsorted}
