"""aten.addbmm (beta * self + alpha * the sum over the batch of batch1[i] @ batch2[i]) as ops kiln
converts: PyTorch decomposes it nowhere (Inductor runs it in eager PyTorch), and kiln has no
entry, so it ran between kiln's parts. The decomposition is baddbmm's (PyTorch's) with the
batch summed: a batched product and a sum, which kiln fuses into the product's reduction."""
import torch

aten = torch.ops.aten


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    if not (self.is_floating_point() and batch1.is_floating_point()):
        return NotImplemented  # (kiln's products are floating point; eager checks the scalars)
    result = torch.bmm(batch1, batch2).sum(0, dtype=self.dtype)
    if alpha != 1:
        result = result * alpha
    if beta == 0:  # self is not read: its NaN does not propagate, as in eager
        return result.to(self.dtype)
    return (self * beta if beta != 1 else self) + result


ADDBMM_DECOMPOSITIONS = {aten.addbmm.default: _addbmm}
