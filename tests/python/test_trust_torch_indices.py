"""Indices the torch backend hands kiln's index_put, which counts a negative index from the end
as NumPy's x[i] = v does: torch's index_copy raises IndexError for one (PyTorch's decomposition,
an index_put, wrote the last row instead), while index_fill counts it from the end; and places
of select_scatter / slice_scatter outside the axis, which eager refuses and kiln clamped; an
index_add_ of a 1-d tensor out of range, IndexError in eager (RuntimeError for more dims). Each
must be eager's answer or eager's exception."""
import pytest

import kiln  # noqa: F401 (registers the backend)
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

torch = pytest.importorskip("torch")


def compiled(function):
    return torch.compile(function, backend="kiln", options={"unsupported_ops": "error"})


def outcome(function, *args):
    try:
        return function(*[a.clone() for a in args])
    except Exception as error:  # noqa: BLE001 - compared by the caller
        return error


def copy_rows(x, index):
    return x.index_copy(0, index, torch.arange(5.0 * len(index)).view(-1, 5))


def copy_columns_in_place(x, index):
    x.index_copy_(1, index, torch.ones(4, len(index)))
    return x * 2


def fill_columns(x, index):
    return x.index_fill(-1, index, 2.0)


def fill_rows_in_place(x, index):
    x.index_fill_(0, index, -3.0)
    return x + 1


@pytest.mark.parametrize("function", [copy_rows, copy_columns_in_place, fill_columns,
                                      fill_rows_in_place])
@pytest.mark.parametrize("index", [[0, 2], [3, -1], [-4], [-5], [4], [1, 1]])
def test_index_copy_refuses_negative_indices_and_index_fill_counts_them_from_the_end(
        function, index):
    x, index = torch.randn(4, 5), torch.tensor(index)
    expected, got = outcome(function, x, index), outcome(compiled(function), x, index)
    if isinstance(expected, Exception):
        assert isinstance(got, IndexError) and "out of bounds" in str(got), got
    else:
        torch.testing.assert_close(got, expected)


def test_index_fill_of_a_0_d_index_and_a_tensor_value():
    x = torch.arange(20).view(4, 5)
    for index in (torch.tensor(-2), torch.tensor([1])):
        torch.testing.assert_close(compiled(lambda x, i, v: x.index_fill(1, i, v))(
            x, index, torch.tensor(7)), x.index_fill(1, index, torch.tensor(7)))


@pytest.mark.parametrize("index", [-5, -1, 3, 4])
def test_select_scatter_out_of_range_is_eagers_index_error(index):
    """select_scatter clamped an index past the axis into it (-5 of 4 rows wrote row 0)."""
    x = torch.randn(4, 5)

    def write(x):
        return torch.select_scatter(x, torch.ones(5), 0, index)
    expected, got = outcome(write, x), outcome(torch.compile(write, backend="kiln"), x)
    if isinstance(expected, Exception):
        assert isinstance(got, IndexError) and "out of range" in str(got), got
    else:
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("start, end, step, count", [(-5, -4, 1, 1), (0, 2, 1, 3), (3, 10, 1, 2),
                                                     (1, None, 2, 2), (0, 4, 3, 1)])
def test_slice_scatter_of_a_source_that_does_not_fit_is_eagers_error(start, end, step, count):
    x = torch.randn(4, 5)

    def write(x):
        return torch.slice_scatter(x, torch.ones(count, 5), 0, start, end, step)
    expected, got = outcome(write, x), outcome(torch.compile(write, backend="kiln"), x)
    if isinstance(expected, Exception):
        assert isinstance(got, type(expected)) and str(expected) in str(got), got
    else:
        torch.testing.assert_close(got, expected)


def add_rows_in_place(x, index):
    x.index_add_(0, index, torch.ones((2,) + tuple(x.shape[1:])))
    return x * 2


@pytest.mark.parametrize("shape", [(5,), (5, 3)])
def test_index_add_out_of_range_is_eagers_exception_for_its_shape(shape):
    # Eager's 1-d kernel raises IndexError, its kernel for more dims RuntimeError.
    x, index = torch.zeros(shape), torch.tensor([1, 7])
    expected, got = outcome(add_rows_in_place, x, index), outcome(compiled(add_rows_in_place),
                                                                  x, index)
    assert type(got) is type(expected), (got, expected)
