"""Embedding bags (nn.EmbeddingBag, F.embedding_bag: recommendation models' sparse features)
compiled by kiln, sums and means, with per-sample weights, a padding index, empty bags and
include_last_offset, against eager PyTorch, inference and training (the table's and the sample
weights' gradients), with nothing left to eager PyTorch. Max bags compile for inference and
train eagerly (eager's backward reads max indices kiln's forward does not make); bad offsets and
indices raise RuntimeError (as eager torch does) naming the op."""
import pytest
import torch
import torch.nn.functional as F

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
OFFSETS = torch.tensor([0, 2, 2, 5])  # the second bag empty


def _bags(mode, padding_idx, weighted, last):
    offsets = torch.cat([OFFSETS, torch.tensor([len(INDICES)])]) if last else OFFSETS

    def f(weight, sample_weights):
        return F.embedding_bag(INDICES, weight, offsets, mode=mode, padding_idx=padding_idx,
                               per_sample_weights=sample_weights if weighted else None,
                               include_last_offset=last) * 2
    return f


CASES = [(mode, padding_idx, weighted, last) for mode in ("sum", "mean")
         for padding_idx in (None, 4) for weighted in ((False, True) if mode == "sum" else (False,))
         for last in (False, True)]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bags_match_eager_in_inference(case):
    f = _bags(*case)
    weight, sample_weights = torch.randn(10, 3), torch.rand(len(INDICES))
    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    with torch.no_grad():
        torch.testing.assert_close(compiled(weight, sample_weights), f(weight, sample_weights))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_embedding_bags_train_as_eager_does(case):
    f = _bags(*case)
    weight, sample_weights = torch.randn(10, 3), torch.rand(len(INDICES))
    eager = [weight.clone().requires_grad_(), sample_weights.clone().requires_grad_()]
    want = f(*eager)
    grad_out = torch.randn_like(want)
    want.backward(grad_out)
    mine = [weight.clone().requires_grad_(), sample_weights.clone().requires_grad_()]
    got = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})(*mine)
    got.backward(grad_out)
    torch.testing.assert_close(got, want)
    for g, e in zip(mine, eager):
        torch.testing.assert_close(g.grad, e.grad)


@pytest.mark.parametrize("padding_idx", [None, 4])
@pytest.mark.parametrize("last", [False, True])
def test_max_bags_match_eager_in_inference(padding_idx, last):
    # the second bag empty; ties within a bag
    f = _bags("max", padding_idx, False, last)
    weight = torch.randn(10, 3)
    weight[5, 1] = weight[4, 1] = weight[2, 1]
    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    with torch.no_grad():
        torch.testing.assert_close(compiled(weight, None), f(weight, None))


def test_a_max_bag_of_padding_indices_only_is_zeros():
    def f(weight):
        return F.embedding_bag(torch.tensor([4, 4, 1, 2, 4, 7]), weight, torch.tensor([0, 2, 4]),
                               mode="max", padding_idx=4) - 1
    weight = -torch.rand(10, 3) - 1  # every value below a bag's zeros
    compiled = torch.compile(f, backend="kiln", options={"unsupported_ops": "error"})
    with torch.no_grad():
        torch.testing.assert_close(compiled(weight), f(weight))


def test_max_bags_train_eagerly_and_match():
    # eager's backward reads the max indices, which kiln's forward does not make: both eager
    f = _bags("max", None, False, False)
    weight = torch.randn(10, 3)
    eager, mine = weight.clone().requires_grad_(), weight.clone().requires_grad_()
    f(eager, None).sum().backward()
    torch.compile(f, backend="kiln")(mine, None).sum().backward()
    torch.testing.assert_close(mine.grad, eager.grad)


@pytest.mark.parametrize("indices, offsets, message", [
    (INDICES, torch.tensor([1, 3]), "offsets"), (torch.tensor([1, 22]), torch.tensor([0, 1]), "22")])
def test_bad_offsets_and_indices_raise_naming_the_op(indices, offsets, message):
    def f(weight):
        return F.embedding_bag(indices, weight, offsets)

    with pytest.raises(RuntimeError):  # eager torch's exception, which kiln's matches
        f(torch.randn(10, 3))
    with pytest.raises(RuntimeError, match=f"embedding_bag.*{message}"):
        torch.compile(f, backend="kiln")(torch.randn(10, 3))
