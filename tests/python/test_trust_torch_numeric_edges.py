"""The sign of zero where eager torch defines it and kiln had NumPy's rule instead: relu,
clamp and hardtanh with numbers as bounds return the value itself unless it is past a bound
(relu(-0.0) is -0.0; kiln's maximum(x, 0) returned the bound, +0.0; with tensors as bounds
eager's answer depends on the length, its vector loops returning the bound), and torch.remainder's zero carries the
dividend's sign (torch.remainder(-4.0, 2.0) is -0.0; NumPy's carries the divisor's). The sign
shows in what follows: 1 / relu(x) is -inf in eager torch."""
import pytest
import torch
import torch.nn.functional as F

from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

ZEROS = [-0.0, 0.0, -1.0, 1.0, 7.0, float("nan"), float("-inf"), 6.0]

TIES = [
    ("relu", lambda x: F.relu(x)),
    ("relu6", lambda x: F.relu6(x)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.0, 0.0)),
    ("clamp", lambda x: torch.clamp(x, min=0.0, max=6.0)),
    ("clamp_min", lambda x: torch.clamp_min(x, 0.0)),
    ("clamp_max", lambda x: torch.clamp_max(x, -0.0)),
    ("relu_reciprocal", lambda x: 1 / F.relu(x)),
]


def same_bits(got, expected):
    """Equal values, NaN in the same places and the same sign of every number."""
    assert got.dtype == expected.dtype
    numbers = ~torch.isnan(expected)
    assert torch.equal(torch.isnan(got), ~numbers)
    assert torch.equal(got[numbers], expected[numbers])
    assert torch.equal(torch.signbit(got[numbers]), torch.signbit(expected[numbers]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("function", [case[1] for case in TIES], ids=[case[0] for case in TIES])
def test_relu_and_clamp_keep_the_value_at_a_bound_it_equals(function, dtype):
    x = torch.tensor(ZEROS * 3, dtype=dtype)  # past one vector of lanes
    same_bits(torch.compile(function, backend="kiln")(x), function(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_remainder_zero_has_the_dividends_sign(dtype):
    a = torch.tensor([-4.0, 4.0, -4.0, 4.0, -0.0, 0.0, -3e9, 1.5, float("nan"), 5.0] * 2, dtype=dtype)
    b = torch.tensor([2.0, -2.0, -2.0, 2.0, 3.0, -3.0, 0.5, -0.5, 1.0, float("inf")] * 2, dtype=dtype)
    for function in (torch.remainder, lambda a, b: a % b, lambda a, b: torch.remainder(a, -2.0)):
        same_bits(torch.compile(function, backend="kiln")(a, b), function(a, b))
