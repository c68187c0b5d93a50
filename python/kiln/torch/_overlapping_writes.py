"""In-place writes whose operands share memory with the written tensor the way eager torch
refuses: `x[1:].add_(x[:-1])`, `x[1:] = x[:-1]`, `x.t().add_(x)` (an input overlapping the
written tensor partly: "some elements of the input tensor and the written-to tensor refer to a
single memory location") and `x.expand(3, n).add_(1)` (the written tensor overlapping itself).
Functionalisation turns them into pure ops over copies, and kiln computed a value (one eager
torch never gives: it reads as it writes). Such a graph runs in eager PyTorch, which raises.
Scatters and indexed stores refuse the same elements too (ATen's assert_no_overlap:
`x.index_put_((p,), x)`, `x[p] = x`, `x.scatter_add_(0, p, x)`), an indexed store comparing the
tensor its basic index (ints, slices) selects; the fills read their value before they write.

The test is eager's own (ATen's get_overlap_status and has_internal_overlap), on the tensors
Dynamo recorded for the graph's nodes. Where eager's test answers "too hard" (a tensor that is
not dense, x[::2]) it raises nothing, and neither does this."""
import contextlib
import operator

import torch
from torch.multiprocessing.reductions import StorageWeakRef

_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv,
                       operator.ifloordiv, operator.imod, operator.ipow, operator.iand,
                       operator.ior, operator.ixor, operator.ilshift, operator.irshift}


# In-place methods (and torch functions of their names) whose kernels refuse an operand holding
# the written elements themselves (assert_no_overlap); the ops whose out= refuses it too; the
# fills, which take their value without a test (its position).
_NO_OVERLAP = {"index_put_", "index_copy_", "index_add_", "index_reduce_", "index_fill_",
               "scatter_", "scatter_add_", "scatter_reduce_", "put_"}
_NO_OVERLAP_OUT = {"index_select", "take", "gather"} | {name[:-1] for name in _NO_OVERLAP}
_UNTESTED_VALUE = {"fill_": 1, "masked_fill_": 2, "index_fill_": 3}


def overlapping_write(graph_module):
    """The first node of a Dynamo graph whose in-place write eager torch refuses, or None."""
    for node in graph_module.graph.nodes:
        written, operands, same_refused = _write_of(node)
        if written is None or written.numel() == 0:
            continue
        refused = ("partial", "full") if same_refused else ("partial",)
        if _internal_overlap(written) or any(_overlap(written, operand) in refused
                                             for operand in operands):
            return node
    return None


