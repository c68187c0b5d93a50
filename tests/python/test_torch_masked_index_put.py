"""`x[mask] = value` (aten.index_put with a boolean mask index) when the value does not depend
on how many elements the mask selects: a where over the mask in kiln. It ran in eager PyTorch
("a boolean mask index"), which cut Longformer's embedding graph in two
(`extended_attention_mask[attention_mask == 2] = finfo.max`)."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _number(x, mask, row):
    y = x.clone()
    y[mask > 0.5] = 3.0
    return y


def _row_of_trailing_values(x, mask, row):
    y = x * 2
    y[mask[:, 0] > 0] = row  # a whole row of x per selected element: the row broadcasts
    return y


def _inner_dim(x, mask, row):
    y = x.clone()
    y[:, mask[0] > 0.3] = row[:1] * 2  # after a full slice: x[:, m] = v
    return y


def _accumulated(x, mask, row):
    return x.index_put((mask < 0.4,), row[0], accumulate=True)


def _integer_target(x, mask, row):
    counts = (x * 10).to(torch.int32)
    counts[mask > 0.2] = -1
    return counts


@pytest.mark.parametrize("function", [_number, _row_of_trailing_values, _inner_dim,
                                      _accumulated, _integer_target])
def test_a_boolean_mask_write_of_a_broadcast_value_compiles_whole(function):
    generator = torch.Generator().manual_seed(0)
    x, mask = torch.randn(4, 5, generator=generator), torch.rand(4, 5, generator=generator)
    row = torch.randn(5, generator=generator)
    with torch.no_grad():
        got = torch.compile(function, backend="kiln", **WHOLE)(x, mask, row)
    want = function(x, mask, row)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_boolean_mask_write_of_one_value_per_element_stays_eager():
    # x[mask] = values of the mask's count: a data-dependent shape, left to eager PyTorch
    def function(x, mask):
        y = x.clone()
        y[mask] = x[mask] * 2
        return y
    x = torch.randn(4, 5)
    mask = x > 0
    assert torch.equal(torch.compile(function, backend="kiln")(x, mask), function(x, mask))
