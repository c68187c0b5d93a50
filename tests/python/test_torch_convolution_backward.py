"""Training graphs of convolutional networks compiled whole by kiln: the convolution gradients
(_kiln.convolution_backward_input / _weight, oneDNN and OpenBLAS) against
torch.ops.aten.convolution_backward, the conversion-table entries for aten.convolution_backward
(output_mask honoured) and aten.max_pool2d_with_indices_backward (one
scatter-add kernel) against eager PyTorch, and a small CNN's training step under
torch.compile(backend="kiln") with no eager partition left."""
import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import kiln.torch
from kiln import _kiln
from kiln.torch._lowering import CompiledGraph
from kiln.torch._partition import refused_nodes
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten


def compile_trace(build, *arrays):
    """Traces build(*input tensors) directly on the bindings and compiles it."""
    trace = _kiln.Trace()
    inputs = [trace.input(a.dtype.name, list(a.shape)) for a in arrays]
    outputs = build(*inputs)
    strides = [[] if a.flags.c_contiguous else [s // a.itemsize for s in a.strides]
               for a in arrays]
    return _kiln.compile_graph(trace, list(outputs), strides, None)


def random(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


CASES = [
    # input shape, weight shape, strides, padding, dilation, groups
    ((2, 4, 9, 10), (6, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    ((2, 4, 9, 10), (6, 4, 3, 3), [2, 2], [1, 1], [2, 2], 1),
    ((1, 4, 7, 8), (6, 2, 3, 3), [2, 1], [0, 2], [1, 1], 2),
    ((1, 8, 6, 6), (8, 1, 3, 3), [1, 1], [1, 1], [1, 1], 8),
    ((3, 5, 7, 7), (4, 5, 1, 1), [2, 2], [0, 0], [1, 1], 1),
    ((2, 3, 12), (5, 3, 4), [3], [2], [1], 1),
    ((1, 2, 5, 6, 4), (4, 1, 2, 3, 2), [1, 2, 1], [1, 1, 1], [1, 1, 1], 2),
]


def torch_gradients(dy, x, w, strides, padding, dilation, groups):
    grad_input, grad_weight, grad_bias = aten.convolution_backward(
        torch.from_numpy(dy), torch.from_numpy(x), torch.from_numpy(w), [w.shape[0]], strides,
        padding, dilation, False, [0] * len(strides), groups, [True, True, True])
    return grad_input.numpy(), grad_weight.numpy(), grad_bias.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_gradients_match_torch(case, dtype):
    input_shape, weight_shape, strides, padding, dilation, groups = case
    x = random(input_shape, dtype, 1)
    w = random(weight_shape, dtype, 2)
    y = torch.convolution(torch.from_numpy(x), torch.from_numpy(w), None, strides, padding,
                          dilation, False, [0] * len(strides), groups)
    dy = random(tuple(y.shape), dtype, 3)

    def build(dys, xs, ws):
        attributes = (strides, padding, dilation, groups)
        return [_kiln.convolution_backward_input(dys, ws, list(input_shape), *attributes),
                _kiln.convolution_backward_weight(dys, xs, list(weight_shape), *attributes)]

    got = compile_trace(build, dy, x, w).run([dy, x, w])
    want = torch_gradients(dy, x, w, strides, padding, dilation, groups)
    tolerance = 1e-4 if dtype == np.float32 else 1e-11
    for g, e in zip(got, want[:2]):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


def test_channels_last_and_broadcast_operands():
    x = np.ascontiguousarray(random((2, 6, 5, 3), seed=4)).transpose(0, 3, 1, 2)  # NHWC storage
    w = random((4, 3, 3, 3), seed=5)
    dy = np.ascontiguousarray(random((2, 6, 5, 4), seed=6)).transpose(0, 3, 1, 2)
    per_channel = random((1, 4, 1, 1), seed=7)

    def build(dys, xs, ws, channel):
        attributes = ([1, 1], [1, 1], [1, 1], 1)
        spread = _kiln.broadcast_to(channel, [2, 4, 6, 5])  # the gradient of a sum: stride 0
        return [_kiln.convolution_backward_input(dys, ws, [2, 3, 6, 5], *attributes),
                _kiln.convolution_backward_weight(dys, xs, [4, 3, 3, 3], *attributes),
                _kiln.convolution_backward_weight(spread, xs, [4, 3, 3, 3], *attributes)]

    got = compile_trace(build, dy, x, w, per_channel).run([dy, x, w, per_channel])
    want = torch_gradients(dy, x, w, [1, 1], [1, 1], [1, 1], 1)
    spread = np.broadcast_to(per_channel, (2, 4, 6, 5)).copy()
    want_spread = torch_gradients(spread, x, w, [1, 1], [1, 1], [1, 1], 1)
    for g, e in zip(got, [want[0], want[1], want_spread[1]]):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_bad_operands_raise():
    trace = _kiln.Trace()
    dy = trace.input("float32", [1, 2, 3, 3])
    w = trace.input("float32", [2, 3, 3, 3])
    with pytest.raises(ValueError, match="convolution_backward_input.*grad_output"):
        _kiln.convolution_backward_input(dy, w, [1, 3, 6, 6], [1, 1], [0, 0], [1, 1], 1)
    ints = trace.input("int32", [1, 3, 5, 5])
    with pytest.raises(TypeError, match="convolution_backward_weight"):
        _kiln.convolution_backward_weight(dy, ints, [2, 3, 3, 3], [1, 1], [0, 0], [1, 1], 1)


# ---- the conversion-table entries ------------------------------------------------------------

def aten_graph(function, tensors):
    return make_fx(function, tracing_mode="fake",
                   decomposition_table=kiln.torch.decompositions())(*tensors)


def compiled(function, tensors):
    graph = aten_graph(function, tensors)
    assert not refused_nodes(graph)
    return CompiledGraph(graph, tensors, {"mode": "default"})(list(tensors))


@pytest.mark.parametrize("mask", [[True, True, True], [False, True, False], [True, False, True],
                                  [False, False, True]])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_convolution_backward_entry_honours_the_output_mask(mask, dtype):
    torch.manual_seed(0)
    x, w = torch.randn(2, 4, 9, 8, dtype=dtype), torch.randn(6, 2, 3, 3, dtype=dtype)
    dy = torch.randn(2, 6, 5, 10, dtype=dtype)

    def function(dy, x, w):
        return aten.convolution_backward(dy, x, w, [6], [2, 1], [1, 2], [1, 1], False, [0, 0],
                                         2, mask)

    got = compiled(function, [dy, x, w])
    want = function(dy, x, w)
    assert [g is None for g in got] == [not m for m in mask]
    tolerance = {"rtol": 2e-2, "atol": 5e-2} if dtype == torch.bfloat16 else {}
    for g, e, asked in zip(got, want, mask):
        if asked:  # (eager's kernel may compute a gradient not asked for, too)
            assert (g.shape, g.dtype) == (e.shape, e.dtype)
            torch.testing.assert_close(g, e, **tolerance)


def test_transposed_convolution_backward_beyond_the_gradient_form_stays_eager():
    # output_padding below dilation but not below stride: no convolution's input gradient has
    # that result (test_torch_conv_transpose.py has the transposed ones kiln compiles)
    x, w = torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3)
    dy = torch.randn(1, 2, 10, 10)
    graph = aten_graph(lambda dy, x, w: aten.convolution_backward(
        dy, x, w, None, [1, 1], [0, 0], [2, 2], True, [1, 1], 1, [True, True, False]),
        [dy, x, w])
    assert any("output_padding" in reason for reason in refused_nodes(graph).values())


POOLS = [
    # input shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 9, 10), [3, 3], [2, 2], [1, 1], [1, 1], False),  # resnet's: overlapping windows
    ((1, 2, 8, 8), [2, 2], [2, 2], [0, 0], [1, 1], False),   # disjoint windows
    ((2, 2, 11, 9), [3, 2], [1, 2], [1, 0], [2, 1], False),  # dilation, stride != kernel
    ((1, 3, 7, 7), [3, 3], [1, 1], [1, 1], [1, 1], False),   # every input in nine windows
    ((2, 12, 12), [4, 3], [3, 2], [2, 1], [1, 1], False),    # unbatched, stride < kernel
    ((1, 2, 10, 9), [3, 3], [2, 2], [1, 0], [1, 1], True),   # ceil_mode: a partial last window
]


# Each pool with its input channels-first, and the batched ones also channels-last (as a
# training forward saves its activations, _saved_layouts.py).
POOL_LAYOUTS = ([(pool, "channels-first") for pool in POOLS] +
                [(pool, "channels-last") for pool in POOLS if len(pool[0]) == 4])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("pool,layout", POOL_LAYOUTS)
def test_max_pool_backward_matches_torch(pool, layout, ties, dtype):
    shape, kernel, stride, padding, dilation, ceil_mode = pool
    generator = torch.Generator().manual_seed(1)
    # Ties: few distinct values, so windows hold several maxima and torch's indices (the
    # first maximum) decide where the gradient goes.
    x = (torch.randint(0, 3, shape, generator=generator).to(dtype) if ties
         else torch.randn(shape, generator=generator, dtype=dtype))
    if layout == "channels-last":
        x = x.contiguous(memory_format=torch.channels_last)
    _, indices = aten.max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
    dy = torch.randn(indices.shape, generator=generator, dtype=dtype)

    def function(dy, x, indices):
        return aten.max_pool2d_with_indices_backward(dy, x, kernel, stride, padding, dilation,
                                                     ceil_mode, indices)

    (got,) = compiled(function, [dy, x, indices])
    # Exactly: the gradients are added in torch's order (output positions in row-major order).
    torch.testing.assert_close(got, function(dy, x, indices), rtol=0, atol=0)


def test_max_pool_backward_is_one_scatter_kernel():
    x, dy = torch.randn(2, 3, 9, 10), torch.randn(2, 3, 5, 5)
    _, indices = aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])

    def function(dy, x, indices):
        return aten.max_pool2d_with_indices_backward(dy, x, [3, 3], [2, 2], [1, 1], [1, 1],
                                                     False, indices)

    graph = aten_graph(function, [dy, x, indices])
    compiled_graph = CompiledGraph(graph, [dy, x, indices], {"mode": "default"})
    (got,) = compiled_graph([dy, x, indices])
    torch.testing.assert_close(got, function(dy, x, indices))
    # One scatter-add, which computes its flat indices and its values itself, then the copy of
    # its flat buffer into the output's (a consumer in a larger graph reads it in place).
    assert compiled_graph.kernel_count == 2


# ---- a training step ---------------------------------------------------------------------------

class SmallNet(torch.nn.Module):
    """conv-BN-ReLU-maxpool, a residual block of two convolutions, pooling and a linear head:
    resnet's ops at a test's size."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.norm = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.conv1 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.norm(self.stem(x))))
        x = torch.relu(x + self.conv2(torch.relu(self.conv1(x))))
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def test_small_cnn_training_step_compiles_whole_and_matches_eager():
    torch.manual_seed(0)
    model = SmallNet()
    reference = SmallNet()
    reference.load_state_dict(model.state_dict())
    x, target = torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))
    step = torch.compile(model, backend="kiln", options={"unsupported_ops": "error"})
    loss = torch.nn.functional.cross_entropy(step(x), target)
    loss.backward()
    want = torch.nn.functional.cross_entropy(reference(x), target)
    want.backward()
    torch.testing.assert_close(loss, want, rtol=1e-4, atol=1e-5)
    for (name, got), expected in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(got.grad, expected.grad, rtol=1e-3, atol=1e-4, msg=name)
    torch.testing.assert_close(model.norm.running_var, reference.norm.running_var)


def test_saved_activations_stay_channels_last_and_the_backward_compiles_once(monkeypatch):
    """The forward returns what the backward reads (convolution outputs, ReLUs, pooling)
    channels-last, as kiln computes them, with no transposing copy; AOTAutograd is told, so the
    backward is compiled once, for those strides. The user's result keeps eager's strides."""
    compiled_strides = []
    compile_graph = _kiln.compile_graph

    def recording(trace, outputs, strides, options, **kwargs):
        compiled_strides.append(strides)
        return compile_graph(trace, outputs, strides, options, **kwargs)
    monkeypatch.setattr(_kiln, "compile_graph", recording)
    torch.manual_seed(0)
    model = SmallNet()
    x, target = torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))
    step = torch.compile(model, backend="kiln", options={"unsupported_ops": "error"})
    saved = []

    def pack(tensor):
        saved.append(tensor)
        return tensor
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        logits = step(x)
        loss = torch.nn.functional.cross_entropy(logits, target)
    loss.backward()
    assert logits.is_contiguous()
    activations = [t for t in saved if t.dim() == 4 and t.shape[:2] == (4, 8)]  # not x
    assert len(activations) >= 4
    for tensor in activations:
        assert tensor.is_contiguous(memory_format=torch.channels_last), tensor.stride()
    assert len(compiled_strides) == 2  # the forward and, once, the backward
    assert [8 * 8 * 8, 1, 8 * 8, 8] in compiled_strides[1]  # (4, 8, 8, 8) channels-last
