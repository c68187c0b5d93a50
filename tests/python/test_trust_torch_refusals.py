"""What eager torch refuses, backend="kiln" refuses with eager's exception: dtypes its CPU
kernels do not take (argmax of bools, gelu of integers, avg_pool3d of float16: fake tensors
trace them, and kiln computed a value), both for ops kiln's table lowers and for ops PyTorch's
decompositions take apart (hardswish, lerp); in-place writes overlapping what they read (for
scatters and indexed stores, `x[p] = x`, the same elements too) and in-place arithmetic whose
result the written tensor cannot hold (`x.mul_(y)` of integers by floats: kiln wrote the
truncated values); and a loss's target out of range, which eager reports as IndexError where the
decomposition's gather raised RuntimeError."""
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import kiln.torch
from kiln.torch._in_place_casts import uncastable_write
from kiln.torch._overlapping_writes import overlapping_write
from kiln.torch._partition import refused_nodes
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

_B = torch.tensor([[True, False, True], [False, False, True]])
_I = torch.arange(-3, 3).reshape(2, 3)

REFUSED = [
    ("argmax of bools", lambda x: x.argmax() + 1, _B),
    ("argmin of bools", lambda x: torch.argmin(x, 1) + 1, _B),
    ("floor of bools", lambda x: torch.floor(x), _B),
    ("relu of bools", lambda x: F.relu(x), _B),
    ("topk of bools", lambda x: torch.topk(x, 2).values, _B),
    ("remainder of bools", lambda x: x % x, _B),
    ("gelu of integers", lambda x: F.gelu(x) + 1, _I),
    ("silu of integers", lambda x: F.silu(x), _I),
    ("hardswish of integers", lambda x: F.hardswish(x), _I),
    ("lerp of integers", lambda x: torch.lerp(x, x + 1, 2), _I),
    ("mish of integers", lambda x: F.mish(x), _I),
    ("avg_pool3d of float16", lambda x: F.avg_pool3d(x, 2), torch.ones(1, 1, 2, 2, 2).half()),
]


@pytest.mark.parametrize("function, x", [case[1:] for case in REFUSED],
                         ids=[case[0] for case in REFUSED])
def test_a_dtype_eager_refuses_raises_eagers_error(function, x):
    with pytest.raises(Exception) as eager:
        function(x)
    with pytest.raises(type(eager.value)):
        torch.compile(function, backend="kiln")(x)


TAKEN = [(lambda x: x.argmax(1), _I), (lambda x: F.gelu(x), _I.float()),
         (lambda x: F.hardswish(x), _I.double()), (lambda x: torch.floor(x), _I),
         (lambda x: x % 2, _I)]


@pytest.mark.parametrize("function, x", TAKEN)
def test_dtypes_eager_takes_still_convert_whole(function, x):
    graph = make_fx(function, decomposition_table=kiln.torch.decompositions())(x)
    assert not refused_nodes(graph)
    torch.testing.assert_close(torch.compile(function, backend="kiln")(x), function(x))


LOSSES = [lambda x, t: F.nll_loss(x, t), lambda x, t: F.cross_entropy(x, t),
          lambda x, t: F.cross_entropy(x, t, weight=torch.ones(5)),
          lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
          lambda x, t: F.nll_loss(x.reshape(2, 5, 2, 1), t.reshape(2, 2, 1))]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("bad", [5, -3], ids=["past", "negative"])
@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
def test_a_loss_target_out_of_range_is_eagers_index_error(loss, bad, grad):
    x = torch.randn(4, 5, requires_grad=grad)
    target = torch.tensor([0, 1, bad, 2])
    with pytest.raises(IndexError):
        loss(x, target)
    compiled = torch.compile(loss, backend="kiln")
    good = torch.tensor([0, 1, 4, 2])
    torch.testing.assert_close(compiled(x, good), loss(x, good))
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(x, target)
    # ignore_index may lie outside the classes: those targets are skipped, not checked
    torch.testing.assert_close(compiled(x, torch.tensor([0, 1, -100, 2])),
                               loss(x, torch.tensor([0, 1, -100, 2])))


def _shifted_add(x):
    x[1:].add_(x[:-1])
    return x * 2


def _shifted_copy(x):
    x[1:].copy_(x[:-1])
    return x * 2


def _shifted_store(x):
    x[1:] = x[:-1]
    return x * 2


def _augmented_store(x):
    x[:3] += x[2:5]
    return x * 2


def _transposed_add(x):
    x.view(2, 3)[:, :2].t().mul_(3)  # its own elements, in another order: no overlap
    y = x[:4].view(2, 2)
    y.t().add_(y)
    return x * 2


def _out_overlapping(x):
    torch.add(x[:3], 1, out=x[1:4])
    return x * 2


def _expanded_add(x):
    x[:1].expand(3).add_(1)
    return x * 2


def _index_put_of_itself(x):
    x.index_put_((torch.tensor([1, 2, 3, 4, 5, 0]),), x)  # the same elements: refused too
    return x * 2


def _indexed_store_of_itself(x):
    x[torch.tensor([1, 2, 3, 4, 5, 0])] = x
    return x * 2


def _indexed_store_of_a_view(x):
    x.view(2, 3)[0, torch.tensor([1, 0])] = x.view(2, 3)[0, 1:]  # within row 0
    return x * 2


