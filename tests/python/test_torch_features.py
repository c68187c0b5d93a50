"""torch.compile(backend="kiln") on PyTorch features as users combine them, each against eager
PyTorch to float32 tolerance (outputs, gradients, and parameters after optimizer steps):
- training machinery: bfloat16 autocast, activation checkpointing, gradient accumulation with
  clip_grad_norm_ and OneCycleLR, compiled optimizer steps (SGD, Adam, AdamW, foreach too) with
  a tensor learning rate that changes every step (compiled once), frozen layers, tied
  embeddings, weight_norm and spectral_norm, buffers updated in forward, an EMA of the weights
  by _foreach ops;
- autograd: torch.autograd.grad with create_graph (a gradient penalty), custom
  autograd.Function, detach mixes, tensor hooks, retain_graph, torch.func transforms;
- scientific code: heat and wave equations in a Python loop, an N-body step, a seeded Monte
  Carlo integral, torch.linalg, complex numbers and torch.fft, data-dependent sizes (bincount,
  unique: graph breaks by Dynamo, correct);
- modules: nn.MultiheadAttention, nn.Transformer*, LSTM/GRU (packed too), Embedding with
  padding_idx and max_norm, EmbeddingBag, a torch.jit.script'ed submodule.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import kiln.torch  # noqa: F401
from kiln.torch._foreach import FOREACH_DECOMPOSITIONS
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)
from test_torch_models_more import WHOLE, _assert_close


def _grads(model):
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def _weights(out):
    return torch.linspace(-1, 1, out.numel()).view(out.shape)


def _both(function, *args, compile_options=WHOLE, scale=1e-5):
    """function's results compiled against eager's."""
    want = function(*args)
    got = torch.compile(function, backend="kiln", **compile_options)(*args)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _assert_close(g, w, scale)
    return got


def _mlp(inputs=8, outputs=4):
    return nn.Sequential(nn.Linear(inputs, 16), nn.GELU(), nn.Linear(16, outputs))


def _train(make, inputs, steps=3, optimizer=torch.optim.Adam, compile_step=False,
           compile_options=WHOLE):
    """Each step's outputs, then the parameters and buffers after `steps` optimizer steps on
    sum(out * R), eager and compiled."""
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = make()
        opt = optimizer([p for p in model.parameters() if p.requires_grad], lr=0.01)
        run = torch.compile(model, backend="kiln", **compile_options) if compiled else model
        step = torch.compile(opt.step, backend="kiln") if compiled and compile_step else opt.step
        outs = []
        for _ in range(steps):
            opt.zero_grad(set_to_none=False)
            out = run(*inputs)
            (out.float() * _weights(out)).sum().backward()
            step()
            outs.append(out.detach())
        results.append(outs + [p.detach().clone() for p in model.parameters()]
                       + [b.clone() for b in model.buffers()])
    for got, want in zip(results[1], results[0]):
        _assert_close(got, want)


# ---- training machinery ----

def test_bfloat16_autocast_forward_and_backward_match_eager():
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = _mlp()
        run = torch.compile(model, backend="kiln", **WHOLE) if compiled else model
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = run(torch.randn(5, 8, generator=torch.Generator().manual_seed(1)))
        assert out.dtype == torch.bfloat16
        out.float().pow(2).sum().backward()
        results.append([out.float()] + _grads(model))
    for got, want in zip(*results[::-1]):
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


class _Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner, self.head = _mlp(), nn.Linear(4, 4)

    def forward(self, x):
        return self.head(torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=False))


class _Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 4)
        self.body.requires_grad_(False)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.mid = nn.Embedding(20, 8), nn.Linear(8, 8)
        self.head = nn.Linear(8, 20, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(F.relu(self.mid(self.embed(ids))))


class _Normalised(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.utils.parametrizations.weight_norm(nn.Linear(8, 16))
        self.b = nn.utils.parametrizations.spectral_norm(nn.Linear(16, 4))

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


class _Counting(nn.Module):
    """Buffers updated in forward: a step counter the output is scaled by, a running mean."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.register_buffer("mean", torch.zeros(4))

    def forward(self, x):
        self.calls += 1
        y = self.linear(x)
        self.mean.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        return y * self.calls


_X = torch.randn(5, 8, generator=torch.Generator().manual_seed(2))


@pytest.mark.parametrize("make, inputs", [
    (_Checkpointed, [_X]),
    (_Frozen, [_X]),
    (_Tied, [torch.randint(0, 20, (3, 6), generator=torch.Generator().manual_seed(3))]),
    (_Normalised, [_X]),
    # the gradient read the counter after the forward's write into it (n + 1 where n): the
    # partitioner recomputed `calls + 1` in the backward from the mutated input
    (_Counting, [_X]),
], ids=["checkpoint", "frozen", "tied", "weight_and_spectral_norm", "buffer_counter"])
def test_training_steps_match_eager(make, inputs):
    _train(make, inputs)


def test_a_buffer_the_forward_mutates_is_read_before_the_write_by_the_backward():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(3, 2)
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x):
            self.n += 1
            return self.linear(x) * self.n
    model = Scaled()
    compiled = torch.compile(copy.deepcopy(model), backend="kiln", **WHOLE)
    x = torch.ones(4, 3)
    for calls in (1, 2, 3):
        compiled._orig_mod.zero_grad()
        compiled(x).sum().backward()
        torch.testing.assert_close(compiled._orig_mod.linear.bias.grad, torch.full((2,), 4.0 * calls))


