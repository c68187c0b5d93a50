"""An index out of bounds under backend="kiln" raises what eager torch raises (RuntimeError for
gather, scatter, index_add and embedding_bag; IndexError for indexing, index_select and
embedding), so a user's except clause catches the same; and the compiled code neither reads
nor writes outside the tensor on the way (indices far past the end)."""
import pytest
import torch
import torch.nn.functional as F

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


def _embedding(x, i):
    return F.embedding(i[0], x) + 1


def _indexing(x, i):
    return x[i[0]] + 1


CASES = [(_gather, RuntimeError), (_scatter, RuntimeError), (_scatter_add, RuntimeError),
         (_index_add, RuntimeError), (_embedding_bag, RuntimeError),
         (_index_select, IndexError), (_embedding, IndexError), (_indexing, IndexError)]


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
    # RuntimeError and IndexError are unrelated: the other except clause does not catch it.
    other = IndexError if eager_error is RuntimeError else RuntimeError
    assert not isinstance(raised.value, other), repr(raised.value)