def _indexed_store_by_a_list(x):
    x[[1, 0]] = x[:2]  # a list index is an index tensor to eager
    return x * 2


def _index_copy_of_a_view_of_itself(x):
    x.index_copy_(0, torch.tensor([1, 2, 3, 4, 5, 0]), x.view(6))
    return x * 2


def _scatter_add_of_itself(x):
    x.scatter_add_(0, torch.tensor([1, 2, 3, 4, 5, 0]), x)
    return x * 2


def _index_put_function_of_a_part(x):
    torch.index_put_(x, (torch.tensor([1, 0, 2]),), x[:3])
    return x * 2


def _index_select_into_its_source(x):
    torch.index_select(x[:3], 0, torch.tensor([1, 0, 2]), out=x[:3])
    return x * 2


def _take_into_its_source(x):
    torch.take(x, torch.tensor([1, 0, 2, 3, 5, 4]), out=x)  # the same tensor
    return x * 2


@pytest.mark.parametrize("function", [_shifted_add, _shifted_copy, _shifted_store,
                                      _augmented_store, _transposed_add, _out_overlapping,
                                      _expanded_add, _index_put_of_itself,
                                      _indexed_store_of_itself, _indexed_store_of_a_view,
                                      _indexed_store_by_a_list,
                                      _index_copy_of_a_view_of_itself, _scatter_add_of_itself,
                                      _index_put_function_of_a_part,
                                      _index_select_into_its_source, _take_into_its_source])
def test_an_in_place_write_overlapping_its_operands_raises_as_eager(function):
    with pytest.raises(RuntimeError, match="unsupported operation") as eager:
        function(torch.arange(6.0))
    x = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="unsupported operation") as raised:
        torch.compile(function, backend="kiln")(x)
    assert str(raised.value) == str(eager.value)


def _disjoint_writes(x):
    x[:3].add_(x[3:])  # other elements of one tensor
    x.add_(x)  # the same elements
    x[::2].add_(x[1::2])  # not dense: eager's test is "too hard", it computes
    x[1:] = x[:-1].clone()
    p = torch.tensor([1, 0])
    x.view(2, 3)[0, p] = x.view(2, 3)[1, :2]  # row 1 into row 0
    x.view(2, 3)[1, [1, 0]] = x.view(2, 3)[0, 1:]
    x[:3].index_add_(0, p, x[3:5])
    x.index_fill_(0, p, x[5])  # index_fill_ reads its value before it writes
    return x * 2


def test_in_place_writes_eager_takes_still_compile():
    x = torch.arange(6.0)
    torch.testing.assert_close(torch.compile(_disjoint_writes, backend="kiln")(x.clone()),
                               _disjoint_writes(x.clone()))
    refused = []

    def backend(graph_module, example_inputs):
        refused.append(overlapping_write(graph_module))
        return graph_module.forward
    torch.compile(_disjoint_writes, backend=backend)(x.clone())
    assert refused == [None]


def _times_a_float_tensor(x):
    x.mul_(torch.full((6,), 1.5))
    return x * 2


def _times_a_0_d_float(x):
    x.mul_(torch.tensor(1.5))
    return x * 2


def _addcmul_of_floats(x):
    x.addcmul_(torch.ones(6), torch.full((6,), 1.5))
    return x * 2


def _float_times_complex(x):
    y = x.float()
    y.mul_(torch.full((6,), 1j))
    return y * 2


@pytest.mark.parametrize("function", [_times_a_float_tensor, _times_a_0_d_float,
                                      _addcmul_of_floats, _float_times_complex])
def test_in_place_arithmetic_the_written_dtype_cannot_hold_raises_as_eager(function):
    with pytest.raises(RuntimeError, match="can't be cast") as eager:
        function(torch.arange(6))
    x = torch.arange(6)
    with pytest.raises(RuntimeError, match="can't be cast") as raised:
        torch.compile(function, backend="kiln")(x)
    assert str(raised.value) == str(eager.value)
    torch.testing.assert_close(x, torch.arange(6))


def _casts_eager_takes(x):
    x.mul_(2)
    y = x.int()
    y.add_(torch.arange(6))  # int64 into int32: same kind
    z = x.half()
    z.mul_(torch.full((6,), 1.5))  # float32 into float16
    w = x.float()
    w.mul_(torch.tensor(2, dtype=torch.int64)).add_(1.5)
    return y * 2 + z + w


def test_in_place_arithmetic_eager_takes_still_compiles():
    x = torch.arange(6)
    torch.testing.assert_close(torch.compile(_casts_eager_takes, backend="kiln")(x.clone()),
                               _casts_eager_takes(x.clone()))
    refused = []

    def backend(graph_module, example_inputs):
        refused.append(uncastable_write(graph_module))
        return graph_module.forward
    torch.compile(_casts_eager_takes, backend=backend)(x.clone())
    assert refused == [None]


def _full_past_int8(x):
    return torch.full((2,), 300, dtype=torch.int8) + x


def _fill_past_int8(x):
    return x.clone().fill_(300) + 1


@pytest.mark.parametrize("function", [_full_past_int8, _fill_past_int8])
def test_a_number_the_dtype_cannot_hold_is_eagers_error(function):
    x = torch.ones(2, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="overflow"):
        function(x)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.compile(function, backend="kiln")(x)
