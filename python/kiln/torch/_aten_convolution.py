"""Conversion-table entries: convolutions, forward and transposed (see _aten_table.py), on kiln's
extern convolution ops (oneDNN; OpenBLAS in float64). Their gradients are in _aten_gradients.py.
"""
import torch

from .. import _kiln
from ._aten_linear import _computing_float
from ._aten_table import Unconvertible, cast, lowers, out_dtype, out_shape

aten = torch.ops.aten


@lowers(aten.convolution.default)
def _convolution(context, node, x, weight, bias, stride, padding, dilation, transposed,
                 output_padding, groups):
    if not hasattr(_kiln, "convolution"):
        raise Unconvertible("this build of kiln has no convolution")
    dtype = _computing_float(out_dtype(node), "convolution")
    if transposed:
        return _transposed_convolution(context, node, cast(x, dtype), cast(weight, dtype),
                                       None if bias is None else cast(bias, dtype), stride,
                                       padding, dilation, output_padding, groups)
    return _kiln.convolution(cast(x, dtype), cast(weight, dtype),
                             None if bias is None else cast(bias, dtype), list(stride),
                             list(padding), list(dilation), int(groups))



def transposed_convolution_fits(stride, output_padding, what):
    """A transposed convolution is the input gradient of the convolution it transposes, whose
    input is the transposed one's result: that convolution maps the result's extent back to the
    input's only while output_padding < stride (torch also allows output_padding < dilation
    alone, a result no such gradient has)."""
    if any(extra >= step for extra, step in zip(output_padding, stride)):
        raise Unconvertible(f"{what} with output_padding {list(output_padding)} not below "
                            f"stride {list(stride)}")


def _transposed_convolution(context, node, x, weight, bias, stride, padding, dilation,
                            output_padding, groups):
    """ConvTranspose: x (N, C, *in) with weight (C, O / groups, *kernel) is the input gradient
    of the convolution of weight `weight` from (N, O, *out) to (N, C, *in), x in the role of
    its output's gradient (oneDNN's backward-data primitive, as a training step runs it)."""
    transposed_convolution_fits(stride, output_padding, "transposed convolution")
    if not hasattr(_kiln, "convolution_backward_input"):
        raise Unconvertible("this build of kiln has no convolution gradients")
    result = _kiln.convolution_backward_input(x, weight, out_shape(context, node), list(stride),
                                              list(padding), list(dilation), int(groups))
    if bias is None:
        return result
    return _kiln.add(result, _kiln.reshape(bias, [1, -1] + [1] * (result.ndim - 2)))
