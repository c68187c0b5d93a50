"""Upsampling as U-Nets, FPNs and diffusion decoders use it (F.interpolate: upsample_nearest2d
and upsample_bilinear2d and their .vec overloads), compiled whole (PyTorch's decompositions
turn them into index arithmetic and gathers kiln converts: no node is left to eager), against
eager on several dtypes, sizes, scale factors and both align_corners, with gradients."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
RESIZES = {
    "nearest x2": dict(scale_factor=2, mode="nearest"),
    "nearest 1.5": dict(scale_factor=1.5, mode="nearest"),
    "nearest to 7x11": dict(size=(7, 11), mode="nearest"),
    "nearest down to 3x2": dict(size=(3, 2), mode="nearest"),
    "bilinear x2": dict(scale_factor=2, mode="bilinear", align_corners=False),
    "bilinear x2 corners": dict(scale_factor=2, mode="bilinear", align_corners=True),
    "bilinear to 9x5 corners": dict(size=(9, 5), mode="bilinear", align_corners=True),
    "bilinear 0.6 recomputed": dict(scale_factor=0.6, mode="bilinear",
                                    recompute_scale_factor=True),
}
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 1e-2}


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("resize", list(RESIZES))
@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (1, 4, 5, 5)])
def test_interpolate_matches_eager(resize, dtype, shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(3)).to(dtype)
    function = lambda t: F.interpolate(t, **RESIZES[resize]) * 2 + 1  # noqa: E731
    got = torch.compile(function, backend="kiln", **WHOLE)(x)
    want = function(x.float()).to(dtype) if dtype == torch.bfloat16 else function(x)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    tolerance = TOLERANCE[dtype]
    torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)


def _decoder(x, skip):
    """A U-Net decoder step: upsample, join the skip connection, bilinear to its size again."""
    up = F.interpolate(x, scale_factor=2, mode="nearest")
    joined = torch.cat([up, skip], 1).tanh()
    return F.interpolate(joined, size=(5, 7), mode="bilinear", align_corners=True).square().sum()


def test_gradients_of_a_decoder_step_compile_whole():
    x = torch.randn(2, 3, 4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    skip = torch.randn(2, 2, 8, 12, dtype=torch.float64)
    results = []
    for run in (_decoder, torch.compile(_decoder, backend="kiln", **WHOLE)):
        leaves = x.clone().requires_grad_(), skip.clone().requires_grad_()
        out = run(*leaves)
        results.append((out.detach(), *torch.autograd.grad(out, leaves)))
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
