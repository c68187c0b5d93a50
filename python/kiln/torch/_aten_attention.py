"""Scaled dot-product attention: PyTorch's CPU attention op and its backward, written with
kiln's batched matmul, row reductions and pointwise ops that kiln's scheduler fuses; where the
graph reads only the op's output (inference), kiln's attention kernel, whose scores never
leave the cache (src/extern/attention.h).

kiln lowers the op itself instead of taking PyTorch's decomposition: that decomposition returns
the attention weights where the op returns the log-sum-exp, so a joint graph that keeps the
op's own backward (AOTAutograd does) would feed that backward the wrong tensor.
"""
import math
import operator

import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, out_dtype, out_shape

aten = torch.ops.aten

_LAST_TWO_SWAPPED = [0, 1, 3, 2]


# Where each attention op has its key and value.
_KEY_AND_VALUE = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: (1, 2),
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: (2, 3),
    aten._scaled_dot_product_efficient_attention.default: (1, 2),
    aten._scaled_dot_product_efficient_attention_backward.default: (2, 3),
}


def equal_lengths(node):
    """The sizes an attention node needs equal, the key's and the value's length, which torch's
    kernels check but its shape functions do not guard: each KV cache tensor of a decoder
    gets its own symbol (_size_symbols.SizeSymbols.assume_equal)."""
    places = _KEY_AND_VALUE.get(node.target) if node.op == "call_function" else None
    if places is None:
        return []
    key, value = (node.args[k].meta.get("val") for k in places)
    return [(key.shape[-2], value.shape[-2])]


def _key_groups(query, key, dropout_p):
    """How many query heads share each key head (grouped-query attention: query head h reads
    key head h // groups, as torch's attention ops do when the head counts differ)."""
    if dropout_p != 0:
        raise Unconvertible("attention with dropout")
    if query.ndim != 4 or key.ndim != 4:
        raise Unconvertible("attention other than (batch, heads, length, features)")
    heads, key_heads = query.shape[1], key.shape[1]
    if heads == key_heads:  # a dynamic head count too (one size symbol for both)
        return 1
    if not isinstance(heads, int) or not isinstance(key_heads, int) or heads % key_heads:
        raise Unconvertible(f"attention with {heads} query heads over {key_heads} key heads")
    return heads // key_heads


def _by_key_head(tensor, groups):
    """(batch, heads, length, n) as (batch, key heads, groups * length, n): one product per
    key head takes all its query heads' rows, and K and V are read once, not repeated."""
    if groups == 1:
        return tensor
    return _kiln.reshape(tensor, [tensor.shape[0], tensor.shape[1] // groups, -1,
                                  tensor.shape[3]])


def _by_query_head(tensor, groups):
    """The inverse of _by_key_head."""
    if groups == 1:
        return tensor
    return _kiln.reshape(tensor, [tensor.shape[0], tensor.shape[1] * groups, -1,
                                  tensor.shape[3]])


def _scale(context, query, scale, dtype):
    """The scores' scale as a 0-d tensor: torch's default 1 / sqrt(features), of a dynamic
    feature count too (then computed in the graph)."""
    if scale is not None:
        return context.full((), scale, dtype)
    features = query.shape[-1]
    if isinstance(features, int):
        return context.full((), 1 / math.sqrt(features), dtype)
    return _kiln.divide(context.full((), 1, dtype), _kiln.sqrt(context.full((), features, dtype)))


def _scores(context, query, key, groups, is_causal, attn_mask, scale, dtype):
    """(Q Kᵀ · scale as (batch, heads, L, S) with the mask applied (-inf where a position is
    masked out), the scale as a 0-d tensor)."""
    scale = _scale(context, query, scale, dtype)
    products = _kiln.matmul(_by_key_head(query, groups), _kiln.transpose(key, _LAST_TWO_SWAPPED))
    scores = _kiln.multiply(_by_query_head(products, groups), scale)
    masked_out = context.full((), float("-inf"), dtype)
    if is_causal:  # torch's causal mask: tril(ones(L, S)), the diagonal kept
        rows = _kiln.reshape(_kiln.arange(context.anchor(), query.shape[-2], "int64"), [-1, 1])
        columns = _kiln.arange(context.anchor(), key.shape[-2], "int64")
        scores = _kiln.where(_kiln.less_equal(columns, rows), scores, masked_out)
    if attn_mask is not None:
        scores = (_kiln.where(attn_mask, scores, masked_out) if attn_mask.dtype == "bool"
                  else _kiln.add(scores, cast(attn_mask, dtype)))
    return scores, scale


