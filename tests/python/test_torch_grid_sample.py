"""F.grid_sample (2-d, bilinear and nearest, zeros and border padding) compiled by kiln against
eager PyTorch, grid points outside the input and on its corners included; trained, its gradient
matches (test_torch_grid_sample_gradients.py compiles it whole); bicubic and reflection stay
eager and match."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


def _inputs(dtype=torch.float32):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 9, 11, generator=generator, dtype=dtype)
    grid = torch.rand(2, 5, 6, 2, generator=generator, dtype=dtype) * 2.4 - 1.2  # some outside
    grid[0, 0, 0] = torch.tensor([1.0, -1.0])
    grid[0, 0, 1] = torch.tensor([-1.0, 1.0])
    grid[1, 0, 0] = torch.tensor([0.5 / 11, 0.5 / 9])  # ties for nearest's rounding
    return x, grid


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_eager(mode, padding_mode, align_corners, dtype):
    def f(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)

    x, grid = _inputs(dtype)
    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    torch.testing.assert_close(compiled(x, grid), f(x, grid))


@pytest.mark.parametrize("mode, padding_mode", [("bilinear", "zeros"), ("bicubic", "zeros"),
                                                ("bilinear", "reflection")])
def test_grid_sample_trains_as_eager_does(mode, padding_mode):
    def f(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)

    x, grid = _inputs()
    eager = [x.clone().requires_grad_(), grid.clone().requires_grad_()]
    want = f(*eager)
    grad_out = torch.randn_like(want)
    want.backward(grad_out)
    mine = [x.clone().requires_grad_(), grid.clone().requires_grad_()]
    got = torch.compile(f, backend="kiln")(*mine)
    got.backward(grad_out)
    torch.testing.assert_close(got, want)
    for g, e in zip(mine, eager):
        torch.testing.assert_close(g.grad, e.grad)
