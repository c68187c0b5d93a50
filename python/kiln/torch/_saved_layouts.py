"""The layout of the activations a training forward saves for its backward.

kiln computes a CNN channels-last inside (passes/channels_last.cpp): each float32 convolution
and the work that follows it (batch norm, ReLU, residual adds, pooling). A forward graph's
outputs must have eager PyTorch's (channels-first) strides only where the user sees them; the
tensors AOTAutograd saves for the backward (`fw_metadata.tensors_saved_for_backwards_slice`)
may have any strides, as Inductor's may. kiln returns those channels-last: the forward then
writes each once, where a channels-first copy would cost a transposing pass per activation,
and the backward reads them in place. The strides are reported to AOTAutograd
(`TracingContext.output_strides`), which compiles the backward for them.
"""
import operator

import torch

from ._aten_table import meta

aten = torch.ops.aten

# Ops whose results kiln keeps channels-last when an operand is (passes/channels_last.cpp's
# follows_layout, as they decompose): batch norm, pooling and aliases besides the pointwise ops.
_FOLLOW_LAYOUT = {
    aten.alias.default,
    aten.clone.default,
    aten.detach.default,
    aten._native_batch_norm_legit_functional.default,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit_no_training.default,
    aten.max_pool2d_with_indices.default,
    aten.max_pool3d_with_indices.default,
}


def _is_layout_follower(node):
    return node.target in _FOLLOW_LAYOUT or torch.Tag.pointwise in getattr(node.target, "tags", ())


def channels_last_inside(node, memo):
    """Whether kiln computes FX node `node` channels-last: a float32 convolution of rank 3 or
    more, or same-rank work on one (through getitem of a tuple result)."""
    found = memo.get(node)
    if found is not None:
        return found
    memo[node] = False  # a cycle cannot occur in an FX graph; this only stops re-entry
    value = meta(node)
    result = False
    if node.op == "call_function" and isinstance(value, torch.Tensor) and value.dim() >= 3:
        if node.target is aten.convolution.default:
            result = value.dtype == torch.float32
        elif node.target is operator.getitem:
            result = channels_last_inside(node.args[0], memo)
        elif _is_layout_follower(node):
            result = any(isinstance(meta(operand), torch.Tensor) and meta(operand).dim() == value.dim()
                         and channels_last_inside(operand, memo) for operand in node.all_input_nodes)
    elif node.op == "call_function" and isinstance(value, (tuple, list)) and _is_layout_follower(node):
        result = any(channels_last_inside(operand, memo) for operand in node.all_input_nodes)
    memo[node] = result
    return result


def channels_last_order(rank):
    """(N, C, *spatial) -> (N, *spatial, C)."""
    return [0, *range(2, rank), 1]


def channels_first_order(rank):
    """(N, *spatial, C) -> (N, C, *spatial)."""
    return [0, rank - 1, *range(1, rank - 1)]


def saved_outputs():
    """The slice of the forward's outputs AOTAutograd saves for the backward; None outside its
    forward compile."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    try:
        return metadata.tensors_saved_for_backwards_slice
    except (AttributeError, AssertionError):  # no forward metadata
        return None


def report_output_strides(strides):
    """Tells AOTAutograd the strides of the forward's outputs (None: not a tensor), as
    Inductor does: it compiles the backward for the saved ones."""
    context = torch._guards.TracingContext.try_get()
    if context is not None and context.output_strides is not None:
        context.output_strides.extend(strides)
