"""Sizes and indices of a dynamic length that kiln refused to keep symbolic, so that the graph
compiled once per length (KILN_LOGS=recompiles: "compile per value"), though Dynamo traced it
once:
- x[:, -1] of a dynamic length (RWKV's last state): select of a negative index;
- arange(length, -1, -1.0), a size symbol bound beside a float step (XLNet's relative
  positions): the entry called float() on the symbol and raised TypeError;
- a reshape to s0 * s1 // s0 (XLNet's relative shift): a floor division that divides exactly
  as polynomials is its quotient now.
Each runs four lengths on one library, against eager PyTorch."""
import pytest
import torch

import kiln
import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


@pytest.fixture
def recompiles(capfd):
    """What KILN_LOGS=recompiles logged since the test began."""
    kiln.set_logs("recompiles")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


def _last_position(x):
    return torch.tanh(x[:, -1]) + x[:, -2:].sum(1)


def _relative_positions(x):
    length = x.shape[1]
    positions = torch.arange(length, -length, -1.0)  # float positions from a size
    return x.sum(-1, keepdim=True) * positions[None, :length]


def _relative_shift(x):
    batch, length, width = x.shape
    scores = x @ x.transpose(1, 2)  # (batch, length, length)
    shifted = scores.reshape(batch, length * length // length, length)  # an exact division
    return shifted.reshape(batch, length, -1)[:, 1:] * 2 + width


@pytest.mark.parametrize("function", [_last_position, _relative_positions, _relative_shift])
def test_a_dynamic_length_runs_on_one_library(function, recompiles):
    compiled = torch.compile(function, backend="kiln", dynamic=True, **WHOLE)
    for length in (5, 7, 10, 16):
        x = torch.randn(3, length, 4, generator=torch.Generator().manual_seed(length))
        torch.testing.assert_close(compiled(x), function(x), rtol=1e-5, atol=1e-5)
    log = recompiles()
    assert "compile per value" not in log and "compiles per size" not in log, log
    assert "variant 2" not in log, log
