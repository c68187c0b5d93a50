"""A dynamic size that is a max or min of sizes (a sliding window's first position
max(0, n - w), padding up to a length max(0, L - n), a length capped by min(n, L)) compiled
with size symbols: kiln traces the argument that is the max or min at the traced sizes, and each
call checks that its sizes keep it so (kiln/torch/_size_checks.py); a call past that condition
runs a graph compiled for its sizes. kiln refused every such size ("not a polynomial") and
compiled the graph once per size: a generation loop compiled for every new length."""
import pytest
import torch
import torch.nn.functional as F

import kiln
import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


@pytest.fixture
def recompiles(capfd):
    kiln.set_logs("recompiles")
    yield lambda: capfd.readouterr().err
    kiln.set_logs("")


CASES = {  # (function, the lengths on the traced side of its condition, those past it)
    "max-pads-up-to-a-length": (lambda x: F.pad(x, (0, max(0, 8 - x.shape[-1]))) * 2,
                                (9, 12, 8, 30), (4, 3)),
    "max-expands-to-at-least": (lambda x: x[:, :1].expand(-1, max(x.shape[-1], 6)) * 3 + 1,
                                (9, 12, 6, 30), (4, 3)),
    "min-caps-a-length": (lambda x: x[:, :1].expand(-1, min(x.shape[-1], 6)) * 3 + 1,
                          (4, 3, 6, 5), (9, 12)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_max_or_min_size_compiles_once_for_its_side_and_per_size_past_it(name, recompiles):
    function, traced_side, past = CASES[name]
    compiled = torch.compile(function, backend="kiln", dynamic=True)
    generator = torch.Generator().manual_seed(0)
    for length in traced_side:
        x = torch.randn(3, length, generator=generator)
        torch.testing.assert_close(compiled(x), function(x))
    logged = recompiles()
    assert "compiles per size" not in logged and "compiles for sizes" not in logged, logged
    for length in past:
        x = torch.randn(3, length, generator=generator)
        torch.testing.assert_close(compiled(x), function(x))
    assert recompiles().count("compiles for sizes") == len(past)
