"""grid_sample's gradient (aten.grid_sampler_2d_backward) ran in eager PyTorch, the backward of
every spatial transformer or flow warp cut in two around it. kiln computes it (bilinear and
nearest, zeros and border padding, both align_corners): the input's gradient scattered into the
corners each point reads, the grid's a sum over channels, both against eager's."""
import itertools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from test_torch_grid_sample import _inputs
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


@pytest.mark.parametrize("mode, padding_mode, align_corners", list(itertools.product(
    ["bilinear", "nearest"], ["zeros", "border"], [False, True])))
@pytest.mark.parametrize("input_needs_grad", [True, False])
def test_grid_sample_gradients_compile_whole(mode, padding_mode, align_corners,
                                             input_needs_grad):
    def sample(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)

    x, grid = _inputs()
    x.requires_grad_(input_needs_grad)
    grid.requires_grad_()
    weights = torch.randn(2, 3, 5, 6, generator=torch.Generator().manual_seed(1))
    results = []
    for run in (sample, torch.compile(sample, backend="kiln", **WHOLE)):
        out = run(x, grid)
        wanted = [x, grid] if input_needs_grad else [grid]
        results.append([out.detach(), *torch.autograd.grad((out * weights).sum(), wanted)])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class _SpatialTransformer(nn.Module):
    """A localisation network predicts an affine map; the image is resampled through it."""

    def __init__(self):
        super().__init__()
        self.features = nn.Conv2d(3, 4, 3, padding=1)
        self.localisation = nn.Linear(4, 6)
        nn.init.zeros_(self.localisation.weight)
        with torch.no_grad():
            self.localisation.bias.copy_(torch.tensor([0.9, 0.1, 0.05, -0.1, 1.1, 0.0]))
        self.head = nn.Conv2d(3, 2, 3)

    def forward(self, image):
        theta = self.localisation(F.relu(self.features(image)).mean((2, 3))).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(image.shape), align_corners=False)
        warped = F.grid_sample(image, grid, padding_mode="border", align_corners=False)
        return self.head(warped)


def test_a_spatial_transformer_trains_whole():
    torch.manual_seed(0)
    model = _SpatialTransformer()
    mine = _SpatialTransformer()
    mine.load_state_dict(model.state_dict())
    compiled = torch.compile(mine, backend="kiln", **WHOLE)
    image = torch.randn(2, 3, 8, 7, generator=torch.Generator().manual_seed(1))
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, mine)]
    for _ in range(3):
        for run, optimizer in zip((model, compiled), optimizers):
            optimizer.zero_grad()
            run(image).pow(2).mean().backward()
            optimizer.step()
    for got, want in zip(mine.parameters(), model.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
