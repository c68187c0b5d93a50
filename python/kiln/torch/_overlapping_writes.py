"""In-place writes whose operands share memory with the written tensor the way eager torch
refuses: `x[1:].add_(x[:-1])`, `x[1:] = x[:-1]`, `x.t().add_(x)` (an input overlapping the
written tensor partly: "some elements of the input tensor and the written-to tensor refer to a
single memory location") and `x.expand(3, n).add_(1)` (the written tensor overlapping itself).
Functionalisation turns them into pure ops over copies, and kiln computed a value (one eager
torch never gives: it reads as it writes). Such a graph runs in eager PyTorch, which raises.

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


def overlapping_write(graph_module):
    """The first node of a Dynamo graph whose in-place write eager torch refuses, or None."""
    for node in graph_module.graph.nodes:
        written, operands = _write_of(node)
        if written is None or written.numel() == 0:
            continue
        if _internal_overlap(written) or any(_partial_overlap(written, operand)
                                             for operand in operands):
            return node
    return None


def _value(argument):
    """The tensor Dynamo recorded for an FX node, where its sizes and strides are numbers
    (reading symbolic ones would add guards to the graph)."""
    value = argument.meta.get("example_value") if isinstance(argument, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        return None
    return value if all(type(number) is int for number in
                        (*value.shape, *value.stride(), value.storage_offset())) else None


def _write_of(node):
    """(the tensor a node writes in place, the tensors it reads), or (None, ())."""
    operands = [_value(argument) for argument in
                torch.utils._pytree.tree_leaves((node.args[1:], node.kwargs))]
    operands = [value for value in operands if value is not None]
    if node.op == "call_method" and node.target.endswith("_") and not node.target.startswith("_"):
        return _value(node.args[0]), operands
    if node.op != "call_function":
        return None, ()
    if node.target in _IN_PLACE_OPERATORS:
        return _value(node.args[0]), operands
    if node.target is operator.setitem:  # x[index] = value: value is copied into x[index]
        return _indexed(_value(node.args[0]), node.args[1]), operands
    out = _value(node.kwargs.get("out"))
    if out is None:
        return None, ()
    return out, [value for value in map(_value, torch.utils._pytree.tree_leaves(
        (node.args, node.kwargs))) if value is not None and value is not out]


def _indexed(tensor, index):
    """tensor[index] for a basic index (ints, slices, None, ...), or None: an advanced index
    writes through index_put, which copies what it reads first."""
    parts = index if isinstance(index, tuple) else (index,)
    if tensor is None or not all(part is None or part is Ellipsis or type(part) in (int, slice)
                                 and all(type(bound) in (int, type(None)) for bound in
                                         ((part.start, part.stop, part.step)
                                          if type(part) is slice else ()))
                                 for part in parts):
        return None
    with getattr(tensor, "fake_mode", None) or contextlib.nullcontext():
        return tensor[index]


def _dense(tensor):
    return torch._prims_common.is_non_overlapping_and_dense_or_false(tensor)


def _internal_overlap(tensor):
    """ATen's has_internal_overlap == YES: a stride 0 along an extent past 1."""
    return not _dense(tensor) and any(step == 0 and extent > 1
                                      for step, extent in zip(tensor.stride(), tensor.shape))


def _partial_overlap(a, b):
    """ATen's get_overlap_status(a, b) == PARTIAL (dense tensors of one storage whose memory
    intersects, other than as the same elements in the same order)."""
    if a is b or b.numel() == 0 or not (_dense(a) and _dense(b)):
        return False
    if StorageWeakRef(a.untyped_storage()) != StorageWeakRef(b.untyped_storage()):
        return False
    a_begin, b_begin = a.storage_offset() * a.itemsize, b.storage_offset() * b.itemsize
    a_end, b_end = a_begin + a.numel() * a.itemsize, b_begin + b.numel() * b.itemsize
    if (a_begin, a_end) == (b_begin, b_end):
        return a.stride() != b.stride()
    return a_begin < b_end and b_begin < a_end
