"""torch.bucketize and torch.searchsorted as ops kiln converts (they ran in eager PyTorch between
kiln's parts: histogram features, quantisation bins, T5-style position buckets by boundaries).

PyTorch's decomposition of bucketize is a binary search whose every step runs over all elements
at once (comparisons, a gather, wheres: ops kiln converts), equal to eager's kernel, NaN and ties
included. It is used as it is, except where its result would not be eager's:
- no boundaries: it returns zeros of the input's dtype, where eager's are int64 (int32);
- boundaries of another dtype than the input: eager compares in neither's promotion exactly,
  so such calls keep the op whole, for eager PyTorch.
searchsorted of a 1-d sorted sequence without a sorter is bucketize with its arguments swapped
(side="right" is right=True); a batched sequence is a binary search of its own; a sorter keeps
the op whole.
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
    if sorter is not None:
        return NotImplemented
    right = right or side == "right"
    if sorted_sequence.dim() != 1:
        return _batched_search(sorted_sequence, values, out_int32, right)
    return _bucketize(values, sorted_sequence, out_int32=out_int32, right=right)


def _batched_search(sorted_sequence, values, out_int32, right):
    """searchsorted of each row of values in its own sorted row (NeRF's hierarchical sampling:
    searchsorted(cdf, u, right=True)): a binary search over all elements at once, a gather of
    each row's middle elements per step, with eager's kernel's comparisons (lower bound: go
    right unless middle >= value; upper bound: unless middle > value), so NaN lands where
    eager's does."""
    length = sorted_sequence.shape[-1]
    if (values.dtype != sorted_sequence.dtype or not isinstance(length, int)
            or values.shape[:-1] != sorted_sequence.shape[:-1]):
        return NotImplemented
    dtype = torch.int32 if out_int32 else torch.int64
    low = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    if length == 0:
        return low.to(dtype)
    high = torch.full(values.shape, length, dtype=torch.int64, device=values.device)
    for _ in range(length.bit_length()):  # each step halves [low, high): log2(length + 1)
        middle = (low + high) // 2
        searching = low < high
        pivot = torch.gather(sorted_sequence, -1, middle.clamp(max=length - 1))
        rightwards = (pivot > values if right else pivot >= values).logical_not()
        low = torch.where(searching & rightwards, middle + 1, low)
        high = torch.where(searching & rightwards.logical_not(), middle, high)
    return low.to(dtype)


BUCKETIZE_DECOMPOSITIONS = {aten.bucketize.Tensor: _bucketize,
                            aten.searchsorted.Tensor: _searchsorted}