def _value(argument):
    """The tensor Dynamo recorded for an FX node, where its sizes and strides are numbers
    (reading symbolic ones would add guards to the graph)."""
    value = argument.meta.get("example_value") if isinstance(argument, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided or _wrapped(value):
        return None
    return value if all(type(number) is int for number in
                        (*value.shape, *value.stride(), value.storage_offset())) else None


def _wrapped(tensor):
    """A functorch wrapper (vmap's batched tensor, flex_attention's mask building under vmap; a
    grad transform's): its sizes are one sample's and it has no storage to compare (reading it
    raised NotImplementedError, failing the whole compilation). Eager's test runs on the tensor
    it wraps, which the graph does not record: "too hard", nothing raised, as for x[::2]."""
    functorch = torch._C._functorch
    return functorch.is_batchedtensor(tensor) or functorch.is_functorch_wrapped_tensor(tensor)


def _write_of(node):
    """(the tensor a node writes in place, the tensors it reads, whether reading the written
    elements themselves is refused too), or (None, (), False)."""
    args, kwargs = node.args, node.kwargs
    if node.op == "call_method" and node.target in _UNTESTED_VALUE:
        position = _UNTESTED_VALUE[node.target]
        args = args[:position] + args[position + 1:]
        kwargs = {name: value for name, value in kwargs.items() if name != "value"}
    operands = [value for value in map(_value, torch.utils._pytree.tree_leaves((args[1:], kwargs)))
                if value is not None]
    if node.op == "call_method" and node.target.endswith("_") and not node.target.startswith("_"):
        return _value(node.args[0]), operands, node.target in _NO_OVERLAP
    if node.op != "call_function":
        return None, (), False
    name = getattr(node.target, "__name__", None)
    if node.target in _IN_PLACE_OPERATORS or (name in _NO_OVERLAP and
                                              getattr(torch, name, None) is node.target):
        return _value(node.args[0]), operands, name in _NO_OVERLAP
    if node.target is operator.setitem:  # x[index] = value: value is copied into x[index]
        written, advanced = _indexed(_value(node.args[0]), node.args[1])
        return written, operands, advanced  # an advanced index: index_put_ on x[basic part]
    out = _value(node.kwargs.get("out"))
    if out is None:
        return None, (), False
    same_refused = name in _NO_OVERLAP_OUT  # else out= may be an operand itself (add(x, 1, out=x))
    read = (node.args, {key: value for key, value in node.kwargs.items() if key != "out"})
    return out, [value for value in map(_value, torch.utils._pytree.tree_leaves(read))
                 if value is not None and (same_refused or value is not out)], same_refused


def _indexed(tensor, index):
    """(what x[index] = v writes into: x[index] for a basic index (ints, slices, None, ...),
    else x[its basic part], the tensor index_put_ writes; whether the index was advanced), or
    (None, False) for bounds that are not numbers."""
    parts = index if isinstance(index, tuple) else (index,)
    if tensor is None or not all(
            part is None or part is Ellipsis or isinstance(part, torch.fx.Node)
            or _number_list(part) or type(part) in (int, slice) and all(
                type(bound) in (int, type(None)) for bound in
                ((part.start, part.stop, part.step) if type(part) is slice else ()))
            for part in parts):
        return None, False
    basic = []
    for part in parts:  # an index tensor (or list) keeps the dimensions it indexes
        value = _value(part) if isinstance(part, torch.fx.Node) else part
        if isinstance(part, torch.fx.Node) and not isinstance(value, torch.Tensor):
            return None, False  # a SymInt
        if isinstance(value, torch.Tensor):
            basic.extend([slice(None)] * (value.ndim if value.dtype == torch.bool else 1))
        else:
            basic.append(slice(None) if _number_list(part) else value)
    advanced = any(isinstance(part, torch.fx.Node) or _number_list(part) for part in parts)
    if advanced and all(part == slice(None) for part in basic):
        return tensor, True  # the tensor itself (its own TensorImpl: eager's identity test)
    with getattr(tensor, "fake_mode", None) or contextlib.nullcontext():
        return tensor[tuple(basic)], advanced


def _number_list(part):
    """x[[1, 0]]: a list of numbers, an index tensor to eager torch."""
    return isinstance(part, list) and bool(part) and all(type(n) in (int, bool) for n in part)


def _dense(tensor):
    return torch._prims_common.is_non_overlapping_and_dense_or_false(tensor)


def _internal_overlap(tensor):
    """ATen's has_internal_overlap == YES: a stride 0 along an extent past 1."""
    return not _dense(tensor) and any(step == 0 and extent > 1
                                      for step, extent in zip(tensor.stride(), tensor.shape))


def _overlap(a, b):
    """ATen's get_overlap_status(a, b): "full" (a is b, or dense tensors over the same memory
    with the same strides), "partial" (dense tensors of one storage whose memory intersects
    otherwise), else None (none, or "too hard": a tensor that is not dense)."""
    if a is b:
        return "full"
    if b.numel() == 0 or not (_dense(a) and _dense(b)):
        return None
    if StorageWeakRef(a.untyped_storage()) != StorageWeakRef(b.untyped_storage()):
        return None
    a_begin, b_begin = a.storage_offset() * a.itemsize, b.storage_offset() * b.itemsize
    a_end, b_end = a_begin + a.numel() * a.itemsize, b_begin + b.numel() * b.itemsize
    if (a_begin, a_end) == (b_begin, b_end):
        return "full" if a.stride() == b.stride() else "partial"
    return "partial" if a_begin < b_end and b_begin < a_end else None
