"""torch.cummax and torch.cummin compile whole (kiln's scans of those names, op_list.h): values
with NaN sticking from where it appears, and the index of the last position the running
extreme was attained (torch's for ties), in every dtype and along every dim; gradients too."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
SPECIAL = [1.0, 2.0, -1.0, float("nan"), float("-inf"), float("inf"), 0.0, -0.0]

def _draw(dtype, shape, seed):
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:  # few distinct values: ties, NaN, infinities, signed zeros
        pool = torch.tensor(SPECIAL, dtype=dtype)
        return pool[torch.randint(0, len(pool), shape, generator=generator)]
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(-3, 4, shape, generator=generator).to(dtype)

def _extremes(x, dim):
    return torch.cummax(x, dim), torch.cummin(x, dim)

def _assert_same(got, want):
    for (g_values, g_indices), (w_values, w_indices) in zip(got, want):
        assert g_values.dtype == w_values.dtype and g_indices.dtype == torch.int64
        torch.testing.assert_close(g_values, w_values, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(g_indices, w_indices), (g_indices, w_indices)

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool])
def test_values_and_indices_match_eager(dtype):
    compiled = torch.compile(_extremes, backend="kiln", dynamic=False, **WHOLE)
    for seed, (shape, dim) in enumerate([((9,), 0), ((4, 11), 1), ((4, 11), 0), ((2, 3, 7), -1),
                                         ((2, 3, 7), 1), ((300,), 0), ((6, 301), 0)]):
        x = _draw(dtype, shape, seed)
        _assert_same(compiled(x, dim), _extremes(x, dim))

@pytest.mark.parametrize("shape, dim", [((), 0), ((), -1), ((0, 4), 1), ((4, 0), 1), ((1,), 0)])
def test_zero_dimensional_empty_and_single_inputs(shape, dim):
    compiled = torch.compile(_extremes, backend="kiln", dynamic=False, **WHOLE)
    x = _draw(torch.float32, shape, 1)
    _assert_same(compiled(x, dim), _extremes(x, dim))

def test_every_placement_of_one_nan_and_ties():
    compiled = torch.compile(_extremes, backend="kiln", dynamic=False, **WHOLE)
    base = torch.tensor([3.0, 1.0, 3.0, float("-inf"), 3.0, 5.0])
    rows = [base]
    for k in range(len(base)):
        row = base.clone()
        row[k] = float("nan")
        rows.append(row)
    x = torch.stack(rows)
    _assert_same(compiled(x, 1), _extremes(x, 1))

def test_gradient_matches_eager():
    def f(x):
        values, _ = torch.cummax(x * 2, dim=1)
        low, _ = torch.cummin(x, dim=0)
        return (values * values).sum() + low.sum()
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0], [0.5, 0.5, -1.0, 4.0], [2.0, 1.0, 5.0, 5.0]])
    want_x = x.clone().requires_grad_()
    f(want_x).backward()
    got_x = x.clone().requires_grad_()
    torch.compile(f, backend="kiln", **WHOLE)(got_x).backward()
    torch.testing.assert_close(got_x.grad, want_x.grad)
