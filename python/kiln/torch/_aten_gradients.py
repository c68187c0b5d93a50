"""Conversion-table entries for the gradient ops of training graphs (see _aten_table.py):
a convolution's gradients (kiln's extern gradient ops, oneDNN / OpenBLAS) and 2-d and 3-d max
pooling's (one scatter-add kernel).
"""
import torch

from .. import _kiln
from ._aten_convolution import transposed_convolution_fits
from ._aten_linear import _computing_float
from ._aten_table import Unconvertible, axis, cast, computing_dtype, lowers, meta, out_dtype

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


@lowers(aten.adaptive_max_pool2d_backward.default, aten.adaptive_max_pool3d_backward.default)
def _adaptive_max_pool_backward(context, node, grad_output, x, indices):
    return _max_pool_backward(context, node, grad_output, x, None, None, None, None, None,
                              indices)


@lowers(aten.max_pool2d_with_indices_backward.default,
        aten.max_pool3d_with_indices_backward.default)
def _max_pool_backward(context, node, grad_output, x, kernel, stride, padding, dilation,
                       ceil_mode, indices):
    """Each output position's gradient added at the input position its index names ((d * H +
    h) * W + w within its plane), in output order as torch's kernel adds them: one scatter-add
    over the flattened input, its index and value operands computed inside the same kernel.
    (Pulling the gradient through one strided view per kernel offset instead is a pointwise
    kernel, but does kernel-size times the input's size in work: 15x slower at resnet18's
    size.)"""
    spatial = 3 if node.target in (aten.max_pool3d_with_indices_backward.default,
                                   aten.adaptive_max_pool3d_backward.default) else 2
    dtype = computing_dtype(out_dtype(node))
    saved = meta(node.args[1])
    channels_last = torch.channels_last if spatial == 2 else torch.channels_last_3d
    if (x.ndim == spatial + 2 and not saved.is_contiguous()
            and saved.is_contiguous(memory_format=channels_last)):
        return _max_pool_backward_channels_last(context, grad_output, x, indices, dtype)
    planes = 1
    for extent in x.shape[:-spatial]:
        planes *= extent
    plane = 1
    for extent in x.shape[-spatial:]:
        plane *= extent
    starts = _kiln.multiply(_kiln.arange(context.anchor(), planes, "int64"),
                            context.full((), plane, torch.int64))
    starts = _kiln.reshape(starts, list(x.shape[:-spatial]) + [1] * spatial)
    flat = _kiln.reshape(_kiln.add(cast(indices, torch.int64), starts), [-1])
    values = _kiln.reshape(cast(grad_output, dtype), [-1])
    total = context.full([planes * plane], 0, dtype)
    gradient = _kiln.index_put(total, flat, values, 0, accumulate=True, check_bounds=False)
    return _kiln.reshape(gradient, list(x.shape))


def _max_pool_backward_channels_last(context, grad_output, x, indices, dtype):
    """The same scatter-add for a forward input saved channels-last (_saved_layouts.py): the
    gradient is scattered into an (N, *spatial, C) buffer, in the order of the channels-last
    values, and returned as its channels-first view; kiln's layout pass carries it on
    channels-last into the batch-norm and convolution gradients that follow."""
    batch, channels, *sides = x.shape
    plane = 1
    for extent in sides:
        plane *= extent
    to_last = [0, *range(2, x.ndim), 1]
    ones = [1] * len(sides)
    n = _kiln.reshape(_kiln.arange(context.anchor(), batch, "int64"), [batch, 1] + ones)
    c = _kiln.reshape(_kiln.arange(context.anchor(), channels, "int64"), [1, channels] + ones)
    # (n * plane + position) * C + c: position (n, *spatial, c) of the channels-last buffer.
    row = _kiln.add(cast(indices, torch.int64),
                    _kiln.multiply(n, context.full((), plane, torch.int64)))
    flat = _kiln.add(_kiln.multiply(row, context.full((), channels, torch.int64)), c)
    flat = _kiln.reshape(_kiln.transpose(flat, to_last), [-1])
    values = _kiln.reshape(_kiln.transpose(cast(grad_output, dtype), to_last), [-1])
    total = context.full([batch * plane * channels], 0, dtype)
    gradient = _kiln.index_put(total, flat, values, 0, accumulate=True, check_bounds=False)
    return _kiln.transpose(_kiln.reshape(gradient, [batch, *sides, channels]),
                           [0, x.ndim - 1, *range(1, x.ndim - 1)])


@lowers(aten._weight_norm_interface.default)
def _weight_norm(context, node, v, g, dim=0):
    """(w, norms): w = v * g / |v|, the norm over every dim but `dim`. A 1-d v's norms are its
    elements' magnitudes in eager PyTorch; its decomposition takes the norm of all of v, and
    its fake tensors say norms has one element: kiln's w is eager's, and its norms output has
    the recorded shape (the gradient below recomputes the norms from v)."""
    dtype = computing_dtype(out_dtype(node, 0))
    v, g = cast(v, dtype), cast(g, dtype)
    norms = _norms_but(v, dim)
    weight = _kiln.multiply(v, _kiln.divide(g, norms))
    recorded = list(meta(node)[1].shape)
    if v.ndim == 1 and recorded != list(v.shape):
        norms = _kiln.sqrt(_kiln.sum(_kiln.multiply(v, v), [0], True))
    return (cast(weight, out_dtype(node, 0)),
            cast(_kiln.reshape(norms, recorded), out_dtype(node, 1)))


def _norms_but(v, dim):
    """The 2-norms of v over every dim but `dim`, those dims kept (of size 1)."""
    keep = axis(dim, v.ndim)
    reduced = [d for d in range(v.ndim) if d != keep]
    squares = _kiln.multiply(v, v)
    return _kiln.sqrt(_kiln.sum(squares, reduced, True) if reduced else squares)


@lowers(aten._weight_norm_interface_backward.default)
def _weight_norm_backward(context, node, grad_w, v, g, norms, dim):
    """The gradients of w = v * g / |v| (the norm over every dim but `dim`: nn.utils.weight_norm,
    wav2vec2's positional convolution): grad_g = sum(grad_w * v) / |v| and grad_v = g / |v| *
    (grad_w - v * grad_g / |v|), summed over the same dims. The norms are recomputed from v:
    those saved for a 1-d v are not eager's (see _weight_norm)."""
    dtype = computing_dtype(out_dtype(node, 0))
    grad_w, v, g = (cast(value, dtype) for value in (grad_w, v, g))
    norms = _norms_but(v, dim)
    keep = axis(dim, v.ndim)
    reduced = [d for d in range(v.ndim) if d != keep]
    products = _kiln.multiply(grad_w, v)
    grad_g = _kiln.divide(_kiln.sum(products, reduced, True) if reduced else products, norms)
    grad_v = _kiln.multiply(
        _kiln.divide(g, norms),
        _kiln.subtract(grad_w, _kiln.multiply(v, _kiln.divide(grad_g, norms))))
    return (cast(grad_v, out_dtype(node, 0)),
            cast(_kiln.reshape(grad_g, list(meta(node)[1].shape)), out_dtype(node, 1)))
