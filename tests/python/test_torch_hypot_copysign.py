"""torch.hypot (a spectrogram's magnitude from its real and imaginary parts) and torch.copysign
were not in kiln's conversion table and ran in eager PyTorch between kiln's parts, forward and
gradient. kiln has both ops (libm's hypot: no overflow of the squares)."""
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _magnitude(real, imaginary):
    return torch.log1p(torch.hypot(real, imaginary))


def test_hypot_and_its_gradient_compile_whole_without_overflow():
    generator = torch.Generator().manual_seed(0)
    real = torch.randn(3, 8, generator=generator)
    real[0, 0] = 3e20  # its square overflows float32; the hypot does not
    imaginary = torch.randn(3, 8, generator=generator)
    results = []
    for run in (_magnitude, torch.compile(_magnitude, backend="kiln", **WHOLE)):
        a, b = real.clone().requires_grad_(), imaginary.clone().requires_grad_()
        out = run(a, b)
        results.append([out.detach(), *torch.autograd.grad(out.sum(), (a, b))])
    assert torch.isfinite(results[1][0]).all()
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def _signs(x, n, s):
    return torch.copysign(x, s), torch.copysign(n, -1), torch.copysign(x, -0.0)


def test_copysign_of_floats_integers_and_negative_zero_compiles_whole():
    x = torch.tensor([1.5, -2.0, 0.0, -0.0, float("inf"), float("nan")])
    s = torch.tensor([-1.0, 3.0, -0.0, 0.0, -2.0, -1.0])
    n = torch.tensor([3, -4, 0, 7])
    want = _signs(x, n, s)
    got = torch.compile(_signs, backend="kiln", **WHOLE)(x, n, s)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(torch.signbit(g), torch.signbit(w))
