"""Bad values under backend="kiln" raise what eager torch raises, so a user's except clause
catches the same: an index out of bounds (RuntimeError for gather, scatter, index_add and
embedding_bag; IndexError for indexing and embedding; both for index_select; and the compiled
code neither reads nor writes outside the tensor on the way: indices far past the end), an
integer division by zero, an integer tensor to a negative power, a softmax of integers."""
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
