"""Conversion-table entries for sorting (see _aten_table.py): sort and topk as kiln's argsort
op (an extern sort kernel, src/extern/sort.h) and a gather of the values at its positions; one
sort serves both results (argsort and msort reach kiln as sort: their CompositeImplicit kernels
call it). Stable: equal elements keep their order, also where torch promises none
(stable=False, topk), and where eager's CPU sort orders them otherwise. NaN comes after every
number ascending, before every number descending, as in torch; -0.0 and 0.0 are equal.

On CUDA tensors kiln sorts on the host (a copy each way), so these stay in eager PyTorch there,
except topk of a few elements, which runs as rounds of argmax on the device
(_aten_pointwise.topk_by_rounds)."""
import torch

from .. import _kiln
from ._aten_pointwise import MOST_TOPK, topk_by_rounds
from ._aten_table import Unconvertible, axis, cast, lowers, meta, out_dtype

aten = torch.ops.aten


def _on_cuda(node):
    value = meta(node)
    value = value[0] if isinstance(value, (tuple, list)) else value
    return value.device.type != "cpu"


def _sorted(context, node, x, dim, descending, k=-1):
    """(values, int64 positions) of x sorted along `dim` (the first k of them with k >= 0)."""
    if _on_cuda(node):
        raise Unconvertible("sort on the GPU (kiln's sort runs on the host: torch's is faster)")
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
    if _on_cuda(node):
        if k > MOST_TOPK:
            raise Unconvertible(f"topk of k={k} on the GPU (kiln takes k <= {MOST_TOPK} there)")
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
    values, positions = _kiln.sort(x, dim, bool(largest), k)
    return cast(values, out_dtype(node, 0)), positions
