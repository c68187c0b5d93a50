"""Conversion-table entries for the gradient ops of training graphs (see _aten_table.py):
a convolution's gradients (kiln's extern gradient ops, oneDNN / OpenBLAS) and max pooling's
(one pointwise kernel over strided views of grad_output and the indices).
"""
import torch

from .. import _kiln
from ._aten_structure import _computing_float, _pool_arguments, _positions
from ._aten_table import Unconvertible, cast, computing_dtype, lowers, meta, out_dtype

aten = torch.ops.aten


@lowers(aten.convolution_backward.default)
def _convolution_backward(context, node, grad_output, x, weight, bias_sizes, stride, padding,
                          dilation, transposed, output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias), each computed only where output_mask asks for it
    (None otherwise, as torch returns)."""
    if transposed:
        raise Unconvertible("transposed convolution")
    if not hasattr(_kiln, "convolution_backward_input"):
        raise Unconvertible("this build of kiln has no convolution gradients")
    dtype = _computing_float(meta(node.args[0]).dtype, "convolution_backward")
    gradient = cast(grad_output, dtype)
    attributes = (list(stride), list(padding), list(dilation), int(groups))
    grad_input = grad_weight = grad_bias = None
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
    """Pulled, not scattered: input position (h, w) receives, for each kernel offset (i, j),
    the gradient of the output window that read it at that offset, if its index names (h, w).
    Per offset, those windows' gradients and indices are one strided view of grad_output and
    of the indices (below), so the sum over offsets is one pointwise kernel. Each (window,
    input position) pair meets at exactly one offset: every chosen index is counted once."""
    kernel, stride, padding, dilation = _pool_arguments(
        x, kernel, stride, [padding] if isinstance(padding, int) else padding,
        [dilation] if isinstance(dilation, int) else dilation, 2)
    dtype = computing_dtype(out_dtype(node))
    sizes = list(x.shape[-2:])
    gradient = _spread(cast(grad_output, dtype), sizes, kernel, stride, padding, dilation, 0.0)
    chosen = _spread(cast(indices, torch.int64), sizes, kernel, stride, padding, dilation, -1.0)
    position = _flat_positions(context, sizes)
    zero = context.full((), 0, dtype)
    lead = [slice(None)] * (x.ndim - 2)
    total = None
    for offset in _positions(kernel):
        # Input row h is read at offset i by output row (h + padding - i * dilation) / stride;
        # in the spread grid that row sits at h + padding - i * dilation + low (see _spread).
        starts = [padding[d] - offset[d] * dilation[d] + _low(d, kernel, padding, dilation)
                  for d in range(2)]
        window = lead + [(starts[d], starts[d] + sizes[d], 1) for d in range(2)]
        term = _kiln.where(_kiln.equal(_kiln.slice(chosen, window), position),
                           _kiln.slice(gradient, window), zero)
        total = term if total is None else _kiln.add(total, term)
    return total


def _low(d, kernel, padding, dilation):
    """The fill _spread puts before output row 0 along spatial dim d: room for the offsets
    that reach back past it."""
    return max(0, (kernel[d] - 1) * dilation[d] - padding[d])


def _spread(value, sizes, kernel, stride, padding, dilation, fill):
    """value (..., OH, OW) on the input's stride grid: output row r at row r * stride (`fill`
    between them), with `fill` rows before (_low) and after, enough for every offset's view of
    the input's `sizes` rows. Views only (reshape and pad): index arithmetic in the kernel."""
    lead = list(value.shape[:-2])
    out = list(value.shape[-2:])
    if stride != [1, 1]:
        value = _kiln.reshape(value, lead + [out[0], 1, out[1], 1])
        widths = [(0, 0)] * len(lead) + [(0, 0), (0, stride[0] - 1), (0, 0), (0, stride[1] - 1)]
        value = _kiln.pad(value, widths, "constant", fill)
        value = _kiln.reshape(value, lead + [out[0] * stride[0], out[1] * stride[1]])
    widths = [(0, 0)] * len(lead)
    for d in range(2):
        high = max(0, sizes[d] + padding[d] - out[d] * stride[d])
        widths.append((_low(d, kernel, padding, dilation), high))
    return _kiln.pad(value, widths, "constant", fill) if any(map(any, widths)) else value


def _flat_positions(context, sizes):
    """h * W + w over the input's (H, W) plane: what max pooling's indices name."""
    height, width = sizes
    rows = _kiln.arange(context.anchor(), height, "int64")
    columns = _kiln.arange(context.anchor(), width, "int64")
    return _kiln.add(_kiln.multiply(_kiln.reshape(rows, [height, 1]),
                                    context.full((), width, torch.int64)),
                     _kiln.reshape(columns, [1, width]))
