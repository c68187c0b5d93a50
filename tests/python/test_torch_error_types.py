"""Bad values under backend="kiln" raise what eager torch raises, so a user's except clause
catches the same: an index out of bounds (RuntimeError for gather, scatter, index_add and
embedding_bag; IndexError for indexing and embedding; both for index_select; and the compiled
code neither reads nor writes outside the tensor on the way: indices far past the end), an
integer division by zero, an integer tensor to a negative power, a softmax of integers, and the
values eager kernels check: binary_cross_entropy's input and target outside [0, 1], bernoulli's
probabilities outside it, quantile's q outside it, one_hot's classes (RuntimeError, raised by
kiln's compiled graph), smooth_l1_loss's negative beta."""
import re

import pytest
import torch
import torch.nn.functional as F

import kiln
import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

X = torch.arange(20.0).reshape(4, 5)
FAR = 10 ** 12


def _gather(x, i):
    return torch.gather(x, 1, i) * 2


def _scatter(x, i):
    return torch.zeros(4, 5).scatter(1, i, x[:1, :2])


def _scatter_add(x, i):
    return torch.zeros(4, 5).scatter_add(1, i, x[:1, :2])


def _index_add(x, i):
    return torch.zeros(4, 5).index_add(0, i[0], torch.ones(2, 5))


def _embedding_bag(x, i):
    return F.embedding_bag(i[0], x, torch.tensor([0]))


def _index_select(x, i):
    return torch.index_select(x, 0, i[0]) + 1


def _index_select_columns(x, i):
    return torch.index_select(x, 1, i[0]) + 1


def _embedding(x, i):
    return F.embedding(i[0], x) + 1


def _indexing(x, i):
    return x[i[0]] + 1


CASES = [(_gather, RuntimeError), (_scatter, RuntimeError), (_scatter_add, RuntimeError),
         (_index_add, RuntimeError), (_embedding_bag, RuntimeError),
         (_index_select, IndexError), (_index_select_columns, RuntimeError),
         (_embedding, IndexError), (_indexing, IndexError)]
# Eager index_select raises IndexError or RuntimeError by the tensor's layout (dim 0: the
# first, dim 1 of a matrix: the second): kiln raises kiln.IndexOutOfRange, both.
EITHER = (_index_select, _index_select_columns)


@pytest.mark.parametrize("function, eager_error", CASES, ids=[f.__name__ for f, _ in CASES])
@pytest.mark.parametrize("bad", [7, -9, FAR], ids=["past", "negative", "far"])
def test_an_index_out_of_bounds_raises_eager_torchs_exception(function, eager_error, bad):
    index = torch.tensor([[0, bad]])
    with pytest.raises(Exception) as eager:
        function(X, index)
    assert type(eager.value) is eager_error  # what this test expects of eager torch holds
    compiled = torch.compile(function, backend="kiln")
    torch.testing.assert_close(compiled(X, torch.tensor([[0, 1]])),
                               function(X, torch.tensor([[0, 1]])))
    with pytest.raises(Exception) as raised:
        compiled(X, index)
    assert isinstance(raised.value, eager_error), repr(raised.value)
    if function in EITHER:
        assert isinstance(raised.value, kiln.IndexOutOfRange), repr(raised.value)
        return
    # RuntimeError and IndexError are unrelated: the other except clause does not catch it.
    other = IndexError if eager_error is RuntimeError else RuntimeError
    assert not isinstance(raised.value, other), repr(raised.value)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool])
def test_an_integer_tensor_to_a_negative_power_raises_as_eager(dtype):
    # kiln's kernel computed 0 (or 1) where eager torch raises
    def power(x):
        return x ** -1 + 0

    x = torch.tensor([2, 1, 3]).to(dtype)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        power(x)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        torch.compile(power, backend="kiln")(x)
    # a tensor exponent with negative elements computes (as eager does), a float one too
    x = torch.tensor([2, 1, 3])
    exponents = torch.tensor([-1, 2, 0])
    torch.testing.assert_close(torch.compile(lambda x, e: x ** e, backend="kiln")(x, exponents),
                               x ** exponents)
    torch.testing.assert_close(torch.compile(lambda x: x ** -1.0, backend="kiln")(x), x ** -1.0)


