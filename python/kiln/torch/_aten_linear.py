"""Conversion-table entries: ATen's products (mm, bmm, addmm, baddbmm: the library matmul) and
normalisations (layer norm, batch norm in inference and training) (see _aten_table.py).
"""
import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, meta, out_dtype

aten = torch.ops.aten


# ---- linear algebra ----------------------------------------------------------------------

def _computing_float(dtype, what):
    """computing_dtype(dtype) for a library op, which only has floating-point kernels."""
    computing = computing_dtype(dtype)
    if computing not in (torch.float32, torch.float64):
        raise Unconvertible(f"{what} of {dtype} (kiln's library path is floating point)")
    return computing


_INTEGER_PRODUCTS = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


def _matmul_dtype(dtype):
    """Integer products in their own dtype (kiln's integer matmul is a generated reduction that
    wraps as torch's CPU kernel does); floats as library calls."""
    return dtype if dtype in _INTEGER_PRODUCTS else _computing_float(dtype, "matmul")


@lowers(aten.mm.default, aten.bmm.default)
def _matmul(context, node, a, b):
    dtype = _matmul_dtype(out_dtype(node))
    return _kiln.matmul(cast(a, dtype), cast(b, dtype))


@lowers(aten.addmm.default, aten.baddbmm.default)
def _addmm(context, node, bias, a, b, *, beta=1, alpha=1):
    dtype = _matmul_dtype(out_dtype(node))
    product = _matmul(context, node, a, b)
    if alpha != 1:
        product = _kiln.multiply(product, context.full((), alpha, dtype))
    if beta == 0:
        return product
    bias = cast(bias, dtype)
    if beta != 1:
        bias = _kiln.multiply(bias, context.full((), beta, dtype))
    return _kiln.add(product, bias)


# ---- neural-network ops ------------------------------------------------------------------

@lowers(aten.native_layer_norm.default)
def _layer_norm(context, node, x, normalized_shape, weight, bias, eps):
    dtype = out_dtype(node, 0)
    computing = computing_dtype(dtype)
    x = cast(x, computing)
    reduced = list(range(x.ndim - len(normalized_shape), x.ndim))
    mean = _kiln.mean(x, reduced, True)
    variance = _kiln.var(x, reduced, True, 0)
    inverse = _kiln.rsqrt(_kiln.add(variance, context.full((), eps, computing)))
    result = _kiln.multiply(_kiln.subtract(x, mean), inverse)
    if weight is not None:
        result = _kiln.multiply(result, cast(weight, computing))
    if bias is not None:
        result = _kiln.add(result, cast(bias, computing))
    return cast(result, dtype), mean, inverse


def _channel_shape(x):
    return [1, x.shape[1]] + [1] * (x.ndim - 2)


@lowers(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_inference(context, node, x, weight, bias, running_mean, running_var, momentum,
                          eps):
    dtype = out_dtype(node, 0)
    computing = computing_dtype(dtype)
    shape = _channel_shape(x)
    scale = _kiln.rsqrt(_kiln.add(cast(running_var, computing), context.full((), eps, computing)))
    if weight is not None:
        scale = _kiln.multiply(scale, cast(weight, computing))
    shift = _kiln.negative(_kiln.multiply(cast(running_mean, computing), scale))
    if bias is not None:
        shift = _kiln.add(shift, cast(bias, computing))
    result = _kiln.add(_kiln.multiply(cast(x, computing), _kiln.reshape(scale, shape)),
                       _kiln.reshape(shift, shape))
    if meta(node)[1].numel() == 0:  # the CPU kernel saves nothing in inference
        empty = context.full([0], 0, out_dtype(node, 1))
        return cast(result, dtype), empty, empty
    # The CUDA kernel returns per-channel tensors (unused by inference): the running statistics.
    inverse = _kiln.rsqrt(_kiln.add(cast(running_var, computing), context.full((), eps, computing)))
    return (cast(result, dtype), cast(running_mean, out_dtype(node, 1)),
            cast(inverse, out_dtype(node, 2)))


@lowers(aten._native_batch_norm_legit_functional.default, aten._native_batch_norm_legit.default)
def _batch_norm_training(context, node, x, weight, bias, running_mean, running_var, training,
                         momentum, eps):
    if not training:
        raise Unconvertible("batch norm with training=False through the training overload")
    dtype = out_dtype(node, 0)
    computing = computing_dtype(dtype)
    x = cast(x, computing)
    reduced = [0] + list(range(2, x.ndim))
    count = 1
    for dim in reduced:
        count *= x.shape[dim]
    mean = _kiln.mean(x, reduced, False)
    variance = _kiln.var(x, reduced, False, 0)
    inverse = _kiln.rsqrt(_kiln.add(variance, context.full((), eps, computing)))
    shape = _channel_shape(x)
    result = _kiln.multiply(_kiln.subtract(x, _kiln.reshape(mean, shape)),
                            _kiln.reshape(inverse, shape))
    if weight is not None:
        result = _kiln.multiply(result, _kiln.reshape(cast(weight, computing), shape))
    if bias is not None:
        result = _kiln.add(result, _kiln.reshape(cast(bias, computing), shape))
    outputs = [cast(result, dtype), mean, inverse]
    if node.target == aten._native_batch_norm_legit_functional.default:
        keep = context.full((), 1 - momentum, computing)
        step = context.full((), momentum, computing)
        unbiased = _kiln.multiply(variance, context.full((), count / max(count - 1, 1), computing))
        for running, batch in ((running_mean, mean), (running_var, unbiased)):
            updated = _kiln.add(_kiln.multiply(cast(running, computing), keep),
                                _kiln.multiply(batch, step))
            outputs.append(cast(updated, meta(node)[len(outputs)].dtype))
    return tuple(outputs)
