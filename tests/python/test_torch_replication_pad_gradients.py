"""The gradient of replication padding (replication_pad{1,2,3}d_backward) ran in eager PyTorch,
cutting the training graph of every model with F.pad(mode="replicate") or a convolution of
padding_mode="replicate": PyTorch decomposes the forward but not its gradient. kiln's
decomposition (python/kiln/torch/_replication_pad.py) adds the output gradient into the edge
element each padded position copies, one index_add per padded dim."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


@pytest.mark.parametrize("shape, padding", [
    ((2, 3, 5), (2, 3)),
    ((2, 3, 4, 5), (1, 2, 3, 0)),
    ((1, 2, 3, 4, 2), (1, 1, 0, 2, 3, 1)),  # (a width past the dim's size repeats the edge)
])
@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-6), (torch.float64, 1e-12),
                                              (torch.bfloat16, 1e-2)])
def test_replicate_padding_gradients_compile_whole(shape, padding, dtype, tolerance):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=generator).to(dtype).requires_grad_()

    def pad(x):
        return F.pad(x, padding, mode="replicate")
    results = []
    # (bfloat16 against eager in float32, rounded: kiln sums a corner's copies in float32 and
    # rounds once, eager's kernel rounds each addition)
    reference = x.detach().float().requires_grad_() if dtype == torch.bfloat16 else x
    for run, operand in ((pad, reference), (torch.compile(pad, backend="kiln", **WHOLE), x)):
        out = run(operand)
        weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
        gradient = torch.autograd.grad((out * weights.to(out.dtype)).sum(), operand)[0]
        results.append([out.detach().to(dtype), gradient.to(dtype)])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)


def test_a_convolution_with_replicate_padding_trains_whole():
    torch.manual_seed(0)
    def make():
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="replicate"), nn.ReLU(),
                             nn.Conv2d(4, 2, 3, padding=2, padding_mode="replicate"))
    model, mine = make(), make()
    mine.load_state_dict(model.state_dict())
    compiled = torch.compile(mine, backend="kiln", **WHOLE)
    image = torch.randn(2, 3, 6, 5, generator=torch.Generator().manual_seed(1),
                        requires_grad=True)
    mine_image = image.detach().clone().requires_grad_()
    model(image).pow(2).mean().backward()
    compiled(mine_image).pow(2).mean().backward()
    torch.testing.assert_close(mine_image.grad, image.grad, rtol=1e-5, atol=1e-6)
    for got, want in zip(mine.parameters(), model.parameters()):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-5, atol=1e-6)
