"""Whether a node of an ATen graph can be handed to its conversion-table entry, and if not, why
(the reason KILN_LOGS=graph_breaks prints): not in the table, a dtype or layout kiln has no
tensors of, a size that depends on the data, or a dtype eager PyTorch's own kernel refuses
(median of bools: eager raises NotImplementedError, so the node stays eager and raises it; kiln
computing a value there would answer where torch says the op does not exist). The entry itself
may still refuse its arguments (Unconvertible)."""
import operator

import torch

from . import _value_checks
from ._aten_table import TABLE, meta, tensor_dtype_supported
from ._eager_refusals import refuses as eager_refuses


def static_sizes(value):
    """Whether a tensor's sizes are known before its data: numbers, or size symbols of the
    inputs (dynamic=True), not data-dependent ones (nonzero's count)."""
    return all(type(extent) is int or (isinstance(extent, torch.SymInt) and extent.node.has_hint())
               for extent in value.shape)


def _kind(value):
    return f"{value.dtype} {value.layout} tensor on {value.device}"


def unsupported_reason(node):
    """None where the table's entry may convert the node, else why it runs in eager PyTorch."""
    if node.op != "call_function":
        return "not a call of an op"
    if node.target is operator.getitem:
        return None
    if node.target not in TABLE:
        return "not in kiln's conversion table"
    values = meta(node)
    if values is None and node.target in _value_checks.ASSERTIONS:
        values = ()  # a check, with no result
    # None in a tuple: a result not asked for (convolution_backward's output_mask).
    outputs = [value for value in values if value is not None] \
        if isinstance(values, (tuple, list)) else [values]
    for value in outputs:
        if not isinstance(value, torch.Tensor):
            return f"a result that is not a tensor ({type(value).__name__})"
        if not tensor_dtype_supported(value):
            return f"kiln has no {_kind(value)}s (a result)"
        if not static_sizes(value):
            return "a result whose size depends on the data"
    for operand in node.all_input_nodes:
        if not tensor_dtype_supported(meta(operand)):
            return f"kiln has no {_kind(meta(operand))}s (an argument)"
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), meta)
    if eager_refuses(node.target, args, kwargs):
        dtypes = sorted({str(value.dtype) for value in torch.utils._pytree.tree_leaves(
            (args, kwargs)) if isinstance(value, torch.Tensor)})
        return (f"eager PyTorch's kernel refuses {', '.join(dtypes)} arguments (it runs there "
                f"and raises its own error)")
    return None


def node_supported(node):
    return unsupported_reason(node) is None
