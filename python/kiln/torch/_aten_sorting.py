"""Conversion-table entries for sorting (see _aten_table.py): sort and topk as kiln's argsort
op (an extern sort kernel, src/extern/sort.h) and a gather of the values at its positions; one
sort serves both results (argsort and msort reach kiln as sort: their CompositeImplicit kernels
call it). Stable: equal elements keep their order, also where torch promises none
(stable=False, topk), and where eager's CPU sort orders them otherwise. NaN comes after every
number ascending, before every number descending, as in torch; -0.0 and 0.0 are equal.

On CUDA tensors kiln sorts rows in its own kernels (codegen/cuda/sort_kernels.cpp): rows of up
to 2,048 a block each in shared memory, longer ones by its radix passes, but for fewer than
FEW_ROWS rows of LONG_ROW elements or more, which stay in eager PyTorch, whose onesweep radix
sort beats kiln's there (H100, session 83, argsort in µs, kiln against torch: one row of 16M
float32 1,087 against 935, of 4M int32 326 / 288, of 1M float64 220 / 208; but 16 rows of
65,536 float32 94 / 161, 64 rows of 5,000 float64 90 / 167; bench/cuda_sorts.py); topk of a
few elements runs as rounds of argmax on the device (_aten_pointwise.topk_by_rounds)."""
import math

import torch

from .. import _kiln
from ._aten_pointwise import MOST_TOPK, topk_by_rounds, x_is_floating
from ._aten_table import Unconvertible, axis, cast, lowers, meta, out_dtype

aten = torch.ops.aten
FEW_ROWS, LONG_ROW = 8, 1 << 20


def _on_cuda(node):
    value = meta(node)
    value = value[0] if isinstance(value, (tuple, list)) else value
    return value.device.type != "cpu"


def _refuse_few_long_gpu_rows(node, x, dim):
    if not _on_cuda(node) or x.ndim == 0:
        return
    length = x.shape[dim]
    rows = math.prod(size for d, size in enumerate(x.shape) if d != dim)
    if not isinstance(length, int):
        raise Unconvertible(f"sort of rows of dynamic length {length} on the GPU")
    if length >= LONG_ROW and not (isinstance(rows, int) and rows >= FEW_ROWS):
        raise Unconvertible(f"sort of {rows} rows of {length} on the GPU (fewer than {FEW_ROWS} "
                            f"rows of {LONG_ROW} or more: torch's onesweep radix sort is faster)")


def _sorted(context, node, x, dim, descending, k=-1):
    """(values, int64 positions) of x sorted along `dim` (the first k of them with k >= 0)."""
    _refuse_few_long_gpu_rows(node, x, axis(dim, x.ndim) if x.ndim else 0)
    if x.ndim == 0:
        return x, context.full((), 0, torch.int64)
    return _kiln.sort(x, axis(dim, x.ndim), bool(descending), k)


@lowers(aten.sort.default)
def _sort(context, node, x, dim=-1, descending=False):
    values, positions = _sorted(context, node, x, dim, descending)
    return cast(values, out_dtype(node, 0)), positions


@lowers(aten.sort.stable)
def _sort_stable(context, node, x, *, stable=None, dim=-1, descending=False):
    return _sort(context, node, x, dim, descending)


@lowers(aten.topk.default)
def _topk(context, node, x, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) along `dim`, in order (also with sorted=False, which leaves the
    order to the implementation): a partial sort, torch's NaN order; ties in position order."""
    if not isinstance(k, int):
        raise Unconvertible(f"topk of a symbolic k={k}")
    if _on_cuda(node) and k <= MOST_TOPK and x_is_floating(x):
        return topk_by_rounds(context, node, x, k, dim, largest)
    if x.ndim == 0:
        if k > 1:
            raise Unconvertible("topk of k > 1 of a 0-d tensor")  # eager's error
        return cast(x, out_dtype(node, 0)), context.full((), 0, torch.int64)
    dim = axis(dim, x.ndim)
    if not isinstance(x.shape[dim], int):
        raise Unconvertible("topk along a dimension of dynamic size")
    if k > x.shape[dim] or k < 0:
        raise Unconvertible(f"topk of k={k} of {x.shape[dim]} elements")  # eager's error
    _refuse_few_long_gpu_rows(node, x, dim)
    values, positions = _kiln.sort(x, dim, bool(largest), k)
    return cast(values, out_dtype(node, 0)), positions


def _median_along(context, node, x, dim, keepdim, ignore_nan, rank=None):
    """torch's median (the lower of the two middle elements) along `dim`, and its position: one
    sort, NaNs last in their order. median: a row with a NaN gives its first NaN; nanmedian:
    the median of the numbers, the first NaN of a row of only NaNs; with `rank` (kthvalue's
    k - 1), the element of that rank, NaNs the largest."""
    if x.ndim == 0:
        return x, context.full((), 0, torch.int64)
    dim = axis(dim, x.ndim)
    length = x.shape[dim]
    if not isinstance(length, int):
        raise Unconvertible("median along a dimension of dynamic size")
    if length == 0:
        raise Unconvertible("median of an empty dimension")  # eager's error
    values, positions = _sorted(context, node, x, dim, False)
    if x.dtype in ("float16", "bfloat16", "float32", "float64"):
        numbers = _kiln.sum(_kiln.logical_not(_kiln.isnan(x)), [dim], True)  # int64 counts
    else:
        numbers = context.full([1] * x.ndim, length, torch.int64)
    if rank is not None:
        if not 0 <= rank < length:
            raise Unconvertible(f"kthvalue of k={rank + 1} of {length} elements")  # eager's error
        middle = context.full([1] * x.ndim, rank, torch.int64)
    elif ignore_nan:  # the middle of the numbers; the first (NaN) where there are none
        middle = _kiln.floor_divide(_kiln.maximum(_kiln.subtract(numbers, 1), 0), 2)
    else:  # the first NaN where there is one
        middle = _kiln.where(_kiln.less(numbers, length), numbers,
                             context.full((), (length - 1) // 2, torch.int64))
    middle = _kiln.broadcast_to(cast(middle, torch.int64), [
        1 if d == dim else x.shape[d] for d in range(x.ndim)])
    value = _kiln.take_along_axis(values, middle, dim)
    position = _kiln.take_along_axis(positions, middle, dim)
    if not keepdim:
        value, position = _kiln.squeeze(value, [dim]), _kiln.squeeze(position, [dim])
    return value, position


@lowers(aten.median.dim, aten.nanmedian.dim)
def _median_dim(context, node, x, dim=0, keepdim=False):
    value, position = _median_along(context, node, x, dim, keepdim,
                                    node.target == aten.nanmedian.dim)
    return cast(value, out_dtype(node, 0)), position


@lowers(aten.kthvalue.default)
def _kthvalue(context, node, x, k, dim=-1, keepdim=False):
    if not isinstance(k, int):
        raise Unconvertible(f"kthvalue of a symbolic k={k}")
    if x.ndim == 0:
        if k != 1:
            raise Unconvertible(f"kthvalue of k={k} of a 0-d tensor")  # eager's error
        return cast(x, out_dtype(node, 0)), context.full((), 0, torch.int64)
    value, position = _median_along(context, node, x, dim, keepdim, False, rank=k - 1)
    return cast(value, out_dtype(node, 0)), position


@lowers(aten.median.default, aten.nanmedian.default)
def _median_all(context, node, x):
    flat = _kiln.reshape(x, [-1]) if x.ndim != 1 else x
    value, _ = _median_along(context, node, flat, 0, False,
                             node.target == aten.nanmedian.default)
    return cast(value, out_dtype(node))