def test_gradient_accumulation_clipping_and_a_compiled_sgd_step_match_eager():
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = _mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2)
        schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
        run = torch.compile(model, backend="kiln", **WHOLE) if compiled else model
        step = torch.compile(opt.step, backend="kiln") if compiled else opt.step
        data = torch.Generator().manual_seed(1)
        for _ in range(3):
            opt.zero_grad(set_to_none=False)
            for _ in range(3):  # micro-batches
                x, target = torch.randn(4, 8, generator=data), torch.randn(4, 4, generator=data)
                (F.mse_loss(run(x), target) / 3).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            step()
            schedule.step()
        results.append([p.detach().clone() for p in model.parameters()])
    for got, want in zip(results[1], results[0]):
        _assert_close(got, want)


@pytest.mark.parametrize("optimizer, options", [
    (torch.optim.SGD, {"momentum": 0.9}),
    (torch.optim.SGD, {"momentum": 0.9, "foreach": True}),
    (torch.optim.Adam, {}),
    (torch.optim.AdamW, {}),
])
def test_compiled_optimizer_steps_with_a_tensor_learning_rate_compile_once(optimizer, options):
    # LambdaLR changes the learning rate every step: a tensor (PyTorch's advice) keeps the
    # compiled step (a float is a constant of the graph, recompiled per value by Dynamo, as
    # for Inductor)
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = _mlp()
        opt = optimizer(model.parameters(), lr=torch.tensor(0.01), weight_decay=0.01, **options)
        schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
        step = torch.compile(opt.step, backend="kiln") if compiled else opt.step
        data = torch.Generator().manual_seed(1)
        for number in range(4):
            if number == 2:
                graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
            opt.zero_grad()
            F.mse_loss(model(torch.randn(4, 8, generator=data)),
                       torch.randn(4, 4, generator=data)).backward()
            step()
            schedule.step()
        results.append([p.detach().clone() for p in model.parameters()])
    for got, want in zip(results[1], results[0]):
        _assert_close(got, want)
    # the first step creates the optimizer's state (momentum buffers): no graph after the second
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs


def test_an_ema_of_the_weights_by_foreach_ops_matches_eager(capfd):
    kiln.set_logs("graph_breaks")
    results = []
    for compiled in (False, True):
        torch.manual_seed(0)
        model = _mlp()
        ema = copy.deepcopy(model)

        def lerp(decay):
            with torch.no_grad():
                torch._foreach_lerp_(list(ema.parameters()), list(model.parameters()), 1 - decay)

        def mul_add(decay):
            with torch.no_grad():
                averages = list(ema.parameters())
                torch._foreach_mul_(averages, decay)
                torch._foreach_add_(averages, list(model.parameters()), alpha=1 - decay)
        if compiled:
            lerp, mul_add = (torch.compile(f, backend="kiln", **WHOLE) for f in (lerp, mul_add))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            model(torch.ones(3, 8)).sum().backward()
            opt.step()
            lerp(torch.tensor(0.9))
            mul_add(0.99)
        results.append([p.detach().clone() for p in ema.parameters()])
    kiln.set_logs("")
    for got, want in zip(results[1], results[0]):
        _assert_close(got, want)
    assert "runs in eager" not in capfd.readouterr().err


def _foreach_arguments(op):
    """Arguments for a foreach overload: lists of 3 tensors (or numbers), shared scalars."""
    data = torch.Generator().manual_seed(4)
    arguments = []
    for argument in op._schema.arguments:
        kind = str(argument.type)
        if argument.kwarg_only or (argument.has_default_value() and kind != "number"):
            continue
        if kind == "List[Tensor]":
            arguments.append([torch.rand(2, 3, generator=data) + 0.5 for _ in range(3)])
        elif kind == "List[number]":
            arguments.append([0.5, 1.5, 2.0])
        elif kind == "Tensor":
            arguments.append(torch.tensor([0.3, 0.7, 1.1]) if argument.name == "scalars"
                             else torch.tensor(1.7))
        else:
            arguments.append(1.25)
    if op is torch.ops.aten._foreach_mm.default:
        arguments = [[torch.rand(2, 3, generator=data)] * 2, [torch.rand(3, 4, generator=data)] * 2]
    return arguments


@pytest.mark.parametrize("op", sorted(FOREACH_DECOMPOSITIONS, key=str), ids=str)
def test_foreach_decompositions_match_the_ops(op):
    arguments = _foreach_arguments(op)
    keywords = {"alpha": 0.5} if any(a.name == "alpha" for a in op._schema.arguments) else {}
    want = op(*arguments, **keywords)
    got = FOREACH_DECOMPOSITIONS[op](*arguments, **keywords)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, equal_nan=True)


# ---- modules ----

class _Embeddings(nn.Module):
    def __init__(self, norm_type=2.0):
        super().__init__()
        self.padded = nn.Embedding(20, 8, padding_idx=0)
        self.bounded = nn.Embedding(20, 8, max_norm=1.0, norm_type=norm_type)
        self.mean_bag = nn.EmbeddingBag(20, 8, mode="mean")
        self.sum_bag = nn.EmbeddingBag(20, 8, mode="sum", padding_idx=1)

    def forward(self, ids, flat, offsets):
        return (self.padded(ids).sum(1) + self.bounded(ids).sum(1) + self.mean_bag(ids)
                + self.sum_bag(flat, offsets)[:2])


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embeddings_with_padding_max_norm_and_bags_train_whole(norm_type):
    # max_norm renormalises the looked-up rows in place (aten.embedding_renorm_): it ran in
    # eager PyTorch before each lookup
    inputs = [torch.tensor([[0, 3, 5], [3, 0, 9]]), torch.tensor([1, 4, 6, 1, 8, 2]),
              torch.tensor([0, 2, 5])]
    _train(lambda: _Embeddings(norm_type), inputs, optimizer=torch.optim.SGD)
