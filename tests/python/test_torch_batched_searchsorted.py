"""torch.searchsorted of a batched sorted sequence (each row of values searched in its own sorted
row: NeRF's hierarchical sampling, searchsorted(cdf, u, right=True)) ran in eager PyTorch, since
PyTorch's bucketize decomposition takes 1-d boundaries only. kiln's decomposition
(kiln/torch/_bucketize.py) is a binary search with a gather of each row's middle elements per
step and eager's kernel's comparisons: equal to eager bit for bit, ties, NaN and infinities
included."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
NAN, INF = float("nan"), float("inf")


def _searches(sorted_rows, values):
    return (torch.searchsorted(sorted_rows, values),
            torch.searchsorted(sorted_rows, values, right=True),
            torch.searchsorted(sorted_rows, values, side="right", out_int32=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_batched_searchsorted_compiles_whole_and_matches_eager(dtype):
    sorted_rows = torch.tensor([[[0, 1, 1, 2, 7], [-3, -3, 0, 4, 4]],
                                [[1, 2, 3, 4, 5], [0, 0, 0, 0, 0]]]).to(dtype)
    values = torch.tensor([[[1, -4, 7, 9], [-3, 4, 2, 0]],
                           [[0, 3, 5, 6], [0, -1, 1, 0]]]).to(dtype)
    if dtype.is_floating_point:
        sorted_rows[0, 1, -1] = INF
        values[1, 0, 0], values[1, 1, 1] = NAN, -INF
    want = _searches(sorted_rows, values)
    got = torch.compile(_searches, backend="kiln", **WHOLE)(sorted_rows, values)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert torch.equal(g, w), (g, w)


def _sample_pdf(bins, weights, u):
    """NeRF's hierarchical sampling: inverse transform sampling of a piecewise-constant pdf."""
    pdf = weights / weights.sum(-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[..., :1]), torch.cumsum(pdf, -1)], -1)
    above = torch.searchsorted(cdf, u, right=True)
    pairs = torch.stack([(above - 1).clamp(min=0), above.clamp(max=cdf.shape[-1] - 1)], -1)
    shape = list(pairs.shape[:-1]) + [cdf.shape[-1]]
    cdf_pairs = torch.gather(cdf.unsqueeze(-2).expand(shape), -1, pairs)
    bin_pairs = torch.gather(bins.unsqueeze(-2).expand(shape), -1, pairs)
    width = cdf_pairs[..., 1] - cdf_pairs[..., 0]
    width = torch.where(width < 1e-5, torch.ones_like(width), width)
    t = (u - cdf_pairs[..., 0]) / width
    return bin_pairs[..., 0] + t * (bin_pairs[..., 1] - bin_pairs[..., 0])


def test_nerf_hierarchical_sampling_and_its_gradient_compile_whole():
    generator = torch.Generator().manual_seed(0)
    bins = torch.sort(torch.rand(5, 9, generator=generator), -1).values
    weights = torch.rand(5, 8, generator=generator)
    u = torch.rand(5, 12, generator=generator)
    results = []
    for run in (_sample_pdf, torch.compile(_sample_pdf, backend="kiln", **WHOLE)):
        w = weights.clone().requires_grad_()
        samples = run(bins, w, u)
        results.append([samples.detach(), torch.autograd.grad(samples.sum(), w)[0]])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
