"""torch's sort, argsort and topk on the GPU through torch.compile's kiln backend: rows of up
to 2,048 in kiln's sort kernels (codegen/cuda/sort_kernels.cpp), longer ones in eager torch's
(on the CPU where there is no GPU). The NumPy side is tests/python/test_cuda_sort.py."""
import numpy as np
import pytest
import torch

from test_cuda_sort import GPU, same_bits, with_specials


@pytest.mark.parametrize("length", [100, 5000])
def test_torch_sorts_descending_and_top_k(length):
    """torch.sort (descending, stable), argsort and topk through torch.compile's kiln backend:
    NaN first when descending, ties in their order, as eager's (topk of distinct values: its
    order among ties is unspecified)."""
    device = "cuda" if GPU and torch.cuda.is_available() else "cpu"

    def f(x, distinct):
        values, positions = torch.sort(x, dim=-1, descending=True, stable=True)
        top, where = torch.topk(distinct, 5, dim=-1)
        return values, positions, torch.argsort(x, dim=0, stable=True), top, where

    rng = np.random.default_rng(1)
    x = torch.from_numpy(with_specials(rng.standard_normal((4, length)).round(1))).to(device)
    distinct = torch.from_numpy(np.stack([rng.permutation(length) for _ in range(4)])
                                .astype(np.float32)).to(device)
    got = torch.compile(f, backend="kiln")(x, distinct)
    expected = f(x, distinct)
    for g, e in zip(got, expected):
        same_bits(g.cpu().numpy(), e.cpu().numpy())
