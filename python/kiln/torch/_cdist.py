"""torch.cdist's pairwise distances (aten._cdist_forward) and their gradient
(aten._cdist_backward) as ops kiln converts: PyTorch decomposes neither (Inductor runs both
in eager PyTorch), and an N-body step or a k-means loop ran them between kiln's parts.

_cdist_forward is cdist's direct computation (the matrix-product form for p = 2 on more than
25 rows is aten._euclidean_dist, which PyTorch decomposes): the p-norm of every difference
x1[i] - x2[j], fused into one reduction. The gradient follows the CPU kernels
(aten/src/ATen/native/cpu/DistanceOpsKernel.cpp), their zeros where a distance is 0 included.
"""
import math

import torch

aten = torch.ops.aten


def _differences(x1, x2):
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)


def _cdist_forward(x1, x2, p, compute_mode=None):
    diff = _differences(x1, x2)
    if p == 0:
        return (diff != 0).sum(-1).to(x1.dtype)
    if p == math.inf:
        return diff.abs().amax(-1)
    if p == 1:
        return diff.abs().sum(-1)
    if p == 2:
        return diff.square().sum(-1).sqrt()
    return diff.abs().pow(p).sum(-1).pow(1 / p)


def _cdist_backward(grad, x1, x2, p, cdist):
    """The gradient for x1 (autograd swaps the arguments for x2's)."""
    if p == 0:
        return torch.zeros_like(x1)
    diff = _differences(x1, x2)
    dist, grad = cdist.unsqueeze(-1), grad.unsqueeze(-1)
    if p == 1:
        each = grad * diff.sign()
    elif p == math.inf:
        each = grad * diff.sign() * (diff.abs() == dist).to(diff.dtype)
    else:
        if p == 2:
            each = grad * diff / dist
        else:
            each = diff.sign() * diff.abs().pow(p - 1) * grad / dist.pow(p - 1)
        zero = dist == 0
        if p < 1:
            zero = zero | (diff == 0)
        each = torch.where(zero, 0.0, each)
    return each.sum(-2)


CDIST_DECOMPOSITIONS = {aten._cdist_forward.default: _cdist_forward,
                        aten._cdist_backward.default: _cdist_backward}
