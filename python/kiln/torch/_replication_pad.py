"""The gradients of replication padding (F.pad(mode="replicate"), nn.Conv*d(padding_mode=
"replicate"), nn.ReplicationPad*d) as ops kiln converts: PyTorch decomposes the forward (a
gather of clamped indices) but not replication_pad{1,2,3}d_backward, which ran in eager PyTorch
between kiln's parts in every training step.

The padding repeats each edge element, so each input element's gradient is the sum of the
output gradients at the positions that copy it: per padded dim, an index_add of the output
gradient at clamp(position - left, 0, size - 1). The dims are independent, one index_add each.
"""
import torch

aten = torch.ops.aten


def _replication_pad_backward(grad_output, x, padding):
    if any(width < 0 for width in padding):  # (a crop: eager's kernel handles it)
        return NotImplemented
    dtype = grad_output.dtype
    # half-precision gradients summed in float32 and rounded once
    computing = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    grad = grad_output.to(computing)
    padded_dims = len(padding) // 2
    for k in range(padded_dims):
        dim = x.dim() - 1 - k  # padding lists the last dim's widths first
        left = padding[2 * k]
        positions = torch.arange(grad.shape[dim], device=grad.device) - left
        source = positions.clamp(0, x.shape[dim] - 1)
        shape = list(grad.shape)
        shape[dim] = x.shape[dim]
        grad = grad.new_zeros(shape).index_add(dim, source, grad)
    return grad.to(dtype)


REPLICATION_PAD_DECOMPOSITIONS = {
    aten.replication_pad1d_backward.default: _replication_pad_backward,
    aten.replication_pad2d_backward.default: _replication_pad_backward,
    aten.replication_pad3d_backward.default: _replication_pad_backward,
}
