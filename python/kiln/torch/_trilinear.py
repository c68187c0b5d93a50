"""aten._trilinear (nn.Bilinear, F.bilinear: x1^T W_k x2 for every output k) as ops kiln converts:
PyTorch decomposes it nowhere (Inductor runs it in eager PyTorch), and a model with a bilinear
layer ran it between kiln's parts, forward and gradient.

Its definition (aten/src/ATen/native/Linear.cpp): each input is unsqueezed at its `expand`
positions to one common rank, the three are multiplied (broadcast) and summed over `sumdim`.
That is the decomposition; kiln fuses the product into the sum's reduction, so the broadcast
product is never stored. `unroll_dim` only chooses how eager's kernel loops.
"""
import torch

aten = torch.ops.aten


def _placed(tensor, expanded, rank):
    """`tensor` with a dimension of 1 at each `expanded` position of `rank`, its own dimensions
    at the others, in order (eager's unsqueeze at each expanded position, lowest first)."""
    sizes = iter(tensor.shape)
    return tensor.reshape([1 if position in expanded else next(sizes)
                           for position in range(rank)])


def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    rank = i1.dim() + len(expand1)
    dtype = i1.dtype
    # half-precision products summed in float32 and rounded once, as eager's matrix products
    # accumulate them
    computing = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    product = (_placed(i1.to(computing), set(expand1), rank)
               * _placed(i2.to(computing), set(expand2), rank)
               * _placed(i3.to(computing), set(expand3), rank))
    return (product.sum(list(sumdim)) if len(sumdim) else product).to(dtype)


TRILINEAR_DECOMPOSITIONS = {aten._trilinear.default: _trilinear}
