"""The reason a node runs in eager PyTorch (KILN_LOGS=graph_breaks, refused_nodes) names what
kiln lacks: an op not in the table, a dtype kiln has no tensors of, a size that depends on the
data, or a dtype eager PyTorch's own kernel refuses (median and kthvalue of bools), where the
compiled function raises eager's own error rather than answering."""
import operator

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import kiln.torch  # noqa: F401
from kiln.torch._partition import refused_nodes
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

aten = torch.ops.aten
_BOOLS = torch.tensor([[True, False, True, True], [False, False, True, False]])


def _reasons(function, *args):
    graph = make_fx(function, tracing_mode="fake")(*args)
    return {str(node.target): reason for node, reason in refused_nodes(graph).items()
            if node.target is not operator.getitem}


BOOL_REFUSED = {
    "aten.median.dim": lambda b: aten.median.dim(b, 1),
    "aten.median.default": lambda b: aten.median.default(b),
    "aten.nanmedian.dim": lambda b: aten.nanmedian.dim(b, 0, True),
    "aten.kthvalue.default": lambda b: aten.kthvalue.default(b, 2, 1),
}


@pytest.mark.parametrize("op", sorted(BOOL_REFUSED))
def test_a_dtype_eager_refuses_is_named_and_eager_raises(op):
    function = BOOL_REFUSED[op]
    reasons = _reasons(function, _BOOLS)
    assert list(reasons) == [op]
    assert "eager PyTorch's kernel refuses torch.bool" in reasons[op]
    with pytest.raises(NotImplementedError) as eager_error:
        function(_BOOLS)
    with pytest.raises(NotImplementedError) as compiled_error:
        torch.compile(function, backend="kiln")(_BOOLS)
    assert str(compiled_error.value) == str(eager_error.value)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.float32, torch.bfloat16])
def test_median_and_kthvalue_of_dtypes_eager_takes_convert(dtype):
    x = torch.tensor([[3, 1, 2, 7], [0, 6, 5, 4]]).to(dtype)  # (the index of a tie is eager's own)
    function = lambda x: (aten.median.dim(x, 1), aten.kthvalue.default(x, 3, 1))  # noqa: E731
    assert _reasons(function, x) == {}
    compiled = torch.compile(function, backend="kiln", options={"unsupported_ops": "error"})
    for got, expected in zip(torch.utils._pytree.tree_leaves(compiled(x)),
                             torch.utils._pytree.tree_leaves(function(x))):
        torch.testing.assert_close(got, expected)


def test_a_dtype_kiln_lacks_is_named():
    x = torch.randn(3, 4, dtype=torch.complex64)
    reasons = _reasons(lambda x: aten.add.Tensor(x, x), x)
    assert list(reasons) == ["aten.add.Tensor"]
    assert "kiln has no torch.complex64" in reasons["aten.add.Tensor"]


def test_a_size_that_depends_on_the_data_is_named():
    x = torch.tensor([0.0, 1.0, 0.0, 2.0])
    reasons = _reasons(lambda x: aten.nonzero.default(x) + 1, x)
    assert any("depends on the data" in reason for reason in reasons.values()), reasons
