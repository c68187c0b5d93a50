"""torch's sort, argsort and topk on the GPU through torch.compile's kiln backend: in kiln's sort
kernels (codegen/cuda/sort_kernels.cpp: rows of up to 2,048 a block each, longer ones by radix
passes), but for a few rows of a million or more, which stay in eager torch's (on the CPU where
there is no GPU). The NumPy side is tests/python/test_cuda_sort.py."""
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


@pytest.mark.parametrize("shape, dim, stays_eager", [
    ((1 << 20,), 0, True), ((4, 1 << 20), 1, True), ((8, 1 << 20), 1, False),
    ((1 << 20, 2), 0, True), ((16, 65536), 1, False), ((64, 5000), 1, False), ((3, 4097), -1, False)])
def test_only_a_few_rows_of_a_million_or_more_stay_with_torchs_sort_on_the_gpu(shape, dim,
                                                                               stays_eager):
    """On a GPU kiln sorts every row in its kernels but for fewer than 8 rows of a million or
    more, where torch's onesweep radix sort is faster (_aten_sorting's measurements); a sort
    of a CPU tensor is kiln's whatever its rows."""
    from kiln.torch import _aten_sorting
    from kiln.torch._aten_table import Unconvertible

    def node(device):
        placeholder = torch.fx.Graph().placeholder("x")
        placeholder.meta["val"] = torch.empty(shape, device=device)
        return placeholder

    x = torch.empty(shape, device="meta")
    axis = dim % len(shape)
    _aten_sorting._refuse_few_long_gpu_rows(node("cpu"), x, axis)
    if stays_eager:
        with pytest.raises(Unconvertible, match="onesweep"):
            _aten_sorting._refuse_few_long_gpu_rows(node("meta"), x, axis)
    else:
        _aten_sorting._refuse_few_long_gpu_rows(node("meta"), x, axis)
