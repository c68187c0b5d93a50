"""Inference graphs are traced to ATen once. AOTAutograd's aot_export_joint_simple traces a
graph twice (once for its metadata, once functionalised): 0.6 s of BERT-base's first call of
about 2.3. Where functionalising changes nothing (static sizes, no op that mutates, no output
sharing memory with an input or another output, every op one kiln converts), one make_fx trace
gives the same graph (kiln.torch._backend._traced_once); anything else still goes through
AOTAutograd, and mutations and aliases behave as in eager."""
import pytest
import torch

import kiln.torch  # noqa: F401  (registers the backend)
from kiln.torch import _backend


@pytest.fixture
def exports(monkeypatch):
    """The number of aot_export_joint_simple calls so far (a list, grown per call)."""
    calls = []
    real = _backend.aot_export_joint_simple

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(_backend, "aot_export_joint_simple", counted)
    torch._dynamo.reset()
    yield calls
    torch._dynamo.reset()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = x + self.linear(self.norm(x))
        return torch.softmax(h @ h.transpose(-1, -2), dim=-1), h.sum(-1)


def test_a_plain_inference_graph_is_traced_once(exports):
    model, x = Block().eval(), torch.randn(2, 5, 16)
    with torch.no_grad():
        got = torch.compile(model, backend="kiln")(x)
        expected = model(x)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    assert not exports


def returns_a_view_of_its_input(x):
    return x.transpose(0, 1), x * 2


def test_an_output_viewing_an_input_still_aliases_it(exports):
    x = torch.randn(3, 4)
    with torch.no_grad():
        view, doubled = torch.compile(returns_a_view_of_its_input, backend="kiln")(x)
    torch.testing.assert_close(doubled, x * 2)
    x[0, 1] = 100.0
    assert view[1, 0] == 100.0  # a view of x, as eager's


def adds_in_place(x, y):
    x.add_(y)
    return (x * y).sum()


def test_a_mutated_input_is_written_as_in_eager(exports):
    x, y = torch.randn(8), torch.randn(8)
    expected_x = x + y
    expected = ((x + y) * y).sum()
    with torch.no_grad():
        got = torch.compile(adds_in_place, backend="kiln")(x, y)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x, expected_x)


def returns_one_tensor_twice(x):
    y = torch.exp(x)
    return y, y


def test_one_result_returned_twice_is_one_tensor(exports):
    x = torch.randn(6)
    with torch.no_grad():
        a, b = torch.compile(returns_one_tensor_twice, backend="kiln")(x)
    torch.testing.assert_close(a, torch.exp(x))
    assert a.data_ptr() == b.data_ptr()