def _masked_rows_zero(context, logsumexp, dtype):
    """The log-sum-exp with 0 for the query rows that see no key (-inf there), as torch's CPU
    kernel returns it: exp(scores - it) is then 0 in such a row, not NaN (-inf - -inf), so the
    row's output and gradients are 0, as eager's ("safe softmax")."""
    no_key = _kiln.equal(logsumexp, context.full((), float("-inf"), dtype))
    return _kiln.where(no_key, context.full((), 0, dtype), logsumexp)


def _attention_rows(context, node, query, key, value, dropout_p, is_causal, attn_mask, scale):
    """(softmax(scores) V, the scores' log-sum-exp per row as (batch, heads, length))."""
    dtype = computing_dtype(out_dtype(node, 0))
    groups = _key_groups(query, key, dropout_p)
    query, key, value = (cast(tensor, dtype) for tensor in (query, key, value))
    scores, _ = _scores(context, query, key, groups, is_causal, attn_mask, scale, dtype)
    # As flash attention does: the weights exp(S - max) once, their product with V, and the
    # division by the row sums on that product (length x features, not length x length). A
    # row that sees no key has sum 0 and output 0, as torch's ("safe softmax").
    zero = context.full((), 0, dtype)
    row_max = _kiln.max(scores, [3], True)
    shift = _kiln.where(_kiln.isfinite(row_max), row_max, zero)
    weights = _kiln.exp(_kiln.subtract(scores, shift))
    total = _kiln.sum(weights, [3], True)
    product = _by_query_head(_kiln.matmul(_by_key_head(weights, groups), value), groups)
    no_key = _kiln.equal(total, zero)
    output = _kiln.divide(product, _kiln.where(no_key, context.full((), 1, dtype), total))
    logsumexp = _kiln.where(no_key, zero, _kiln.add(_kiln.log(total), shift))
    return output, _kiln.reshape(logsumexp, list(query.shape[:3]))


def _reads_output_only(node):
    """Whether the graph reads the attention op's output and nothing else: not the
    log-sum-exp, which a training graph saves for the backward."""
    return all(user.target is operator.getitem and user.args[1] == 0 for user in node.users)


def _attention_kernel(context, node, query, key, value, dropout_p, is_causal, attn_mask, scale):
    """(kiln's attention kernel's output, a log-sum-exp of zeros nothing reads)."""
    dtype = computing_dtype(out_dtype(node, 0))
    _key_groups(query, key, dropout_p)
    query, key, value = (cast(tensor, dtype) for tensor in (query, key, value))
    scaled = _kiln.multiply(query, _scale(context, query, scale, dtype))
    bias = None
    if attn_mask is not None:
        scores = [*query.shape[:3], key.shape[2]]
        mask = attn_mask if attn_mask.dtype == "bool" else cast(attn_mask, dtype)
        bias = _kiln.broadcast_to(mask, scores)
    output = _kiln.attention(scaled, key, value, bias, bool(is_causal))
    return output, _kiln.broadcast_to(context.full((), 0, dtype), list(query.shape[:3]))


