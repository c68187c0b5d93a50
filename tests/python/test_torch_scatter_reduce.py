"""scatter_reduce's sums and means (graph networks' message aggregation) compiled by kiln as
scatter-adds, its maxima and minima as a sort and a scatter in sorted order, with and without
the input's own values, against eager PyTorch; products stay eager and match."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


# integer means stay eager (torch floors them)
@pytest.mark.parametrize("reduce, dtype", [("sum", torch.float32), ("sum", torch.float64),
                                           ("sum", torch.int64), ("mean", torch.float32),
                                           ("mean", torch.float64), ("amax", torch.float32),
                                           ("amin", torch.float64), ("amax", torch.int32),
                                           ("amin", torch.int64), ("amax", torch.bfloat16)])
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


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_maxima_and_minima_propagate_nan_and_keep_integer_limits(reduce, include_self):
    # NaN among the values or in x wins, as eager's; repeated places, ties, infinities and the
    # integer extremes (an int64 minimum negated would wrap) land where eager puts them.
    x = torch.tensor([[1.0, float("nan")], [3.0, 4.0], [0.0, -0.0], [2.0, 2.0]])
    src = torch.tensor([[5.0, 1.0], [float("nan"), 9.0], [-1.0, float("inf")],
                        [7.0, -float("inf")], [7.0, 2.0], [-0.0, 0.0]])
    index = torch.tensor([[0, 1], [0, 1], [2, 2], [3, 0], [3, 0], [2, 3]])
    limits = torch.tensor([[-2**63, 2**63 - 1], [5, -5], [0, 0]])
    int_src = torch.tensor([[2**63 - 1, -2**63], [-2**63, 7], [3, 2**63 - 1]])
    int_index = torch.tensor([[0, 1], [2, 1], [0, 2]])

    def f(x, src, limits, int_src):
        return (x.scatter_reduce(0, index, src, reduce, include_self=include_self),
                limits.scatter_reduce(0, int_index, int_src, reduce, include_self=include_self))

    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    for got, want in zip(compiled(x, src, limits, int_src), f(x, src, limits, int_src)):
        torch.testing.assert_close(got, want, equal_nan=True)


def test_many_maxima_stay_eager_and_match():
    # past 2**18 values eager's scatter-max is faster than a sort and an ordered scatter
    x, src = torch.randn(100, 8), torch.randn(40000, 8)
    index = torch.randint(0, 100, (40000, 8), generator=torch.Generator().manual_seed(2))

    def f(x, src):
        return x.scatter_reduce(0, index, src, "amax")

    torch.testing.assert_close(torch.compile(f, backend="kiln")(x, src), f(x, src))
    with pytest.raises(Exception, match="scatter_reduce's amax of more than 262144 values"):
        torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})(x, src)


def test_products_stay_eager_and_match():
    x, src = torch.randn(5, 3), torch.randn(7, 3)
    index = torch.randint(0, 5, (7, 3), generator=torch.Generator().manual_seed(1))

    def f(x, src):
        return x.scatter_reduce(0, index, src, "prod", include_self=False)

    torch.testing.assert_close(torch.compile(f, backend="kiln")(x, src), f(x, src))
