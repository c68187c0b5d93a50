"""Dropout and torch's random draws compiled by kiln (python/kiln/torch/_aten_random.py): a
random key drawn from torch's generator per call, so each step has its own mask, runs repeat
after torch.manual_seed, and the backward applies the forward's mask."""
import math

import pytest
import torch
import torch.nn.functional as F

import kiln
import kiln.torch
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"unsupported_ops": "error"}  # an op left to eager PyTorch raises


def within(fraction, p, n, sigmas=6):
    """Whether a kept fraction of n draws is 1 - p within `sigmas` standard deviations."""
    return abs(fraction - (1 - p)) <= sigmas * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_dropout_keeps_one_minus_p_scaled(dtype):
    p = 0.3
    f = torch.compile(lambda x: F.dropout(x, p, training=True), backend="kiln", options=WHOLE)
    x = torch.rand(128, 256, dtype=torch.float64).add(0.5).to(dtype)
    y = f(x)
    kept = y != 0
    assert y.dtype == dtype and within(kept.double().mean().item(), p, x.numel())
    torch.testing.assert_close(y[kept], (x * (1 / (1 - p)))[kept])


def test_masks_differ_between_calls_and_repeat_after_manual_seed():
    f = torch.compile(lambda x: F.dropout(x, 0.5, training=True) + torch.rand_like(x),
                      backend="kiln", options=WHOLE)
    x = torch.ones(64, 64)
    torch.manual_seed(1)
    first, second = f(x), f(x)
    assert not torch.equal(first, second)
    torch.manual_seed(1)
    assert torch.equal(f(x), first) and torch.equal(f(x), second)


def test_two_dropouts_of_a_graph_draw_different_masks():
    f = torch.compile(lambda x: (F.dropout(x, 0.5, True), F.dropout(x, 0.5, True)),
                      backend="kiln", options=WHOLE)
    a, b = f(torch.ones(64, 64))
    assert not torch.equal(a != 0, b != 0)


@pytest.mark.parametrize("p", [0.1, 0.6])
def test_gradient_applies_the_forwards_mask(p):
    weight = torch.randn(32, 48, requires_grad=True)

    def f(x):
        return F.dropout(x @ weight, p, training=True) * 2

    compiled = torch.compile(f, backend="kiln", options=WHOLE)
    for _ in range(2):  # two steps: each its own mask, each gradient its own step's
        x = torch.randn(16, 32, requires_grad=True)
        y = compiled(x)
        y.sum().backward()
        mask = (y != 0).float()
        assert within(mask.mean().item(), p, mask.numel())
        want = (mask * (2 / (1 - p))) @ weight.detach().t()
        torch.testing.assert_close(x.grad, want)
        weight.grad = None


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_p_zero_and_one_as_eager(p):
    x = torch.randn(8, 9, requires_grad=True)
    y = torch.compile(lambda t: F.dropout(t, p, training=True), backend="kiln")(x)
    torch.testing.assert_close(y, F.dropout(x, p, training=True))
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 1.0 if p == 0 else 0.0))


def test_dropout_in_eval_is_the_identity():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).eval()
    x = torch.randn(4, 8)
    torch.testing.assert_close(torch.compile(model, backend="kiln", options=WHOLE)(x), model(x))


def test_random_draws_have_their_distributions():
    def f(x):
        return (torch.rand_like(x), torch.randn_like(x), torch.randint(3, 9, x.shape),
                torch.bernoulli(x, 0.25), torch.rand(x.shape, dtype=torch.float64),
                torch.randn(x.shape, dtype=torch.float64), torch.randint(4, x.shape))

    compiled = torch.compile(f, backend="kiln", options=WHOLE)
    x = torch.zeros(200, 100)
    uniform, normal, integers, bernoulli, wide, wide_normal, below = compiled(x)
    assert uniform.dtype == torch.float32 and wide.dtype == torch.float64
    for u in (uniform, wide):
        assert 0 <= u.min() and u.max() < 1 and abs(u.mean().item() - 0.5) < 0.01
    for n in (normal, wide_normal):
        assert abs(n.mean().item()) < 0.02 and abs(n.std().item() - 1) < 0.02
    assert not torch.equal(uniform.double(), wide)  # each op its own numbers
    assert integers.dtype == torch.int64 and set(integers.unique().tolist()) == set(range(3, 9))
    assert set(below.unique().tolist()) == set(range(4))
    assert set(bernoulli.unique().tolist()) == {0.0, 1.0}
    assert within(1 - bernoulli.mean().item(), 0.25, x.numel())
    assert not torch.equal(compiled(x)[0], uniform)


def _bert(dropout):
    from transformers import BertConfig, BertForMaskedLM
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=32,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                        attn_implementation="eager")
    return BertForMaskedLM(config).train()


def _losses(model, forward, steps=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    generator = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 64, (4, 16), generator=generator)
    losses = []
    for _ in range(steps):
        loss = forward(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_bert_training_step_is_one_forward_and_one_backward_graph(dropout, capfd):
    graphs = []

    def counting(graph_module, example_inputs):
        graphs.append(graph_module)
        return kiln.torch.backend(graph_module, example_inputs, options=WHOLE)

    model = _bert(dropout)
    compiled = torch.compile(model, backend=counting)
    kiln.set_logs("graph_breaks")
    try:
        got = _losses(model, compiled)
    finally:
        kiln.set_logs("")
    assert len(graphs) == 1  # one Dynamo graph, whole to kiln: one forward, one backward
    assert "eager" not in capfd.readouterr().err
    reference = _bert(dropout)
    want = _losses(reference, reference)
    if dropout == 0:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    else:  # other masks than eager's: the same statistics
        assert all(math.isfinite(loss) for loss in got) and got[-1] < got[0]
        assert abs(got[0] - want[0]) < 0.1 * want[0]
        # the embeddings' dropout (after their layer norm): its mask and scale, from outside
        embeddings = model.bert.embeddings
        tokens = torch.randint(0, 64, (4, 16))
        dropped = torch.compile(embeddings, backend="kiln", options=WHOLE)(tokens)
        kept = dropped != 0
        assert within(kept.double().mean().item(), dropout, kept.numel())
        whole = embeddings.eval()(tokens) / (1 - dropout)
        torch.testing.assert_close(dropped[kept], whole[kept], rtol=1e-4, atol=1e-5)


def test_a_literal_beside_a_draw_reaches_the_op_left_to_eager_torch():
    # The partition's literal was lowered after the draw, so the random key, which each call
    # passes last, was read as the literal (garbage, or a RecursionError on its strides).
    def draw_and_invert(x, y):
        return (torch.rand_like(x), torch.linalg.inv(torch.tensor([[2.0, 0.0], [0.0, 4.0]])),
                torch.linalg.inv(torch.linalg.inv(y).clone()))
    y = torch.tensor([[2.0, 1.0], [0.0, 4.0]])
    f = torch.compile(draw_and_invert, backend="kiln")
    for _ in range(2):
        noise, inverse, twice = f(torch.ones(3), y)
        assert noise.shape == (3,)
        torch.testing.assert_close(inverse, torch.tensor([[0.5, 0.0], [0.0, 0.25]]))
        torch.testing.assert_close(twice, y)
