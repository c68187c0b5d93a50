"""Core ATen ops kiln has no table entry for, compiled through PyTorch's own decompositions
(kiln.torch._backend._CONVERTIBLE_DECOMPOSITIONS) or kiln's own (kiln.torch._trilinear), and ops
whose entries took more of their arguments: each graph compiles whole (unsupported_ops="error"
raises on an eager fallback) and matches eager PyTorch, forward and gradients."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


CASES = {
    "group_norm": (lambda x, w, b: F.group_norm(x, 3, w, b), [(2, 6, 5, 5), (6,), (6,)]),
    "group_norm_one_group_3d": (lambda x: F.group_norm(x, 1), [(3, 4, 7)]),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [(2, 6, 5, 5), (6,), (6,)]),
    "normalize": (lambda a: F.normalize(a, dim=1), [(8, 5)]),
    "vector_norms": (lambda a: [torch.linalg.vector_norm(a, ord=order, dim=1)
                                for order in (2, 1, 3, float("inf"))], [(8, 5)]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, dim=-1), [(8, 5), (8, 5)]),
    "elu_celu_selu": (lambda a: F.elu(a, 0.7) + F.celu(a, 1.3) + F.selu(a), [(8, 5)]),
    "pad_crops": (lambda x: F.pad(x, (-1, 2, 3, -2), value=1.5), [(2, 3, 8, 8)]),
    "new_empty_strided": (lambda x: x.new_empty_strided((3, 4), (1, 3)).copy_(x) * x, [(3, 4)]),
    # aten._trilinear (kiln.torch._trilinear): nn.Bilinear's form, batched inputs, and one
    # with no sum and no expansion
    "bilinear": (lambda a, b, w, bias: F.bilinear(a, b, w, bias), [(4, 5), (4, 6), (3, 5, 6), (3,)]),
    "bilinear_batched": (lambda a, b, w: F.bilinear(a, b, w), [(2, 4, 5), (2, 4, 6), (3, 5, 6)]),
    "trilinear_pointwise": (lambda a, b, c: torch.ops.aten._trilinear(a, b, c, [], [], [], []),
                            [(2, 3), (2, 3), (2, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_compiles_whole_and_matches_eager(name):
    function, shapes = CASES[name]
    torch.manual_seed(0)
    tensors = [torch.randn(shape) for shape in shapes]
    compiled = torch.compile(function, backend="kiln", options={"unsupported_ops": "error"})
    results = []
    for f in (function, compiled):
        leaves = [tensor.clone().requires_grad_() for tensor in tensors]
        outputs = f(*leaves)
        outputs = outputs if isinstance(outputs, list) else [outputs]
        sum((output * torch.linspace(-1, 2, output.numel()).view(output.shape)).sum()
            for output in outputs).backward()
        results.append([output.detach() for output in outputs] + [leaf.grad for leaf in leaves])
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want)


def test_clip_grad_norm_step_compiles_whole():
    # clip_grad_norm_(foreach=False)'s per-parameter norms are linalg_vector_norm
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    grads = [torch.randn_like(parameter) for parameter in model.parameters()]

    def clip():
        for parameter, grad in zip(model.parameters(), grads):
            parameter.grad = grad.clone()
        return torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=False)
    want = clip(), [parameter.grad.clone() for parameter in model.parameters()]
    got = (torch.compile(clip, backend="kiln", options={"unsupported_ops": "error"})(),
           [parameter.grad.clone() for parameter in model.parameters()])
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype, tolerance", [(torch.bfloat16, 1e-2), (torch.float64, 1e-12)])
def test_bilinear_in_other_dtypes_with_dynamic_sizes_matches_eager(dtype, tolerance):
    # bfloat16 products summed in float32 and rounded once, as eager's matrix products do
    torch.manual_seed(0)
    layer = torch.nn.Bilinear(16, 24, 7).to(dtype)
    a, b = torch.randn(5, 16, dtype=dtype), torch.randn(5, 24, dtype=dtype)
    compiled = torch.compile(layer, backend="kiln", dynamic=True,
                             options={"unsupported_ops": "error"})
    with torch.no_grad():
        torch.testing.assert_close(compiled(a, b), layer(a, b), rtol=tolerance, atol=tolerance)
