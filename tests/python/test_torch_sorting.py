"""Sorting in torch.compile(backend="kiln") (kiln/torch/_aten_sorting.py: kiln's sort kernel),
against eager PyTorch with nothing left to eager: a mixture-of-experts gate's top-k routing, a
ranking and percentile computation, sort's gradient, every dtype and dim of strided and NaN
operands, topk past the 16 the rounds of argmax took, and dynamic sizes. Equal elements keep
their order (eager's stable order; its default sort orders them its own way)."""
import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


def _compiled(function, **kwargs):
    return torch.compile(function, backend="kiln", options={"unsupported_ops": "error"}, **kwargs)


class MoEGate(torch.nn.Module):
    """Top-2 routing of tokens over 8 experts (Mixtral's gate), each expert a Linear layer, and
    the order that groups the routed tokens by expert."""

    def __init__(self, width=16, experts=8, k=2):
        super().__init__()
        self.gate = torch.nn.Linear(width, experts, bias=False)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(experts))
        self.k = k

    def forward(self, x):
        weights, chosen = torch.topk(torch.softmax(self.gate(x), dim=-1), self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        outputs = torch.stack([expert(x) for expert in self.experts], dim=1)  # (tokens, E, w)
        picked = torch.gather(outputs, 1, chosen[..., None].expand(-1, -1, x.shape[-1]))
        # the (token, slot) pairs grouped by expert, as a dispatch to the experts orders them
        dispatch = torch.argsort(chosen.flatten(), stable=True)
        return (picked * weights[..., None]).sum(dim=1), chosen, dispatch


def test_moe_gate_routes_as_eager_in_inference_and_training():
    torch.manual_seed(0)
    model, x = MoEGate(), torch.randn(40, 16)
    compiled = _compiled(model)
    with torch.no_grad():
        for got, want in zip(compiled(x), model(x)):
            torch.testing.assert_close(got, want)
    out, _, _ = model(x)
    out.square().sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    out, _, _ = compiled(x)
    out.square().sum().backward()
    for got, expected in zip((p.grad for p in model.parameters()), want):
        torch.testing.assert_close(got, expected)


def test_ranks_and_percentiles_match_eager():
    def ranks(scores):
        order = torch.argsort(scores, dim=1, descending=True, stable=True)
        rank = torch.argsort(order, dim=1)  # each score's place
        ordered = torch.sort(scores, dim=1).values
        n = scores.shape[1]
        percentile_90 = ordered[:, int(0.9 * (n - 1))]
        median = torch.msort(scores.T)[(n - 1) // 2]
        return rank, percentile_90, median, torch.sort(scores.flatten(), descending=True)[0][:5]
    scores = torch.randn(7, 301)
    for got, want in zip(_compiled(ranks)(scores), ranks(scores)):
        torch.testing.assert_close(got, want)


def test_sort_gradient_matches_eager():
    def f(x):
        values, _ = torch.sort(x * 3, dim=0, descending=True)
        return (values * torch.arange(x.shape[0])[:, None]).sum()
    x = torch.randn(9, 4)
    eager, mine = x.clone().requires_grad_(), x.clone().requires_grad_()
    f(eager).backward()
    _compiled(f)(mine).backward()
    torch.testing.assert_close(mine.grad, eager.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.bool])
def test_every_dtype_dim_and_direction_matches_eagers_stable_sort(dtype):
    generator = torch.Generator().manual_seed(3)
    if dtype.is_floating_point:
        x = torch.randint(-20, 20, (6, 50, 4), generator=generator).to(dtype) / 4
        x[torch.rand(x.shape, generator=generator) < 0.1] = float("nan")
        x[torch.rand(x.shape, generator=generator) < 0.1] = -0.0
    elif dtype == torch.bool:
        x = torch.rand((6, 50, 4), generator=generator) > 0.5
    else:
        x = torch.randint(0 if dtype == torch.uint8 else -9, 9, (6, 50, 4), generator=generator,
                          dtype=dtype)

    def f(x):
        t = x.transpose(0, 1)  # strided: (50, 6, 4)
        return (*torch.sort(t, dim=0), *torch.sort(t, dim=-1, descending=True),
                *torch.sort(x, dim=1, stable=True), torch.argsort(t, dim=1, descending=True))

    def reference(x):
        t = x.transpose(0, 1)
        return (*torch.sort(t, dim=0, stable=True),
                *torch.sort(t, dim=-1, descending=True, stable=True),
                *torch.sort(x, dim=1, stable=True),
                torch.sort(t, dim=1, descending=True, stable=True).indices)
    for got, want in zip(_compiled(f)(x), reference(x)):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_many_and_of_integers(largest):
    def f(x, ints):
        return (*torch.topk(x, 40, dim=1, largest=largest),
                *torch.topk(ints, 25, dim=0, largest=largest, sorted=False))
    x, ints = torch.randn(5, 300), torch.randint(-1000, 1000, (100, 3))
    x[:, ::37] = float("nan")
    got = _compiled(f)(x, ints)
    want = (*torch.topk(x, 40, dim=1, largest=largest),
            *torch.topk(ints, 25, dim=0, largest=largest))
    torch.testing.assert_close(got[0], want[0], equal_nan=True)
    # NaNs tie (eager orders their positions its own way, kiln by position): they pick NaNs
    numbers = ~want[0].isnan()
    torch.testing.assert_close(got[1][numbers], want[1][numbers])
    assert torch.gather(x, 1, got[1])[~numbers].isnan().all()
    assert (got[1].sort(dim=1).values.diff(dim=1) > 0).all()  # each element once
    torch.testing.assert_close(got[2], want[2])  # sorted=False: kiln's order is sorted too
    torch.testing.assert_close(torch.gather(ints, 0, got[3]), got[2])


def test_dynamic_sizes_sort_every_length():
    def f(x):
        flat = (x * 2).flatten()
        values, order = torch.sort(flat)
        return values, order, torch.argsort(x, dim=0)
    compiled = _compiled(f, dynamic=True)
    for rows in (3, 5, 8):
        x = torch.randn(rows, 7)
        for got, want in zip(compiled(x), f(x)):
            torch.testing.assert_close(got, want)
