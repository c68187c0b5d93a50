"""torch.compile(backend="kiln") on patterns of real models that ran partly in eager PyTorch (an
ATen op missing from the conversion table: KILN_LOGS=graph_breaks named it), each compiled
whole (unsupported_ops="error") and compared with eager, forward and gradients: a write into an
as_strided view (the gradient of Swin's adaptive pooler), histc (a mixture of experts' tokens per
expert), group norm with a dynamic batch (a diffusion UNet's), nn.LSTM traced by Dynamo
(allow_rnn)."""
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import kiln.torch
from kiln.torch._lowering import CompiledGraph
from kiln.torch._partition import refused_nodes
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten
WHOLE = {"options": {"unsupported_ops": "error"}}


def _compiled_whole(function, *tensors):
    """function's ATen graph (kiln's decompositions), checked to convert whole, compiled."""
    graph = make_fx(function, tracing_mode="fake",
                    decomposition_table=kiln.torch.decompositions())(*tensors)
    assert not refused_nodes(graph)
    return CompiledGraph(graph, list(tensors), {})(list(tensors))


def _floats(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


@pytest.mark.parametrize("base, size, stride, offset", [
    (_floats(3, 3), (2, 2), (1, 2), 0),  # a part of the memory, transposed: a scatter
    (_floats(4, 6), (2, 3), (6, 2), 5),
    (_floats(2, 3, 4, 5).to(memory_format=torch.channels_last), (2, 3, 20), (60, 1, 3), 0),
    (_floats(2, 16), (2, 16, 1, 1), (16, 1, 1, 1), 0),  # the whole memory: no scatter
    (_floats(2, 8), (8, 2), (1, 8), 0),  # the whole memory, in another order
])
def test_as_strided_scatter_writes_eagers_elements(base, size, stride, offset):
    src = _floats(*size)

    def write(base, src):
        return aten.as_strided_scatter(base, src, size, stride, offset)
    (got,), want = _compiled_whole(write, base, src), write(base, src)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_adaptive_pooling_over_one_axis_trains_whole():
    # Swin's pooler: AdaptiveAvgPool1d over the tokens of a transposed sequence; its gradient
    # was an as_strided_scatter, run in eager PyTorch between two kiln graphs
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16))
    pool = torch.nn.AdaptiveAvgPool1d(1)

    def pooled(x):
        return torch.flatten(pool(model(x).transpose(1, 2)), 1)
    x = torch.randn(2, 5, 8)
    weights = torch.randn(2, 16)
    results = []
    for f in (pooled, torch.compile(pooled, backend="kiln", **WHOLE)):
        model.zero_grad()
        out = f(x)
        (out * weights).sum().backward()
        results.append([out.detach()] + [p.grad.clone() for p in model.parameters()])
    for eager, compiled in zip(*results):
        torch.testing.assert_close(compiled, eager)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bins, low, high", [(7, -2.5, 2.5), (100, -1, 3.3), (3, 0, 10)])
def test_histc_counts_eagers_bins(dtype, bins, low, high):
    # the edges, the maximum (the last bin's), values outside the range (counted nowhere) and
    # values whose bin the rounding of (x - min) * bins / (max - min) decides
    x = torch.cat([torch.linspace(-3, 11, 1401, dtype=dtype), 3 * _floats(500).to(dtype),
                   torch.tensor([low, high, 1e-9], dtype=dtype)])

    def histogram(x):
        return torch.histc(x, bins, low, high)
    (got,), want = _compiled_whole(histogram, x), histogram(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_mixture_of_experts_routing_compiles_whole():
    # transformers' MoE: the tokens' experts sorted, counted per expert by histc, cumulated
    torch.manual_seed(0)
    router = torch.nn.Linear(16, 8)

    def route(hidden):
        weights, experts = torch.topk(torch.softmax(router(hidden), -1), 2, dim=-1)
        sorted_experts, order = torch.sort(experts.flatten(), stable=True)
        per_expert = torch.histc(sorted_experts.float(), bins=8, min=0, max=7)
        return weights, order, torch.cumsum(per_expert, 0, dtype=torch.int32)
    hidden = torch.randn(12, 16)
    with torch.no_grad():
        got = torch.compile(route, backend="kiln", **WHOLE)(hidden)
        want = route(hidden)
    for compiled, eager in zip(got, want):
        torch.testing.assert_close(compiled, eager)


@pytest.mark.parametrize("training", [False, True])
def test_group_norm_with_a_dynamic_batch_compiles_whole(training):
    # its decomposition views the (N, G, C/G, 1) statistics as (N, C) by as_strided, which with
    # a symbolic batch ran in eager PyTorch (and the graph compiled per batch)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.GroupNorm(4, 16),
                                torch.nn.SiLU())
    compiled = torch.compile(model, backend="kiln", dynamic=True, **WHOLE)
    for batch in (2, 3, 5):
        x = torch.randn(batch, 3, 8, 8)
        results = []
        for f in (model, compiled):
            model.zero_grad()
            with torch.set_grad_enabled(training):
                out = f(x)
                if training:
                    (out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
            results.append([out.detach()] + [p.grad.clone() for p in model.parameters()
                                             if training])
        for eager, got in zip(*results):
            torch.testing.assert_close(got, eager, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("training", [False, True])
def test_lstm_compiles_whole_forward_and_backward(training):
    # PyTorch's LSTM decomposition took oneDNN's layer kernel (aten.mkldnn_rnn_layer): in
    # eager PyTorch for inference, and AOTAutograd failed on it in training (Inductor too)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(6, 8, num_layers=2, batch_first=True)
    x = torch.randn(3, 5, 6)
    weights = torch.randn(3, 5, 8)
    results = []
    with torch._dynamo.config.patch(allow_rnn=True):
        for f in (lstm, torch.compile(lstm, backend="kiln", **WHOLE)):
            lstm.zero_grad()
            with torch.set_grad_enabled(training):
                out, (hidden, cell) = f(x)
                if training:
                    (out * weights).sum().backward()
            results.append([out.detach(), hidden.detach(), cell.detach()]
                           + [p.grad.clone() for p in lstm.parameters() if training])
    assert torch._C._get_mkldnn_enabled()  # as it was: oneDNN is off only while tracing
    for eager, compiled in zip(*results):
        torch.testing.assert_close(compiled, eager)
