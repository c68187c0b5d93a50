"""Anti-aliased resizing (F.interpolate(..., antialias=True), bilinear and bicubic; torchvision's
Resize of tensors) compiled by kiln (kiln/torch/_aten_antialias.py) against eager PyTorch, in
inference and in training (the gradient of the input and of a convolution before it). It ran
in eager PyTorch between kiln's parts. Images with a side of 1, where torch's kernel computes
otherwise than for the same pixels in a wider image, and uint8 images stay in eager PyTorch."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln
import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


class _Resize(nn.Module):
    def __init__(self, **interpolation):
        super().__init__()
        self.convolution = nn.Conv2d(3, 4, 3, padding=1)
        self.interpolation = interpolation

    def forward(self, x):
        return F.interpolate(self.convolution(x), antialias=True, **self.interpolation)


def _step(model, run, x):
    """The output, and the gradients of the input and the parameters of a weighted sum."""
    model.zero_grad()
    x = x.detach().requires_grad_()
    out = run(x)
    (out * torch.linspace(-1, 1, out.numel()).view(out.shape).to(out.dtype)).sum().backward()
    return [out.detach(), x.grad] + [parameter.grad for parameter in model.parameters()]


def _check(model, x, tolerance=1e-4, **options):
    want = _step(model, model, x)
    mine = copy.deepcopy(model)
    got = _step(mine, torch.compile(mine, backend="kiln", **options), x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("interpolation", [
    dict(size=(4, 5)),  # down in both sides
    dict(size=(20, 3), align_corners=True),  # up in one, down in the other
    dict(scale_factor=(0.3, 1.7)),  # scales given: torch's kernel uses them
], ids=["down", "up-and-down-aligned", "scales"])
def test_antialiased_resizing_compiles_whole_and_matches_eager(mode, interpolation):
    torch.manual_seed(0)
    _check(_Resize(mode=mode, **interpolation), torch.randn(2, 3, 9, 7), **WHOLE)


def test_antialiased_resizing_in_float64_channels_last_and_with_dynamic_sizes():
    torch.manual_seed(0)
    model = _Resize(mode="bicubic", size=(4, 5))
    _check(model, torch.randn(2, 3, 9, 7).to(memory_format=torch.channels_last), **WHOLE)
    _check(model.double(), torch.randn(2, 3, 9, 7, dtype=torch.float64), 1e-10, **WHOLE)
    # dynamic sizes in inference only: AOTAutograd's own trace of this op's gradient with
    # dynamic sizes fails in PyTorch (backend="aot_eager" too: "Expected IntList")
    torch._dynamo.reset()
    model, x = model.float(), torch.randn(3, 3, 9, 7)
    with torch.no_grad():
        got = torch.compile(copy.deepcopy(model), backend="kiln", dynamic=True, **WHOLE)(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)


@pytest.fixture
def graph_breaks(capfd):
    kiln.set_logs("graph_breaks")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


def test_an_image_with_a_side_of_1_resizes_in_eager_pytorch(graph_breaks):
    # torch resizes the 4 rows [0, 1, 2, 3] of a 1-wide image to [0.71, 0.71], those of a
    # 2-wide image to [0.71, 2.29]: kiln's weights, read off a 2-wide identity, would differ
    torch.manual_seed(0)
    _check(_Resize(mode="bilinear", size=(2, 1)), torch.randn(2, 3, 4, 1))
    assert "with a side of 1" in graph_breaks()


def test_uint8_images_resize_in_eager_pytorch(graph_breaks):
    def resize(x):
        return F.interpolate(x, size=(4, 5), mode="bilinear", antialias=True)
    x = torch.randint(0, 256, (1, 3, 9, 7), dtype=torch.uint8)
    assert torch.equal(torch.compile(resize, backend="kiln")(x), resize(x))
    assert "torch.uint8 images" in graph_breaks()
