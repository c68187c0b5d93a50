"""Conversion-table entries: anti-aliased resizing (F.interpolate(..., antialias=True) in
bilinear and bicubic modes, torchvision's Resize of tensors) and its gradient, as two matrix
products with constant weights (see _aten_table.py).

The resize is linear and separable: out = W_rows @ x @ W_columns^T over the last two axes, its
gradient W_rows^T @ g @ W_columns. The weight matrices depend only on the sizes, the scales and
align_corners, so they are computed when the graph is traced, by torch's own kernel applied to
an identity matrix (its filter support, normalisation and scale rules are then torch's, not a
second copy of them).
"""
import numpy as np
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.utils._python_dispatch import _disable_current_modes

from ._aten_table import Unconvertible, cast, computing_dtype, lowers, out_dtype
from .. import _kiln

aten = torch.ops.aten

# The forward kernel each entry's weights come from (the backward's are its forward's).
_KERNELS = {
    aten._upsample_bilinear2d_aa.default: aten._upsample_bilinear2d_aa.default,
    aten._upsample_bicubic2d_aa.default: aten._upsample_bicubic2d_aa.default,
    aten._upsample_bilinear2d_aa_backward.default: aten._upsample_bilinear2d_aa.default,
    aten._upsample_bicubic2d_aa_backward.default: aten._upsample_bicubic2d_aa.default,
}


def _side_weights(kernel, size, out_size, align_corners, scale):
    """(out_size, size) float64: torch's weights along one side, read off the kernel's result
    for the identity (batch k holds the k-th unit vector; the other side 2 wide, unchanged)."""
    # (real tensors, out of the fake and functional modes AOTAutograd traces a training
    # graph's partitions in)
    with _disable_current_modes(), unset_fake_temporarily(), torch.no_grad():
        identity = torch.eye(size, dtype=torch.float64).reshape(size, 1, size, 1)
        resized = kernel(identity.expand(size, 1, size, 2).contiguous(), [out_size, 2],
                         align_corners, scale, None)
        return resized[:, 0, :, 0].T.numpy()


def _weights(context, node, sizes, out_sizes, align_corners, scales, dtype):
    """The constant weight matrices of the rows and the columns, in the computing dtype."""
    if not all(isinstance(extent, int) for extent in (*sizes, *out_sizes)):
        raise Unconvertible("anti-aliased resizing of dynamic image sizes")
    if 1 in sizes:
        # torch's kernel resizes a side next to a side of 1 otherwise than the same pixels in a
        # wider image (4 rows to 2 of a 1-wide image: [0.71, 0.71] for [0, 1, 2, 3], where
        # the 2-wide image's column is [0.71, 2.29]): eager PyTorch runs it, for eager's results
        raise Unconvertible("anti-aliased resizing of an image with a side of 1")
    kernel = _KERNELS[node.target]
    rows, columns = (
        cast(context.trace.constant(np.ascontiguousarray(
            _side_weights(kernel, size, out_size, align_corners, scale))), dtype)
        for size, out_size, scale in zip(sizes, out_sizes, scales))
    return rows, columns


def _floating(node, dtype):
    if not dtype.is_floating_point:
        # uint8 images: torch's kernel rounds integer weights of its own
        raise Unconvertible(f"anti-aliased resizing of {dtype} images")
    return computing_dtype(dtype)


@lowers(aten._upsample_bilinear2d_aa.default, aten._upsample_bicubic2d_aa.default)
def _resize(context, node, x, output_size, align_corners, scales_h=None, scales_w=None):
    dtype = _floating(node, out_dtype(node))
    rows, columns = _weights(context, node, x.shape[-2:], list(output_size), align_corners,
                             (scales_h, scales_w), dtype)
    return _kiln.matmul(_kiln.matmul(rows, cast(x, dtype)), _kiln.transpose(columns, [1, 0]))


@lowers(aten._upsample_bilinear2d_aa_backward.default,
        aten._upsample_bicubic2d_aa_backward.default)
def _resize_backward(context, node, grad, output_size, input_size, align_corners,
                     scales_h=None, scales_w=None):
    dtype = _floating(node, out_dtype(node))
    rows, columns = _weights(context, node, list(input_size)[-2:], list(output_size),
                             align_corners, (scales_h, scales_w), dtype)
    return _kiln.matmul(_kiln.matmul(_kiln.transpose(rows, [1, 0]), cast(grad, dtype)), columns)
