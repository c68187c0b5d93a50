"""Conversion-table entries for the gradient ops of training graphs (see _aten_table.py):
a convolution's gradients (kiln's extern gradient ops, oneDNN / OpenBLAS) and max pooling's
(one scatter-add kernel).
"""
import torch

from .. import _kiln
from ._aten_structure import _computing_float, transposed_convolution_fits
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, meta, out_dtype

aten = torch.ops.aten


@lowers(aten.convolution_backward.default)
def _convolution_backward(context, node, grad_output, x, weight, bias_sizes, stride, padding,
                          dilation, transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each computed only where output_mask asks for it
    (None otherwise, as torch returns)."""
    if not hasattr(_kiln, "convolution_backward_input"):
        raise Unconvertible("this build of kiln has no convolution gradients")
    dtype = _computing_float(meta(node.args[0]).dtype, "convolution_backward")
    gradient = cast(grad_output, dtype)
    attributes = (list(stride), list(padding), list(dilation), int(groups))
    grad_input = grad_weight = grad_bias = None
    if transposed:  # of the convolution it transposes: y = input gradient of (x, weight)
        transposed_convolution_fits(stride, output_padding, "transposed convolution backward")
        if output_mask[0]:  # the convolution of the gradient: back from (N, O, *out)
            grad_input = _kiln.convolution(gradient, cast(weight, dtype), None, *attributes)
        if output_mask[1]:  # x in the role of that convolution's output gradient
            grad_weight = _kiln.convolution_backward_weight(cast(x, dtype), gradient,
                                                            list(weight.shape), *attributes)
        if output_mask[2]:
            grad_bias = _kiln.sum(gradient, [0] + list(range(2, grad_output.ndim)))
        return grad_input, grad_weight, grad_bias
    if output_mask[0]:
        grad_input = _kiln.convolution_backward_input(gradient, cast(weight, dtype),
                                                      list(x.shape), *attributes)
    if output_mask[1]:
        grad_weight = _kiln.convolution_backward_weight(gradient, cast(x, dtype),
                                                        list(weight.shape), *attributes)
    if output_mask[2]:
        grad_bias = _kiln.sum(gradient, [0] + list(range(2, grad_output.ndim)))
    return grad_input, grad_weight, grad_bias


@lowers(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(context, node, grad_output, x, kernel, stride, padding, dilation,
                       ceil_mode, indices):
    """Each output position's gradient added at the input position its index names (h * W + w
    within its plane), in output order as torch's kernel adds them: one scatter-add over the
    flattened input, its index and value operands computed inside the same kernel. (Pulling
    the gradient through one strided view per kernel offset instead is a pointwise kernel,
    but does kernel-size times the input's size in work: 15x slower at resnet18's size.)"""
    dtype = computing_dtype(out_dtype(node))
    saved = meta(node.args[1])
    if (x.ndim == 4 and not saved.is_contiguous()
            and saved.is_contiguous(memory_format=torch.channels_last)):
        return _max_pool_backward_channels_last(context, grad_output, x, indices, dtype)
    planes = 1
    for extent in x.shape[:-2]:
        planes *= extent
    height, width = x.shape[-2:]
    starts = _kiln.multiply(_kiln.arange(context.anchor(), planes, "int64"),
                            context.full((), height * width, torch.int64))
    starts = _kiln.reshape(starts, list(x.shape[:-2]) + [1, 1])
    flat = _kiln.reshape(_kiln.add(cast(indices, torch.int64), starts), [-1])
    values = _kiln.reshape(cast(grad_output, dtype), [-1])
    total = context.full([planes * height * width], 0, dtype)
    gradient = _kiln.index_put(total, flat, values, 0, accumulate=True, check_bounds=False)
    return _kiln.reshape(gradient, list(x.shape))


def _max_pool_backward_channels_last(context, grad_output, x, indices, dtype):
    """The same scatter-add for a forward input saved channels-last (_saved_layouts.py): the
    gradient is scattered into an (N, H, W, C) buffer, in the order of the channels-last
    values, and returned as its channels-first view; kiln's layout pass carries it on
    channels-last into the batch-norm and convolution gradients that follow."""
    batch, channels, height, width = x.shape
    to_last = [0, 2, 3, 1]
    n = _kiln.reshape(_kiln.arange(context.anchor(), batch, "int64"), [batch, 1, 1, 1])
    c = _kiln.reshape(_kiln.arange(context.anchor(), channels, "int64"), [1, channels, 1, 1])
    # (n * H * W + h * W + w) * C + c: position (n, h, w, c) of the channels-last buffer.
    row = _kiln.add(cast(indices, torch.int64),
                    _kiln.multiply(n, context.full((), height * width, torch.int64)))
    flat = _kiln.add(_kiln.multiply(row, context.full((), channels, torch.int64)), c)
    flat = _kiln.reshape(_kiln.transpose(flat, to_last), [-1])
    values = _kiln.reshape(_kiln.transpose(cast(grad_output, dtype), to_last), [-1])
    total = context.full([batch * height * width * channels], 0, dtype)
    gradient = _kiln.index_put(total, flat, values, 0, accumulate=True, check_bounds=False)
    return _kiln.transpose(_kiln.reshape(gradient, [batch, height, width, channels]), [0, 3, 1, 2])
