"""Inputs a graph mutates are written in place (sched/donated_outputs.h): an optimizer's
parameters and moments, batch norm's running statistics, a cache updated by index. Each case
against eager PyTorch, and whether kiln wrote into the inputs (no result of its own, no copy)."""

import copy

import pytest
import torch

import kiln.torch  # noqa: F401
from kiln.torch import _backend as torch_backend
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


@pytest.fixture
def compiled_graphs(monkeypatch):
    """The kiln graphs (CompiledGraph) the backend compiles."""
    graphs = []
    original = torch_backend.compile_graph_module

    def recording(*args, **kwargs):
        graphs.append(original(*args, **kwargs))
        return graphs[-1]
    monkeypatch.setattr(torch_backend, "compile_graph_module", recording)
    return graphs


def _in_place_outputs(graphs):
    return sum(len(compiled.in_place_outputs) for graph in graphs
               for compiled in getattr(graph, "layouts", {}).values() if compiled is not None)


def _parameters(seed):
    torch.manual_seed(seed)
    # (8, 4, 1, 1): a 1x1 convolution's weight (dimensions of extent 1 were copied back)
    params = [torch.randn(33, 17), torch.randn(257), torch.randn(4, 8, 8), torch.randn(8, 4, 1, 1),
              torch.randn(1, 5, 1)]
    for p in params:
        p.grad = torch.randn_like(p)
    return params


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.Adam(ps, lr=1e-2),
    lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9),
], ids=["adam", "adamw", "sgd-momentum"])
def test_optimizer_steps_write_parameters_and_states_in_place(make, compiled_graphs):
    eager_params, params = _parameters(0), _parameters(0)
    eager, optimizer = make(eager_params), make(params)
    addresses = [p.data_ptr() for p in params]
    step = torch.compile(optimizer.step, backend="kiln")
    for _ in range(4):
        eager.step()
        step()
        for p, q in zip(params, eager_params):
            p.grad.mul_(0.5)
            q.grad.mul_(0.5)
    for p, q in zip(params, eager_params):
        torch.testing.assert_close(p, q)
    for state, eager_state in zip(optimizer.state.values(), eager.state.values()):
        for key in state:
            torch.testing.assert_close(state[key], eager_state[key])
    assert [p.data_ptr() for p in params] == addresses
    # every parameter and moment buffer of the step written where it lives
    moments = sum(torch.is_tensor(value) and value.dim() > 0
                  for state in optimizer.state.values() for value in state.values())
    assert _in_place_outputs(compiled_graphs) >= len(params) + moments


def test_a_write_in_place_bumps_the_version_autograd_checks():
    w = torch.randn(6, requires_grad=True)
    x = torch.randn(6)
    y = (w * x).sum()  # saves x for w's gradient
    double = torch.compile(lambda t: t.mul_(2), backend="kiln")
    version = x._version
    double(x)
    assert x._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_batch_norm_running_statistics_in_training_match_eager(compiled_graphs):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
    eager = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
    eager.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="kiln")
    for step in range(3):
        x = torch.randn(4, 3, 10, 10)
        compiled(x).sum().backward()
        eager(x).sum().backward()
    for (name, value), expected in zip(model.state_dict().items(), eager.state_dict().values()):
        torch.testing.assert_close(value, expected, msg=name)
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)  # sums reassociated
    assert _in_place_outputs(compiled_graphs) == 3  # running mean, variance, batch count


class Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("keys", torch.zeros(16, 8))
        self.register_buffer("total", torch.zeros(8))

    def forward(self, position, key):
        self.keys.index_copy_(0, position, key)
        self.total.add_(key.sum(0))
        return self.keys.sum(0) * 2


def test_a_cache_updated_by_index_matches_eager(compiled_graphs):
    module, eager = Cache(), Cache()
    compiled = torch.compile(module, backend="kiln")
    for step in range(5):
        position, key = torch.tensor([step, 15 - step]), torch.randn(2, 8)
        torch.testing.assert_close(compiled(position, key), eager(position, key))
    torch.testing.assert_close(module.keys, eager.keys)
    torch.testing.assert_close(module.total, eager.total)
    assert _in_place_outputs(compiled_graphs) == 2


def test_an_input_mutated_and_read_after_keeps_its_old_value_for_the_read():
    def function(x, w):
        y = x @ w  # read after x's update is computed
        x.mul_(3)
        return y + x.sum()

    x, w = torch.randn(8, 8), torch.randn(8, 8)
    x_eager = x.clone()
    expected = function(x_eager, w)
    got = torch.compile(function, backend="kiln")(x, w)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x, x_eager)


def test_an_index_out_of_range_raises_before_the_cache_changes():
    module, eager = Cache(), Cache()
    compiled = torch.compile(module, backend="kiln")
    compiled(torch.tensor([1, 2]), torch.randn(2, 8))
    keys, total = module.keys.clone(), module.total.clone()
    with pytest.raises(Exception) as raised:
        compiled(torch.tensor([3, 16]), torch.ones(2, 8))
    with pytest.raises(type(raised.value)):
        eager(torch.tensor([3, 16]), torch.ones(2, 8))
    torch.testing.assert_close(module.keys, keys)
    torch.testing.assert_close(module.total, total)



class _StaticCacheLength(torch.nn.Module):
    """transformers' StaticCache: its length moved to the device it is on (the same tensor,
    which Dynamo returns from the graph to rebind the attribute), then counted up in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("length", torch.tensor(0))

    def forward(self, x):
        self.length = self.length.to(x.device)
        self.length.add_(x.shape[-1])
        return x * 2


def test_an_input_mutated_and_returned_compiles_whole_and_stays_the_input():
    # The graph returns the copy_ into the input: kiln refused it ("not in kiln's conversion
    # table"), so the update ran in eager PyTorch, and whole compilation raised
    module, eager = _StaticCacheLength(), _StaticCacheLength()
    length = module.length
    compiled = torch.compile(module, backend="kiln", options={"unsupported_ops": "error"})
    with torch.no_grad():
        for size in (3, 3, 5):
            torch.testing.assert_close(compiled(torch.ones(size)), eager(torch.ones(size)))
    torch.testing.assert_close(module.length, eager.length)
    assert module.length is length  # copy_ returns its input, as .to on its own device does


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_in_place_updates_happen_once_in_every_mode(mode):
    # max-autotune's first call ran the program once to time it, then again
    def bump(x, y):
        x.add_(1)
        return y * 2
    x = torch.zeros(3)
    torch.compile(bump, backend="kiln", mode=mode)(x, torch.ones(3))
    assert x.tolist() == [1.0, 1.0, 1.0]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4))
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="kiln", mode=mode)
    images = torch.randn(4, 3, 8, 8)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(compiled(images), eager(images))
    assert model[1].num_batches_tracked.item() == 2
    torch.testing.assert_close(model[1].running_var, eager[1].running_var)
    torch.testing.assert_close(model[1].running_mean, eager[1].running_mean)
