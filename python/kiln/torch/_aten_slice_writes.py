"""Conversion-table entries: writes into slices of a tensor, functionalised (`x[:, 1:] = y`,
`x[:, 0] = y`, the gradients of slices and selects): pointwise work and concatenations, no
scatter (see _aten_table.py); writes into an as_strided view of its memory, a scatter only where
the view does not cover that memory in full; index_copy and index_fill, scatters of slices at
indices along an axis."""
import torch

from .. import _kiln
from ._aten_structure import _checked_index, _slice_any, dense_memory_order, strided_places
from ._aten_table import Unconvertible, axis, cast, lowers, meta, out_dtype

aten = torch.ops.aten


@lowers(aten.slice_scatter.default)
def _slice_scatter(context, node, base, src, dim=0, start=None, end=None, step=1):
    """base with base[start:start + len(src)] along `dim` replaced by src (functionalised
    `x[:, 1:] = y`): the kept parts of base and src, concatenated."""
    dim = axis(dim, base.ndim)
    size, count = base.shape[dim], src.shape[dim]
    if all(type(v) is int for v in (size, count, step)) and all(
            v is None or type(v) is int for v in (start, end)):
        if len(range(*slice(start, end, step).indices(size))) != count:
            _refuse_out_of_range("slice_scatter of a source whose length is not its slice's")
    return _scatter_run(node, base, src, dim, 0 if start is None else start, step)


@lowers(aten.select_scatter.default)
def _select_scatter(context, node, base, src, dim, index):
    dim = axis(dim, base.ndim)
    size = base.shape[dim]
    if type(size) is int and type(index) is int and not -size <= index < size:
        _refuse_out_of_range(f"select_scatter at index {index} of an axis of size {size}")
    shape = list(src.shape)
    shape.insert(dim, 1)
    return _scatter_run(node, base, _kiln.reshape(src, shape), dim, index, 1)


def _refuse_out_of_range(what):
    """Eager PyTorch raises for it (Dynamo's fake tensors let it through): the node is left to
    eager, which raises its own error when the graph runs (kiln clamped the place instead)."""
    raise Unconvertible(what + " (eager PyTorch's error)")


@lowers(aten.index_copy.default)
def _index_copy(context, node, x, dim, index, source):
    """x with its slices at `index` along `dim` replaced by source's, functionally. torch's
    IndexError for a negative index is a check: PyTorch's decomposition, an index_put, counted
    one from the end (x.index_copy(0, tensor([-1]), s) wrote the last row where eager raises)."""
    if x.ndim == 0 or index.ndim != 1:
        raise Unconvertible("index_copy of a 0-d tensor or a 0-d index")
    dim = axis(dim, x.ndim)
    dtype = out_dtype(node)
    return _kiln.index_put(cast(x, dtype), _checked_index(index, x, dim, "index_copy"),
                           cast(source, dtype), dim, False, check_bounds=False)


@lowers(aten.index_fill.int_Scalar, aten.index_fill.int_Tensor)
def _index_fill(context, node, x, dim, index, value):
    """x with its slices at `index` along `dim` set to `value`; a negative index counts from
    the end, as torch's does (PyTorch's decomposition reaches index_copy, which refuses one)."""
    if x.ndim == 0 or index.ndim > 1:
        raise Unconvertible("index_fill of a 0-d tensor")
    dim = axis(dim, x.ndim)
    dtype = out_dtype(node)
    index = _kiln.reshape(cast(index, torch.int64), [-1])
    _kiln.check_index(index, x.shape[dim], dim, "index_fill", negative=True, error="IndexError")
    shape = list(x.shape)
    shape[dim] = index.shape[0]
    fill = cast(value, dtype) if isinstance(value, _kiln.Tensor) else context.full((), value,
                                                                                    dtype)
    return _kiln.index_put(cast(x, dtype), index, _kiln.broadcast_to(fill, shape), dim, False,
                           check_bounds=False)


