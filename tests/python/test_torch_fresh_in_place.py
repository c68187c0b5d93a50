"""In-place ops on a graph's own fresh tensors export in one trace (kiln/torch/_fresh_in_place.py):
ReLU(inplace=True) after a convolution no longer sends the graph through AOTAutograd's
functionalising export (two traces); mutations that something else can see still do, and every
result is eager PyTorch's."""
import pytest
import torch

import kiln.torch  # noqa: F401  (the backend)
from kiln.torch import _backend


@pytest.fixture
def functionalising_exports(monkeypatch):
    """The calls of AOTAutograd's functionalising export an inference compile made."""
    calls = []
    real = _backend.aot_export_joint_simple

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(_backend, "aot_export_joint_simple", counted)
    return calls


class ConvReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.relu = torch.nn.ReLU(inplace=True)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.relu(self.conv(x))
        y = torch.nn.functional.hardtanh_(y * 3.0)
        return self.head(y.mean((2, 3)))


def compiled_matches_eager(module, *args):
    """kiln's result and its inputs after the call are eager's."""
    torch._dynamo.reset()
    eager_args = [a.clone() for a in args]
    with torch.no_grad():
        expected = module(*eager_args)
        result = torch.compile(module, backend="kiln")(*args)
    torch.testing.assert_close(result, expected)
    for arg, eager_arg in zip(args, eager_args):
        torch.testing.assert_close(arg, eager_arg)


def test_in_place_activations_of_fresh_tensors_export_in_one_trace(functionalising_exports):
    torch.manual_seed(0)
    compiled_matches_eager(ConvReLU().eval(), torch.randn(2, 3, 16, 16))
    assert functionalising_exports == []


class ResidualInPlace(torch.nn.Module):
    """resnet's block as it traces on CUDA: the residual added in place to the batch norm's
    result, then ReLU(inplace=True) on the sum: two in-place ops in a row on one tensor."""
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(3)

    def forward(self, x):
        out = self.norm(self.conv(x))
        out.add_(x)
        out.relu_()
        return out * 2.0 + out.sum()


def test_a_chain_of_in_place_ops_exports_in_one_trace(functionalising_exports):
    torch.manual_seed(2)
    compiled_matches_eager(ResidualInPlace().eval(), torch.randn(2, 3, 8, 8))
    assert functionalising_exports == []


class ViewAfterTheChain(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0
        y.add_(1.0)
        row = y[0]          # a view of the chain's tensor: mul_ on it changes y
        row.mul_(3.0)
        return y - 1.0


class ViewSeesTheMutation(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0
        row = y[0]          # a view of y: relu_ on it changes y
        row.relu_()
        return y + 1.0


class CastStays(torch.nn.Module):
    def forward(self, x):
        y = (x * 10).to(torch.int64)
        y.mul_(2)           # stays int64 in place
        return y


class InputMutated(torch.nn.Module):
    def forward(self, x):
        x.relu_()           # the caller's tensor: AOTAutograd's path copies it back
        return x * 2.0


@pytest.mark.parametrize("module", [ViewSeesTheMutation(), CastStays(), InputMutated(),
                                    ViewAfterTheChain()],
                         ids=["view", "integer", "input", "view after a chain"])
def test_mutations_others_can_see_keep_their_meaning(module):
    torch.manual_seed(1)
    compiled_matches_eager(module, torch.randn(4, 5))
