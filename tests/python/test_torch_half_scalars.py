"""Python numbers beside float16/bfloat16 tensors as torch's CPU kernels take them: rounded to
the tensor's dtype first (x + 0.3 adds bfloat16(0.3)), except in multiplication and division,
which take them at float32. kiln used 0.3 unrounded everywhere: x + 0.3 differed from eager in
the last bit of a third of the elements."""
import pytest
import torch

import kiln  # noqa: F401 (registers the backend)

OPS = {
    "add": lambda x: x + 0.3, "sub": lambda x: x - 1.7, "rsub": lambda x: 0.3 - x,
    "add_alpha": lambda x: torch.add(x, 0.3, alpha=2), "mul": lambda x: x * 0.1,
    "div": lambda x: x / 0.3, "pow": lambda x: x.abs() ** 0.3, "fmod": lambda x: torch.fmod(x, 0.3),
    "remainder": lambda x: torch.remainder(x, 0.3), "gt": lambda x: x > 0.3,
    "eq": lambda x: x == 0.30078125, "clamp": lambda x: torch.clamp(x, min=0.3),
    "where": lambda x: torch.where(x > 0, x, 0.3),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(OPS))
def test_python_numbers_beside_half_tensors_match_eager(dtype, name):
    torch._dynamo.reset()
    function = OPS[name]
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(dtype)
    got, expected = torch.compile(function, backend="kiln")(x), function(x)
    assert got.dtype == expected.dtype
    assert torch.equal(got, expected), f"{int((got != expected).sum())} of 4096 differ"
