"""Transposed convolutions (nn.ConvTranspose1d/2d/3d: UNet decoders, GAN generators) compiled by
kiln: the forward is the input gradient of the convolution it transposes (oneDNN's
backward-data primitive, OpenBLAS in float64), its gradients a convolution and a weight gradient.
Against eager PyTorch, forward and gradients, with nothing left to eager PyTorch."""
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import kiln.torch
from kiln.torch._lowering import CompiledGraph
from kiln.torch._partition import refused_nodes
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


CASES = [
    # input shape, output channels, kernel, keyword arguments
    ((2, 4, 5, 6), 6, 2, dict(stride=2)),  # a UNet's upsampling
    ((2, 4, 5, 6), 6, 3, dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 6), 6, 3, dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                              dilation=(1, 2), groups=2)),
    ((2, 4, 7), 5, 4, dict(stride=3, padding=2, output_padding=1)),
    ((1, 4, 3, 4, 5), 2, 3, dict(stride=2, padding=1)),
    ((2, 3, 4, 4), 3, 1, dict()),
]
TRANSPOSED = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", CASES)
def test_transposed_convolution_and_its_gradients_match_eager(case, dtype):
    shape, out_channels, kernel, arguments = case
    torch.manual_seed(0)
    groups = arguments.get("groups", 1)
    leaves = [torch.randn(*shape, dtype=dtype),
              torch.randn(shape[1], out_channels // groups, *[kernel] * (len(shape) - 2),
                          dtype=dtype),
              torch.randn(out_channels, dtype=dtype)]

    def f(x, w, b):
        return TRANSPOSED[len(shape)](x, w, b, **arguments)

    eager = [leaf.clone().requires_grad_() for leaf in leaves]
    want = f(*eager)
    grad_out = torch.randn_like(want)
    want.backward(grad_out)
    mine = [leaf.clone().requires_grad_() for leaf in leaves]
    got = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})(*mine)
    got.backward(grad_out)
    tolerance = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}
    torch.testing.assert_close(got, want, **tolerance)
    for g, e in zip(mine, eager):
        torch.testing.assert_close(g.grad, e.grad, **tolerance)


def test_output_padding_beyond_the_stride_stays_eager_and_matches():
    # torch allows output_padding < dilation alone: no convolution gradient has that result
    x, w = torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3)

    def f(x, w):
        return F.conv_transpose2d(x, w, stride=1, dilation=2, output_padding=1)

    graph = make_fx(f, tracing_mode="fake", decomposition_table=kiln.torch.decompositions())(x, w)
    assert any("output_padding" in reason for reason in refused_nodes(graph).values())
    torch.testing.assert_close(torch.compile(f, backend="kiln")(x, w), f(x, w))


def test_a_unet_decoder_trains_as_eager_does():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.ConvTranspose2d(8, 4, 2, stride=2), torch.nn.GroupNorm(2, 4),
                                torch.nn.SiLU(), torch.nn.ConvTranspose2d(4, 3, 3, padding=1))
    compiled = torch.compile(model, backend="kiln", options={"unsupported_ops": "error"})
    x = torch.randn(2, 8, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    model.zero_grad()
    model(x).square().mean().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled(x).square().mean().backward()
    for p, expected in zip(model.parameters(), want):
        torch.testing.assert_close(p.grad, expected, rtol=1e-4, atol=1e-5)


def test_the_entry_matches_aten_on_a_direct_graph():
    x, w, b = torch.randn(2, 4, 5, 5), torch.randn(4, 3, 3, 3), torch.randn(3)
    graph = make_fx(lambda x, w, b: aten.convolution(x, w, b, [2, 2], [1, 1], [1, 1], True,
                                                     [1, 1], 1), tracing_mode="fake")(x, w, b)
    assert not refused_nodes(graph)
    (got,) = CompiledGraph(graph, [x, w, b], {})([x, w, b])
    torch.testing.assert_close(got, aten.convolution(x, w, b, [2, 2], [1, 1], [1, 1], True,
                                                     [1, 1], 1), rtol=1e-4, atol=1e-5)
