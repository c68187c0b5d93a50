"""Global torch state that changes the ATen graph of one Dynamo graph without changing its
code: the default dtype (torch.ones(3) is float64 under set_default_dtype(torch.float64)) and
autocast around the call. Dynamo guards on both and hands kiln the same graph code again;
kiln's record of the first (its key: the code) answered the second, float32 where eager gives
float64 or bfloat16, without an error."""
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


def _made_here(x):
    return torch.ones(3) * x + torch.arange(3.0)


def _product(x, w):
    return (x @ w).relu()


def test_a_new_default_dtype_gives_eagers_dtype():
    compiled = torch.compile(_made_here, backend="kiln")
    x = torch.tensor(2.0, dtype=torch.float64)
    assert compiled(x).dtype == torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.testing.assert_close(compiled(x), _made_here(x))
        assert compiled(x).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
    assert compiled(x).dtype == torch.float32


def test_autocast_around_the_call_gives_eagers_dtype():
    compiled = torch.compile(_product, backend="kiln")
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    assert compiled(x, w).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = compiled(x, w), _product(x, w)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want)
