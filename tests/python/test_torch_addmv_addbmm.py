"""torch.addmv and torch.addbmm ran in eager PyTorch between kiln's parts, forward and gradient:
addmv's decomposition (PyTorch's, not Core ATen's) was not asked for, and addbmm has none.
Both compile now, into products kiln has (kiln/torch/_addbmm.py for addbmm)."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _products(bias, matrix, vector, batch1, batch2, beta, alpha):
    return (torch.addmv(bias[:, 0], matrix, vector, beta=beta, alpha=alpha),
            torch.addbmm(bias[:, :2], batch1, batch2, beta=beta, alpha=alpha))


def _operands(dtype):
    generator = torch.Generator().manual_seed(0)

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype)
    return draw(4, 5), draw(4, 5), draw(5), draw(3, 4, 5), draw(3, 5, 2)


# (integer products stay eager: kiln's matmul is floating point)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2), (0, -1)])
def test_addmv_and_addbmm_compile_whole(dtype, beta, alpha):
    operands = list(_operands(dtype))
    if beta == 0:
        operands[0][0, 0] = float("nan")  # beta 0: the bias is not read
    want = _products(*operands, beta, alpha)
    got = torch.compile(_products, backend="kiln", **WHOLE)(*operands, beta, alpha)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_their_gradients_compile_whole():
    operands = [t.requires_grad_() for t in _operands(torch.float32)]
    results = []
    for run in (_products, torch.compile(_products, backend="kiln", **WHOLE)):
        outputs = run(*operands, 0.5, 2)
        loss = sum((out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum()
                   for out in outputs)
        results.append([out.detach() for out in outputs] + list(torch.autograd.grad(loss, operands)))
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
