"""slice_scatter into a strided slice (start::step, the gradient of x[:, 0::2], Swin's patch
merging) compiled by kiln: pointwise work, against eager PyTorch, with nothing left to it."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
@pytest.mark.parametrize("case", [((3, 8, 5), 1, 0, None, 2), ((3, 8, 5), 1, 1, None, 2),
                                  ((3, 9, 5), 1, 1, 8, 3), ((4, 7), -1, 0, 6, 4),
                                  ((6,), 0, 5, None, 3)])
def test_strided_slice_scatter_matches_eager(case, dtype):
    shape, dim, start, end, step = case
    generator = torch.Generator().manual_seed(0)
    count = len(range(start, shape[dim] if end is None else end, step))
    src_shape = list(shape)
    src_shape[dim] = count
    base, src = ((torch.randn(*extents, generator=generator) * 5).to(dtype)
                 for extents in (shape, src_shape))

    def f(base, src):
        return aten.slice_scatter(base, src, dim, start, end, step)

    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    assert torch.equal(compiled(base, src), f(base, src))


def test_patch_merging_gradient_compiles_whole():
    def merge(x):
        return torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2],
                          x[:, 1::2, 1::2]], -1).sin()

    x = torch.randn(2, 8, 8, 4, requires_grad=True)
    merge(x).square().sum().backward()
    want, x.grad = x.grad, None
    compiled = torch.compile(merge, backend="kiln", options={"unsupported_ops": "error"})
    compiled(x).square().sum().backward()
    torch.testing.assert_close(x.grad, want)
