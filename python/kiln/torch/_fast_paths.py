"""Decompositions of PyTorch's fused inference fast paths: nn.TransformerEncoderLayer takes one
in eval mode without gradients (aten._transformer_encoder_layer_fwd), an op no decomposition
table of PyTorch's covers, so each layer ran in eager PyTorch between kiln's graphs. Here it is
the ATen ops it stands for, with the kernel's own semantics (aten/src/ATen/native/transformers/:
transformer.cpp, attention.cpp): a mask is made boolean (True: masked), and a query whose keys
are all masked is NaN (the CPU kernel's _masked_softmax). (nn.MultiheadAttention's fast path,
aten._native_multi_head_attention, is not taken under Dynamo.)
"""
import math

import torch
import torch.nn.functional as F

aten = torch.ops.aten

# mask_type of the native kernels: an (L, S) attention mask, a (B, S) key padding mask, or one
# of the scores' shape (B, H, L, S)
_ATTENTION_MASK, _PADDING_MASK, _FULL_MASK = 0, 1, 2


def _scores_mask(mask, mask_type):
    """The boolean mask broadcast against the (B, H, L, S) scores, or None for a mask of
    another form (the op then runs as it is)."""
    mask = mask.to(torch.bool)
    if mask_type == _PADDING_MASK and mask.dim() == 2:
        return mask[:, None, None, :]
    if mask_type == _ATTENTION_MASK and mask.dim() == 2:
        return mask[None, None]
    if mask_type in (_FULL_MASK, None) and mask.dim() == 4:
        return mask
    return None


def _self_attention(x, embed_dim, heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
                    mask_type):
    """The projected self-attention of x (B, L, E), or None (see _scores_mask)."""
    batch, length, _ = x.shape
    head = embed_dim // heads
    qkv = F.linear(x, qkv_weight, qkv_bias).view(batch, length, 3, heads, head)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    scores = torch.matmul(q / math.sqrt(head), k.transpose(-2, -1))
    if mask is not None:
        masked = _scores_mask(mask, mask_type)
        if masked is None:
            return None
        scores = scores.masked_fill(masked, float("-inf"))
    probabilities = torch.softmax(scores, -1)
    out = torch.matmul(probabilities, v).transpose(1, 2).reshape(batch, length, embed_dim)
    return F.linear(out, proj_weight, proj_bias)


def transformer_encoder_layer(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                              proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
                              norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2,
                              ffn_bias_2, mask=None, mask_type=None):
    if src.is_nested or src.dim() != 3:
        return NotImplemented

    def norm(x, weight, bias):
        return F.layer_norm(x, (embed_dim,), weight, bias, eps)
    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    attended = _self_attention(x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                               proj_bias, mask, mask_type)
    if attended is None:
        return NotImplemented
    x = attended + src
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
    hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
    x = F.linear(hidden, ffn_weight_2, ffn_bias_2) + residual
    return norm(x, norm_weight_2, norm_bias_2) if not norm_first else x


FAST_PATH_DECOMPOSITIONS = {
    aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer,
}
