"""The strides of what torch.compile(backend="kiln") returns: eager's where eager's are a
permuted row-major layout (x.permute(0, 3, 1, 2) * 2 is channels-last in eager). Code after the
graph may depend on them: `.view` of a permutation back, as the backward AOTAutograd traces for
a graph with dynamic sizes does (HF ConvNext trained with dynamic=True failed in its backward's
`view` of a saved activation that kiln returned row-major)."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)


@pytest.mark.parametrize("dynamic", [False, True])
def test_permuted_results_keep_eagers_strides(dynamic):
    def f(x):
        return x.permute(0, 3, 1, 2) * 2, (x * 3).transpose(0, 1), torch.sin(x)

    x = torch.randn(2, 4, 5, 3)
    want = f(x)
    got = torch.compile(f, backend="kiln", dynamic=dynamic)(x)
    for g, w in zip(got, want):
        assert g.stride() == w.stride()
        torch.testing.assert_close(g, w)
    # what eager's layout allows after the graph
    torch.testing.assert_close(got[0].permute(0, 2, 3, 1).view(-1, 3),
                               want[0].permute(0, 2, 3, 1).view(-1, 3))


def test_sizes_of_one_and_broadcasts_keep_their_values():
    def f(x):
        return (x.permute(2, 0, 1) + 1), x.expand(3, 4, 5).permute(1, 0, 2) * 2

    x = torch.randn(1, 4, 5)
    want = f(x)
    got = torch.compile(f, backend="kiln")(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert got[0].stride() == want[0].stride()


class _ChannelsLastNorm(torch.nn.Module):
    """ConvNext's block: a convolution, a layer norm over the channels of a permuted view."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(4, 4, 2, stride=2)  # sizes s // 2: backward per size
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1, groups=4)
        self.norm = torch.nn.LayerNorm(8)
        self.linear = torch.nn.Linear(8, 8)
        self.head = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x):
        x = self.stem(x)
        y = self.conv(x).permute(0, 2, 3, 1)
        # the head's input, saved for its weight's gradient, is channels-last in eager
        return self.head(self.linear(self.norm(y)).permute(0, 3, 1, 2))


def test_dynamic_training_of_a_permuted_activation_matches_eager():
    torch.manual_seed(0)
    model = _ChannelsLastNorm()
    compiled = torch.compile(model, backend="kiln", dynamic=True)
    for side in (8, 12):
        x = torch.randn(2, 4, side, side)
        model.zero_grad()
        model(x).square().mean().backward()
        want = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        compiled(x).square().mean().backward()
        for got, expected in zip((p.grad for p in model.parameters()), want):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
