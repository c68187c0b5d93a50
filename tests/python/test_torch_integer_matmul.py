"""Integer torch.mm, bmm and matmul under torch.compile(backend="kiln"): exact (wrapping in
the dtype as eager torch does) at odd sizes, batched and through transposed operands, compiled
whole. Larger products run kiln's integer matmul (extern/integer_matmul.cpp); int64 256^3 took
7x eager's time as a generated reduction reading b down its columns."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _draw(generator, dtype, *shape):
    return torch.randint(-(2 ** 20), 2 ** 20, shape, generator=generator, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_integer_products_are_exact(dtype):
    generator = torch.Generator().manual_seed(0)
    a, b = _draw(generator, torch.int64, 67, 129), _draw(generator, torch.int64, 129, 301)
    x, y = _draw(generator, torch.int64, 3, 33, 70), _draw(generator, torch.int64, 3, 70, 5)
    a, b, x, y = (t.to(dtype) for t in (a, b, x, y))  # wraps: products and sums overflow

    def products(a, b, x, y):
        return (torch.mm(a, b), torch.bmm(x, y), torch.matmul(b.t(), a.t()) + 1,
                torch.matmul(x, b[:70, :64]))
    compiled = torch.compile(products, backend="kiln", **WHOLE)
    for got, expected in zip(compiled(a, b, x, y), products(a, b, x, y)):
        assert got.dtype == expected.dtype and torch.equal(got, expected)


def test_a_product_too_wide_for_one_block_of_columns():
    generator = torch.Generator().manual_seed(1)
    a, b = _draw(generator, torch.int32, 1024, 64), _draw(generator, torch.int32, 64, 1024)
    compiled = torch.compile(torch.mm, backend="kiln", **WHOLE)
    assert torch.equal(compiled(a, b), torch.mm(a, b))