@lowers(aten.as_strided_scatter.default)
def _as_strided_scatter(context, node, base, src, size, stride, storage_offset=None):
    """base with src written into base.as_strided(size, stride, storage_offset) (what
    functionalisation makes of a write into an as_strided view: the gradient of an adaptive
    pool over one axis, Swin's pooler). Eager writes into a clone of base, the clone's memory
    dense in base's order and at offset 0; so does this, in that memory's flat elements. (Of a
    base at an offset of its own eager writes elsewhere: that stays eager's.)"""
    source = meta(node.args[0])
    if type(source.storage_offset()) is not int or source.storage_offset() != 0:
        raise Unconvertible("as_strided_scatter into a tensor at an offset in its memory")
    order, count = dense_memory_order(source, size, stride)
    offset = storage_offset or 0
    dtype = out_dtype(node)
    base, src = cast(base, dtype), cast(src, dtype)
    memory = _covering_memory(src, size, stride, offset, count)
    if memory is None:
        places = _kiln.reshape(strided_places(context, size, stride, offset, count), [-1])
        memory = _kiln.index_put(_kiln.reshape(_kiln.transpose(base, order), [count]), places,
                                 _kiln.reshape(src, [-1]), 0, False, check_bounds=False)
    memory = _kiln.reshape(memory, [base.shape[d] for d in order])
    return _kiln.transpose(memory, sorted(range(len(order)), key=order.__getitem__))


def _covering_memory(src, size, stride, offset, count):
    """src's elements in memory order when the view covers all `count` elements of memory once
    each (a dense layout of its own, at offset 0): the write replaces the whole of base, no
    scatter. None otherwise."""
    if offset != 0 or any(n == 0 for n in size):
        return None
    axes = sorted((d for d in range(len(size)) if size[d] != 1), key=lambda d: -stride[d])
    expected = 1
    for d in reversed(axes):
        if stride[d] != expected:
            return None
        expected *= size[d]
    if expected != count:
        return None
    kept = [d for d in range(len(size)) if size[d] == 1] + axes  # size-1 axes first: no matter
    return _kiln.reshape(_kiln.transpose(src, kept), [count])


def _scatter_run(node, base, src, dim, start, step):
    size = base.shape[dim]
    if isinstance(start, int) and start < 0 and isinstance(size, int):
        start = max(start + size, 0)
    if (step != 1 and isinstance(start, int) and start >= 0 and isinstance(size, int)
            and isinstance(src.shape[dim], int)):
        return _strided_scatter_run(node, base, src, dim, start, step)
    if step != 1 or not isinstance(start, int) or start < 0:
        raise Unconvertible(f"a scatter into {start}::{step} of an axis of size {size}")
    dtype = out_dtype(node)
    base, src = cast(base, dtype), cast(src, dtype)
    pieces, stop = [], start + src.shape[dim]

    def part(begin, end):
        slices = [slice(None)] * base.ndim
        slices[dim] = (begin, end, 1)
        return _slice_any(base, slices)
    if start > 0:
        pieces.append(part(0, start))
    pieces.append(src)
    if stop != size:
        pieces.append(part(stop, 2 ** 63 - 1))
    return _kiln.concatenate(pieces, dim) if len(pieces) > 1 else pieces[0]


def _strided_scatter_run(node, base, src, dim, start, step):
    """base with src written into start::step of axis `dim` (the gradient of x[:, 0::2], Swin's
    patch merging): src spread to every step-th place (zeros between), shifted to `start`, and
    chosen where the position is one of the slice's; pointwise work, no scatter."""
    dtype = out_dtype(node)
    base, src = cast(base, dtype), cast(src, dtype)
    size, count = base.shape[dim], src.shape[dim]
    shape = list(src.shape)
    spread = _kiln.reshape(src, shape[:dim] + [count, 1] + shape[dim + 1:])
    widths = [(0, 0)] * (len(shape) + 1)
    widths[dim + 1] = (0, step - 1)
    spread = _kiln.reshape(_kiln.pad(spread, widths, "constant", 0),
                           shape[:dim] + [count * step] + shape[dim + 1:])
    length = min(count * step, size - start)
    slices = [slice(None)] * len(shape)
    slices[dim] = (0, length, 1)
    widths = [(0, 0)] * len(shape)
    widths[dim] = (start, size - start - length)
    spread = _kiln.pad(_slice_any(spread, slices), widths, "constant", 0)
    position = _kiln.arange(base, size, "int64")
    offset = _kiln.subtract(position, _kiln.full(base, [], float(start), "int64"))
    chosen = _kiln.logical_and(
        _kiln.logical_and(_kiln.greater_equal(offset, _kiln.full(base, [], 0.0, "int64")),
                          _kiln.less(offset, _kiln.full(base, [], float(count * step), "int64"))),
        _kiln.equal(_kiln.mod(offset, _kiln.full(base, [], float(step), "int64")),
                    _kiln.full(base, [], 0.0, "int64")))
    chosen = _kiln.reshape(chosen, [1] * dim + [size] + [1] * (len(shape) - dim - 1))
    return _kiln.where(chosen, spread, base)
