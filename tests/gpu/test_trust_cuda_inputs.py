"""CUDA tensors whose memory is not their value (torch's conjugate and negative bits: z.conj(),
z.conj().imag), on the GPU (tests/python/test_trust_torch_inputs.py has the CPU's):
backend="kiln" reads them resolved; kiln.wrap_numpy, which reads device memory as the CUDA
Array Interface exports it (bits ignored), refuses them, also on its fast path of a signature
called before."""
import pytest
import torch

import kiln

if not torch.cuda.is_available() or kiln._kiln.cuda_unavailable_reason():
    raise RuntimeError("tests/gpu needs a CUDA GPU and torch's CUDA build (scripts/gpu-check)")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def affine(x):
    return x * 2 + 1


def test_the_backend_reads_lazy_cuda_views_resolved():
    z = torch.randn(6, dtype=torch.complex64, device="cuda")
    compiled = torch.compile(affine, backend="kiln")
    for lazy in (z.conj().imag, torch._neg_view(z.real.contiguous())):
        torch.testing.assert_close(compiled(lazy), affine(lazy.resolve_conj().resolve_neg()))


def test_wrap_numpy_refuses_lazy_cuda_views_after_a_plain_call():
    z = torch.randn(6, dtype=torch.complex64, device="cuda")
    wrapped = kiln.wrap_numpy(affine)
    plain = z.imag.clone()
    torch.testing.assert_close(wrapped(plain), affine(plain))
    negated = torch._neg_view(plain)  # the layout of the call before: its fast path
    with pytest.raises(RuntimeError, match="negative bit set"):
        wrapped(negated)
    with pytest.raises(RuntimeError, match="conjugate bit set"):
        wrapped(z.conj())
