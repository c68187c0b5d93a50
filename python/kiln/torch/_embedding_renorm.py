"""nn.Embedding(max_norm=...)'s renormalisation, aten.embedding_renorm_ (F.embedding rescales
in place, under no_grad, every looked-up row whose norm exceeds max_norm), as ops kiln converts:
PyTorch has no decomposition of it, and it ran in eager PyTorch before each lookup.

The kernel (aten/src/ATen/native/Embedding.cpp) scales each distinct looked-up row by
max_norm / (norm + 1e-7) where norm > max_norm. Here the looked-up rows are gathered, scaled
and written back: a row looked up twice is written twice with the same value.
"""
import torch

aten = torch.ops.aten


def _embedding_renorm(weight, indices, max_norm, norm_type):
    indices = indices.reshape(-1)
    rows = weight[indices]
    norms = torch.linalg.vector_norm(rows, norm_type, dim=1, keepdim=True)
    scale = torch.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return aten.index_put(weight, [indices], rows * scale.to(rows.dtype))


EMBEDDING_RENORM_DECOMPOSITIONS = {aten.embedding_renorm.default: _embedding_renorm}