def test_an_integer_division_by_zero_is_a_runtime_error_not_a_value_error():
    compiled = torch.compile(lambda x, y: x // y, backend="kiln")
    with pytest.raises(RuntimeError) as raised:
        compiled(torch.tensor([4, 5]), torch.tensor([1, 0]))
    assert not isinstance(raised.value, ValueError)


@pytest.mark.parametrize("function", [lambda x: x.softmax(0), lambda x: x.log_softmax(0)],
                         ids=["softmax", "log_softmax"])
def test_a_softmax_of_integers_raises_as_eager(function):
    # eager torch has no integer softmax; kiln's computed 0s
    x = torch.tensor([1, 2, 3])
    with pytest.raises(Exception) as eager:
        function(x)
    with pytest.raises(type(eager.value)):
        torch.compile(function, backend="kiln")(x)


NAN = float("nan")
GOOD = torch.tensor([0.0, 0.25, 1.0, 0.75])
TARGET = torch.tensor([0.0, 1.0, 1.0, 0.5])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("bad, which", [(1.5, "input"), (-0.25, "input"), (NAN, "input"),
                                        (2.0, "target"), (NAN, "target")])
def test_binary_cross_entropy_of_values_outside_0_1_raises_as_eager(reduction, bad, which):
    # kiln's decomposition computed a loss (NaN, or a number for a target past 1)
    def loss(x, t, w):
        return F.binary_cross_entropy(x, t, w, reduction=reduction) * 2

    weight = torch.tensor([1.0, 2.0, 0.5, 1.0])
    compiled = torch.compile(loss, backend="kiln")
    torch.testing.assert_close(compiled(GOOD, TARGET, weight), loss(GOOD, TARGET, weight))
    x, t = GOOD.clone(), TARGET.clone()
    (x if which == "input" else t)[1] = bad
    message = f"all elements of {which} should be between 0 and 1"
    with pytest.raises(RuntimeError, match=message):
        loss(x, t, weight)
    with pytest.raises(RuntimeError, match=f"binary_cross_entropy.*{message}"):
        compiled(x, t, weight)


def test_binary_cross_entropy_checks_its_input_when_training():
    x = GOOD.clone().requires_grad_()
    compiled = torch.compile(lambda x, t: F.binary_cross_entropy(x, t), backend="kiln")
    compiled(x, TARGET).backward()
    expected = GOOD.clone().requires_grad_()
    F.binary_cross_entropy(expected, TARGET).backward()
    torch.testing.assert_close(x.grad, expected.grad)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        compiled(torch.tensor([0.5, 1.5, 0.0, 1.0], requires_grad=True), TARGET)


@pytest.mark.parametrize("bad", [1.5, -0.5, NAN])
def test_bernoulli_of_a_probability_outside_0_1_raises_as_eager(bad):
    # kiln drew as if the probability were clamped to [0, 1] (NaN: never)
    def draw(p):
        return torch.bernoulli(p) + 1

    compiled = torch.compile(draw, backend="kiln")
    certain = torch.tensor([0.0, 1.0, 1.0, 0.0])  # probabilities 0 and 1: no randomness
    torch.testing.assert_close(compiled(certain), draw(certain))
    p = torch.tensor([0.5, bad, 0.25, 1.0])
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        draw(p)
    with pytest.raises(RuntimeError, match="bernoulli.*p_in >= 0 && p_in <= 1"):
        compiled(p)


@pytest.mark.parametrize("p", [1.5, -0.5, NAN])
def test_bernoulli_of_a_number_outside_0_1_raises_as_eager(p):
    def draw(x):
        return torch.bernoulli(x, p) + 1

    x = torch.zeros(4)
    with pytest.raises(RuntimeError, match="expects p to be in") as eager:
        draw(x)
    with pytest.raises(RuntimeError, match=re.escape(str(eager.value))):
        torch.compile(draw, backend="kiln")(x)


@pytest.mark.parametrize("bad, message", [(-1, "must be non-negative"),
                                          (4, "must be smaller than num_classes")])
def test_one_hot_of_a_class_out_of_range_raises_as_eager(bad, message):
    def encode(i):
        return F.one_hot(i, 4) * 2

    compiled = torch.compile(encode, backend="kiln")
    torch.testing.assert_close(compiled(torch.tensor([0, 3])), encode(torch.tensor([0, 3])))
    with pytest.raises(RuntimeError, match=message):
        encode(torch.tensor([0, bad]))
    with pytest.raises(RuntimeError, match=message):
        compiled(torch.tensor([0, bad]))


@pytest.mark.parametrize("function", [lambda x, q: torch.quantile(x, q, dim=0),
                                      lambda x, q: x.nanquantile(q, dim=0) * 2],
                         ids=["quantile", "nanquantile"])
@pytest.mark.parametrize("bad", [-0.5, 1.5, NAN])
def test_quantile_of_a_q_outside_0_1_raises_as_eager(function, bad):
    # the decomposition clamped a q below 0 to 0 (past 1: a gather's index error)
    x = torch.arange(10.0).reshape(5, 2)
    compiled = torch.compile(function, backend="kiln")
    good = torch.tensor([0.0, 0.3, 1.0])
    torch.testing.assert_close(compiled(x, good), function(x, good))
    q = torch.tensor([0.5, bad])
    message = r"quantile\(\) q values must be in the range \[0, 1\]"
    with pytest.raises(RuntimeError, match=message):
        function(x, q)
    with pytest.raises(RuntimeError, match=message):
        compiled(x, q)


def test_smooth_l1_loss_of_a_negative_beta_raises_as_eager():
    # the decomposition computed a loss
    def loss(a, b, beta):
        return F.smooth_l1_loss(a, b, beta=beta)

    a, b = torch.tensor([0.5, -2.0, 3.0]), torch.tensor([0.0, 1.0, 3.25])
    torch.testing.assert_close(torch.compile(loss, backend="kiln")(a, b, 0.5), loss(a, b, 0.5))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        loss(a, b, -1.0)
    with pytest.raises(RuntimeError, match="negative values for beta"):
        torch.compile(loss, backend="kiln")(a, b, -1.0)