@lowers(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _attention(context, node, query, key, value, dropout_p=0.0, is_causal=False, *,
               attn_mask=None, scale=None):
    rows = _attention_kernel if _reads_output_only(node) else _attention_rows
    return rows(context, node, query, key, value, dropout_p, is_causal, attn_mask, scale)


@lowers(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def _attention_backward(context, node, grad_out, query, key, value, out, logsumexp, dropout_p,
                        is_causal, *, attn_mask=None, scale=None, with_scores=False):
    """P = exp(S - logsumexp); dV = Pᵀ dO; dS = P ⊙ (dO Vᵀ - rowsum(dO ⊙ O));
    dQ = dS K · scale; dK = dSᵀ Q · scale (and dS, the bias's gradient, `with_scores`). With
    grouped heads the products run per key head over its query heads' rows, which sums dK and
    dV over each group."""
    dtype = computing_dtype(out_dtype(node, 0))
    groups = _key_groups(query, key, dropout_p)
    grad_out, query, key, value, out = (cast(tensor, dtype)
                                        for tensor in (grad_out, query, key, value, out))
    scores, scale = _scores(context, query, key, groups, is_causal, attn_mask, scale, dtype)
    # (CUDA's kernel, run in eager PyTorch, gives such a row a log-sum-exp of -inf)
    logsumexp = _masked_rows_zero(context, _kiln.reshape(cast(logsumexp, dtype),
                                                         [*logsumexp.shape, 1]), dtype)
    probabilities = _by_key_head(_kiln.exp(_kiln.subtract(scores, logsumexp)), groups)
    grouped_grad_out = _by_key_head(grad_out, groups)
    grad_value = _kiln.matmul(_kiln.transpose(probabilities, _LAST_TWO_SWAPPED), grouped_grad_out)
    grad_probabilities = _kiln.matmul(grouped_grad_out, _kiln.transpose(value, _LAST_TWO_SWAPPED))
    row_terms = _by_key_head(_kiln.sum(_kiln.multiply(grad_out, out), [3], True), groups)
    grad_scores = _kiln.multiply(probabilities, _kiln.subtract(grad_probabilities, row_terms))
    grad_query = _kiln.multiply(_by_query_head(_kiln.matmul(grad_scores, key), groups), scale)
    grad_key = _kiln.multiply(
        _kiln.matmul(_kiln.transpose(grad_scores, _LAST_TWO_SWAPPED), _by_key_head(query, groups)),
        scale)
    if with_scores:
        return grad_query, grad_key, grad_value, _by_query_head(grad_scores, groups)
    return grad_query, grad_key, grad_value


# CUDA's attention op (memory-efficient kernel): what torch's SDPA becomes for CUDA tensors with
# a float32 or masked attention. Its log-sum-exp is padded to a multiple of 32 rows (and empty
# unless asked for); the random-number state is two int64 scalars, unused without dropout.
@lowers(aten._scaled_dot_product_efficient_attention.default)
def _efficient_attention(context, node, query, key, value, attn_bias, compute_log_sumexp,
                         dropout_p=0.0, is_causal=False, *, scale=None):
    output, logsumexp = _attention_rows(context, node, query, key, value, dropout_p, is_causal,
                                        attn_bias, scale)
    padded = out_shape(context, node, 1)
    if padded[-1] == 0:
        logsumexp = context.full(padded, 0, torch.float32)
    else:
        logsumexp = _kiln.pad(cast(logsumexp, torch.float32),
                              [(0, 0), (0, 0), (0, padded[-1] - logsumexp.shape[-1])])
    seed = context.full((), 0, torch.int64)
    return output, logsumexp, seed, context.full((), 0, torch.int64)


@lowers(aten._scaled_dot_product_efficient_attention_backward.default)
def _efficient_attention_backward(context, node, grad_out, query, key, value, attn_bias, out,
                                  logsumexp, philox_seed, philox_offset, dropout_p,
                                  grad_input_mask, is_causal=False, *, scale=None):
    rows = query.shape[-2]
    everything = (0, 2 ** 63 - 1, 1)
    logsumexp = _kiln.slice(logsumexp, [everything, everything, (0, rows, 1)])
    grads = _attention_backward(context, node, grad_out, query, key, value, out, logsumexp,
                                dropout_p, is_causal, attn_mask=attn_bias, scale=scale,
                                with_scores=True)
    grad_query, grad_key, grad_value, grad_scores = grads
    grad_bias = None
    if grad_input_mask[3] and attn_bias is not None:  # summed over the dims the bias broadcast
        shape = out_shape(context, node, 3)
        broadcast = [d for d, extent in enumerate(shape) if extent == 1 and grad_scores.shape[d] != 1]
        grad_bias = cast(_kiln.sum(grad_scores, broadcast, True) if broadcast else grad_scores,
                         out_dtype(node, 3))
    kept = [grad if wanted else None for grad, wanted in
            zip((grad_query, grad_key, grad_value), grad_input_mask[:3])]
    return (*kept, grad_bias)
