"""A cast of a Python number (aten._to_copy(2.0, dtype=float32)), which torch.func.grad traces
for mse_loss's gradient factor under vmap: kiln's entry took the number for a tensor and the
backend raised AttributeError ('float' object has no attribute 'dtype'), failing the compile."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def test_per_sample_gradients_by_vmap_of_grad_compile_whole():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    parameters = {name: p.detach() for name, p in model.named_parameters()}

    def loss(parameters, x, y):
        return F.mse_loss(functional_call(model, parameters, (x[None],)).squeeze(), y)

    def per_sample_gradients(parameters, x, y):
        return vmap(grad(loss), in_dims=(None, 0, 0))(parameters, x, y)

    generator = torch.Generator().manual_seed(1)
    x, y = torch.randn(5, 4, generator=generator), torch.randn(5, generator=generator)
    want = per_sample_gradients(parameters, x, y)
    got = torch.compile(per_sample_gradients, backend="kiln", **WHOLE)(parameters, x, y)
    assert want.keys() == got.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_a_cast_of_a_number_has_the_casts_dtype_and_rounding():
    def casts(x):
        return (x + torch.ops.aten._to_copy(2.0, dtype=torch.float32),
                x.bfloat16() * torch.ops.aten._to_copy(0.1, dtype=torch.bfloat16))
    x = torch.randn(3)
    want = casts(x)
    got = torch.compile(casts, backend="kiln", **WHOLE)(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)
