"""scatter_reduce's sums and means (graph networks' message aggregation) compiled by kiln as
scatter-adds, with and without the input's own values, against eager PyTorch; maxima stay
eager and match."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


# integer means stay eager (torch floors them)
@pytest.mark.parametrize("reduce, dtype", [("sum", torch.float32), ("sum", torch.float64),
                                           ("sum", torch.int64), ("mean", torch.float32),
                                           ("mean", torch.float64)])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim, shape, index_shape", [(0, (5, 3), (7, 3)), (1, (4, 6), (4, 9)),
                                                     (-1, (2, 3, 5), (2, 2, 4))])
def test_scatter_reduce_matches_eager(dim, shape, index_shape, include_self, reduce, dtype):
    generator = torch.Generator().manual_seed(0)
    x = (torch.randn(*shape, generator=generator) * 4).to(dtype)
    src = (torch.randn(*[extent + 1 for extent in index_shape], generator=generator) * 4).to(dtype)
    index = torch.randint(0, shape[dim], index_shape, generator=generator)

    def f(x, index, src):
        return aten.scatter_reduce.two(x, dim, index, src, reduce, include_self=include_self)

    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    torch.testing.assert_close(compiled(x, index, src), f(x, index, src))


def test_maxima_stay_eager_and_match():
    x, src = torch.randn(5, 3), torch.randn(7, 3)
    index = torch.randint(0, 5, (7, 3), generator=torch.Generator().manual_seed(1))

    def f(x, src):
        return x.scatter_reduce(0, index, src, "amax", include_self=False)

    torch.testing.assert_close(torch.compile(f, backend="kiln")(x, src), f(x, src))
