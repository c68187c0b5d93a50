"""A maximum compared with the values it was taken of (x == x.amax(): amax's gradient, a mask
of the maxima) needs those values bit for bit. A math function (erf, exp) computed again in
another loop could differ in its last bit (libmvec where the loop is vectorised, libm where it
is not): the mask matched nothing and amax's gradient was NaN. In one graph, kiln computes such
values once (sched/materialize.cpp); across a training graph's forward and backward, the
partitioner saves them (kiln.torch._compared_saves)."""
import torch

import kiln.torch  # noqa: F401  (registers the backend)

# erf of these, recomputed in a scalar loop, missed the maximum libmvec's loop found
VALUES = [-1.1500881798821097, -0.3763346196584415, -2.947824469898952, 0.2741358170383585,
          -0.572596658658385, -0.4421333860554725]


def mask_of_maxima(x):
    t = torch.erf(x)
    return (t == t.amax(-1, keepdim=True)).sum()


def amax_of_erf(x):
    return torch.erf(x).amax(-1, keepdim=True)


def test_a_mask_of_the_maxima_finds_them():
    torch._dynamo.reset()
    compiled = torch.compile(mask_of_maxima, backend="kiln")
    for x in [torch.tensor(VALUES, dtype=torch.float64)] + [
            torch.randn(n, generator=torch.Generator().manual_seed(n), dtype=dtype)
            for n in (5, 6, 17, 33) for dtype in (torch.float32, torch.float64)]:
        assert compiled(x) == mask_of_maxima(x)


def test_the_gradient_of_a_maximum_of_erf_is_eagers():
    for dynamic in (None, True):
        torch._dynamo.reset()
        compiled = torch.compile(amax_of_erf, backend="kiln", dynamic=dynamic)
        for x in [torch.tensor(VALUES, dtype=torch.float64)] + [
                torch.randn(n, generator=torch.Generator().manual_seed(n), dtype=torch.float64)
                for n in (7, 19)]:
            eager, kiln_input = x.clone().requires_grad_(), x.clone().requires_grad_()
            amax_of_erf(eager).sum().backward()
            compiled(kiln_input).sum().backward()
            torch.testing.assert_close(kiln_input.grad, eager.grad)
