"""torch.compile(backend="kiln") of functions that return views of their input: sizes, strides,
storage offsets and values as eager PyTorch gives them, with dynamic sizes (where AOTAutograd
rebuilds such an output from the layout of the tensor kiln returns) and static ones, across
calls at other sizes, and with gradients."""
import pytest
import torch
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

VIEWS = {
    "flat slice": lambda x: x.flatten()[2:9],
    "flat step": lambda x: x.flatten()[::3],
    "flat narrow": lambda x: x.flatten().narrow(0, 3, 5),
    "flatten(1) columns": lambda x: x.flatten(1)[:, 2:5],
    "split pieces": lambda x: x.view(-1).split(5),
    "chunk pieces": lambda x: x.view(-1).chunk(3),
    "transposed slice": lambda x: x.t()[1:, ::2],
    "view beside a sum": lambda x: (x.flatten()[4:], (2 * x).sum()),
}


def results(value):
    return value if isinstance(value, tuple) else (value,)


def assert_same_tensors(actual, expected, base):
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want)
        assert got.stride() == want.stride()
        if want._base is not None:  # a view of the input: the same memory, as eager's
            assert got.storage_offset() == want.storage_offset()
            assert got.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


@pytest.mark.parametrize("dynamic", [True, None, False], ids=["dynamic", "automatic", "static"])
@pytest.mark.parametrize("name", VIEWS)
def test_views_of_the_input_are_eager_views(name, dynamic):
    function = VIEWS[name]
    compiled = torch.compile(function, backend="kiln", dynamic=dynamic)
    for rows, columns in ((4, 6), (5, 7), (6, 5)):
        x = torch.arange(rows * columns, dtype=torch.float32).reshape(rows, columns)
        assert_same_tensors(results(compiled(x)), results(function(x)), x)


@pytest.mark.parametrize("name", ["flat slice", "chunk pieces", "view beside a sum"])
def test_views_of_a_view_with_an_offset_and_their_gradients(name):
    function = VIEWS[name]
    compiled = torch.compile(function, backend="kiln", dynamic=True)
    for rows in (4, 6):
        x = torch.randn(rows + 1, 6)[1:]  # an input that is a view itself
        assert_same_tensors(results(compiled(x)), results(function(x)), x)
        leaf, eager_leaf = (x.detach().clone().requires_grad_(True) for _ in range(2))
        sum(result.pow(2).sum() for result in results(compiled(leaf))).backward()
        sum(result.pow(2).sum() for result in results(function(eager_leaf))).backward()
        torch.testing.assert_close(leaf.grad, eager_leaf.grad)
