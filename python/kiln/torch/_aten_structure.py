"""Conversion-table entries: ATen's views, creation and indexing (see _aten_table.py; products
and normalisations: _aten_linear.py). Views are index arithmetic in kiln, never copies: a
`view` followed by pointwise work fuses into one kernel.
"""
import numpy as np
import torch

from .. import _kiln
from ._aten_table import (Unconvertible, axis, cast, computing_dtype, lowers, meta, out_dtype,
                          out_shape)
from ._size_symbols import same_size

aten = torch.ops.aten


# ---- views and movement --------------------------------------------------------------------

@lowers(aten.view.default, aten._unsafe_view.default,
        aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.unsqueeze.default,
        view=True)
def _reshape(context, node, x, *args):
    return _kiln.reshape(x, out_shape(context, node))


@lowers(aten.expand.default, view=True)
def _expand(context, node, x, *args, **kwargs):
    return _kiln.broadcast_to(x, out_shape(context, node))


@lowers(aten.permute.default, view=True)
def _permute(context, node, x, dims):
    return _kiln.transpose(x, [axis(dim, x.ndim) for dim in dims])


@lowers(aten.t.default, view=True)
def _t(context, node, x):
    return _kiln.transpose(x, []) if x.ndim == 2 else x


@lowers(aten.transpose.int, view=True)
def _transpose(context, node, x, dim0, dim1):
    order = list(range(x.ndim))
    first, second = axis(dim0, x.ndim), axis(dim1, x.ndim)
    order[first], order[second] = order[second], order[first]
    return _kiln.transpose(x, order)


@lowers(aten.alias.default, aten.clone.default, aten.lift_fresh_copy.default,
        aten.detach.default, view=True)
def _identity(context, node, x, **kwargs):
    return x


@lowers(aten.slice.Tensor, view=True)
def _slice(context, node, x, dim=0, start=None, end=None, step=1):
    dim = axis(dim, x.ndim)
    if any(isinstance(value, _kiln.Size) for value in (x.shape[dim], start, end)):
        return _symbolic_slice(context, x, dim, start, out_shape(context, node)[dim], step)
    begin, stop, stride = slice(start, end, step).indices(x.shape[dim])
    slices = [slice(None)] * x.ndim
    slices[dim] = (begin, stop, stride)
    return _slice_any(x, slices)


def _symbolic_slice(context, x, dim, start, length, step):
    """start:stop of an axis with size symbols, given the `length` torch recorded for it (its
    guards decided how `:-1` or `:512` clamp): kiln keeps a fixed start >= 0 and step 1
    symbolic, and takes the last few (`[-1:]`, a fixed length from the end) by their indices;
    anything else needs numbers (Unconvertible: the graph compiles per size)."""
    if step == 1 and length == x.shape[dim]:  # all of it (torch guarded `[-4096:]` so)
        return x
    start = 0 if start is None else start
    if step == 1 and isinstance(start, int) and start < 0 and length == -start:
        first = context.full((), x.shape[dim] + start, torch.int64)
        indices = _kiln.add(_kiln.arange(context.anchor(), length, "int64"), first)
        return _kiln.take(x, indices, dim)
    if step != 1 or not isinstance(start, int) or start < 0:
        raise Unconvertible(f"slice {start}::{step} of the size {x.shape[dim]} with symbols")
    starts, stops, steps = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[dim], stops[dim] = start, start + length
    return _kiln.slice_sizes(x, starts, stops, steps)


def _slice_any(x, slices):
    """_kiln.slice, also for x with size symbols (a dynamic batch): `:` of a symbolic axis."""
    if not any(isinstance(extent, _kiln.Size) for extent in x.shape):
        return _kiln.slice(x, slices)
    starts, stops, steps = [], [], []
    for item in slices:
        start, stop, step = (0, 2 ** 63 - 1, 1) if item == slice(None) else item
        starts.append(start)
        stops.append(stop)
        steps.append(step)
    return _kiln.slice_sizes(x, starts, stops, steps)


@lowers(aten.unfold.default, view=True)
def _unfold(context, node, x, dim, size, step):
    """Tensor.unfold: the windows x[..., i * step : i * step + size, ...] along `dim`, each a
    new last axis (audio framing, image patches): one gather of a (count, size) index, its
    window axis moved last."""
    if x.ndim == 0:
        raise Unconvertible("unfold of a 0-d tensor")
    dim = axis(dim, x.ndim)
    count = out_shape(context, node)[dim]
    starts = _kiln.multiply(_kiln.arange(context.anchor(), count, "int64"),
                            context.full((), step, torch.int64))
    windows = _kiln.add(_kiln.reshape(starts, [count, 1]),
                        _kiln.reshape(_kiln.arange(context.anchor(), size, "int64"), [1, size]))
    taken = _kiln.take(x, windows, dim, False)
    order = [d for d in range(taken.ndim) if d != dim + 1] + [dim + 1]
    return _kiln.transpose(taken, order)

@lowers(aten.select.int, view=True)
def _select(context, node, x, dim, index):
    dim = axis(dim, x.ndim)
    if isinstance(index, int) and index < 0:
        if isinstance(x.shape[dim], _kiln.Size):
            # x[:, -1] of a dynamic length (RWKV's last state, a decoder's last position):
            # taken at length - 1, where the whole graph compiled per length
            position = context.full((1,), x.shape[dim] + index, torch.int64)
            return _kiln.reshape(_kiln.take(x, position, dim), out_shape(context, node))
        index += x.shape[dim]
    if any(isinstance(extent, _kiln.Size) for extent in x.shape):
        if not isinstance(index, int) or index < 0:
            raise Unconvertible(f"select {index} of an axis of symbolic size {x.shape[dim]}")
        starts, stops = [0] * x.ndim, [2 ** 63 - 1] * x.ndim
        starts[dim], stops[dim] = index, index + 1
        return _kiln.reshape(_kiln.slice_sizes(x, starts, stops, [1] * x.ndim),
                             out_shape(context, node))
    index = index + x.shape[dim] if index < 0 else index
    slices = [slice(None)] * x.ndim
    slices[dim] = (index, index + 1, 1)
    return _kiln.reshape(_kiln.slice(x, slices), out_shape(context, node))


@lowers(aten.split.Tensor, aten.split_with_sizes.default, view=True)
def _split(context, node, x, sizes, dim=0):
    dim = axis(dim, x.ndim)
    if isinstance(sizes, int):
        sizes = [min(sizes, x.shape[dim] - start) for start in range(0, x.shape[dim], sizes)] \
            or [0]
    pieces, start = [], 0
    for size in sizes:
        slices = [slice(None)] * x.ndim
        slices[dim] = (start, start + size, 1)
        pieces.append(_slice_any(x, slices))
        start += size
    return tuple(pieces)


@lowers(aten.cat.default)
def _cat(context, node, tensors, dim=0):
    dtype = out_dtype(node)
    # torch accepts (and skips) 1-d empty tensors beside tensors of any rank.
    kept = [cast(tensor, dtype) for tensor in tensors if not (tensor.shape == (0,))]
    if not kept:
        return context.full(out_shape(context, node), 0, dtype)
    return _kiln.concatenate(kept, axis(dim, kept[0].ndim))


@lowers(aten.stack.default)
def _stack(context, node, tensors, dim=0):
    dtype = out_dtype(node)
    dim = axis(dim, tensors[0].ndim + 1)
    tensors = [cast(tensor, dtype) for tensor in tensors]
    if not any(isinstance(extent, _kiln.Size) for extent in tensors[0].shape):
        return _kiln.stack(tensors, dim)
    # size symbols (a dynamic batch): each tensor with an axis of 1 inserted, concatenated
    return _kiln.concatenate([_kiln.reshape(tensor, [*tensor.shape[:dim], 1, *tensor.shape[dim:]])
                              for tensor in tensors], dim)


@lowers(aten.flip.default)
def _flip(context, node, x, dims):
    return _kiln.flip(x, [axis(dim, x.ndim) for dim in dims])


@lowers(aten.roll.default)
def _roll(context, node, x, shifts, dims=()):
    return _kiln.roll(x, list(shifts), [axis(dim, x.ndim) for dim in dims])


@lowers(aten.repeat.default)
def _repeat(context, node, x, repeats):
    repeats = list(repeats)
    if all(isinstance(extent, int) for extent in (*repeats, *x.shape)):
        return _kiln.tile(x, repeats)
    # With sizes (a dynamic batch, a count that is one): each dimension's copies as a broadcast
    # of a new axis before it, merged with it (torch's order: the whole dimension, `count`
    # times).
    shape = [1] * (len(repeats) - x.ndim) + list(x.shape)
    x = _kiln.reshape(x, shape)
    spread, merged = [], []
    for count, extent in zip(repeats, shape):
        spread += [count, extent]
        merged.append(count * extent)
    interleaved = [1 if k % 2 == 0 else extent for k, extent in enumerate(spread)]
    return _kiln.reshape(_kiln.broadcast_to(_kiln.reshape(x, interleaved), spread), merged)


@lowers(aten.constant_pad_nd.default)
def _constant_pad(context, node, x, pad, value=0):
    # A negative width crops (F.pad(x, (-1, 0)), wav2vec2's positional convolution): the crops
    # are a slice, the rest a pad.
    widths, crops = [(0, 0)] * x.ndim, [slice(None)] * x.ndim
    for pair in range(len(pad) // 2):
        low, high = pad[2 * pair], pad[2 * pair + 1]
        dim = x.ndim - 1 - pair
        if not all(isinstance(width, int) for width in (low, high)):
            raise Unconvertible("padding by a width of the sizes")
        if low < 0 or high < 0:
            if isinstance(x.shape[dim], _kiln.Size):
                raise Unconvertible("negative padding (a crop) of a dynamic axis")
            crops[dim] = (max(-low, 0), x.shape[dim] - max(-high, 0), 1)
        widths[dim] = (max(low, 0), max(high, 0))
    if any(crop != slice(None) for crop in crops):
        x = _slice_any(x, crops)
    return _kiln.pad(x, widths, "constant", float(value))


# ---- creation --------------------------------------------------------------------------------

@lowers(aten.full.default, aten.zeros.default, aten.ones.default, aten.empty.memory_format,
        aten.empty_strided.default, aten.scalar_tensor.default, aten.full_like.default,
        aten.zeros_like.default, aten.ones_like.default, aten.empty_like.default,
        aten.new_zeros.default, aten.new_ones.default, aten.new_full.default,
        aten.new_empty.default, aten.new_empty_strided.default, aten.fill.Scalar)
def _full(context, node, *args, **kwargs):
    name = node.target.overloadpacket.__name__
    value = {"zeros": 0, "zeros_like": 0, "new_zeros": 0, "ones": 1, "ones_like": 1,
             "new_ones": 1}.get(name, 0)
    if name in ("full", "scalar_tensor"):
        value = args[-1] if name == "full" else args[0]
    elif name in ("full_like", "new_full", "fill"):
        value = args[-1] if name != "new_full" else args[2]
    if isinstance(value, _kiln.Tensor):
        raise Unconvertible("a fill value computed by the graph")
    return context.full(out_shape(context, node), value, out_dtype(node))


@lowers(aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(context, node, *args, **kwargs):
    bounds = [value for value in args if isinstance(value, (int, float, _kiln.Size))]
    start, step = 0, 1
    if len(bounds) >= 2:
        start = bounds[0]
    if len(bounds) >= 3:
        step = bounds[2]
    dtype = out_dtype(node)
    count = out_shape(context, node)[0]  # torch's length, symbolic for dynamic bounds
    if all(_integral(value) for value in (start, step)):
        # (exact in int64 as in torch's double arithmetic; a size symbol stays an integer of
        # the code, which size-generic code takes from its table: XLNet's
        # arange(klen, -qlen, -1.0) of a dynamic length)
        start, step = (int(value) if isinstance(value, float) else value
                       for value in (start, step))
        positions = cast(_kiln.arange(context.anchor(), count, "int64"), torch.int64)
        values = _kiln.add(_kiln.multiply(positions, context.full((), step, torch.int64)),
                           context.full((), start, torch.int64))
        return cast(values, dtype)
    positions = cast(_kiln.arange(context.anchor(), count, "int64"), torch.float64)
    values = _kiln.add(_kiln.multiply(positions, context.full((), step, torch.float64)),
                       context.full((), start, torch.float64))
    return cast(values, dtype)


def _integral(value):
    """An int, a size symbol, or a float of an integer's value below 2**53."""
    return isinstance(value, (int, _kiln.Size)) or (
        isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53)


@lowers(aten.tril_indices.default, aten.triu_indices.default)
def _triangle_indices(context, node, row, col, offset=0, **kwargs):
    """A constant of the trace (its sizes are Python ints): DLRM's pairwise interactions."""
    if not all(isinstance(value, int) for value in (row, col, offset)):
        raise Unconvertible("tril_indices/triu_indices of dynamic sizes")
    make = np.tril_indices if node.target is aten.tril_indices.default else np.triu_indices
    rows, columns = make(row, offset, col)
    return cast(context.trace.constant(np.stack([rows, columns]).astype(np.int64)),
                out_dtype(node))


# ---- indexing ------------------------------------------------------------------------------

# The exception eager torch raises for an index out of bounds, by op (IndexError for
# embedding and indexing; index_select's depends on the tensor's layout: kiln.IndexOutOfRange,
# both; index_add's on its rank, _checked_index): a user's except clause catches the same in
# both.
INDEX_ERRORS = {"gather": "RuntimeError", "scatter": "RuntimeError",
                "scatter_reduce": "RuntimeError", "index_add": "RuntimeError",
                "index_select": "either"}
# Ops whose decomposition gathers by an index their eager kernel checks itself, raising another
# exception than the gather's: a loss's target out of range is IndexError, the gather's
# RuntimeError. (name, exception) by the op decomposed (LoweringContext.original), by name: a
# node's meta holds copies of the OpOverload (equal only by name).
DECOMPOSED_INDEX_ERRORS = {"aten.nll_loss_forward.default": ("nll_loss", "IndexError"),
                           "aten.nll_loss2d_forward.default": ("nll_loss2d", "IndexError")}


def _index_error(context, what):
    """(the op's name, the exception its eager kernel raises) for an index out of bounds."""
    return DECOMPOSED_INDEX_ERRORS.get(str(context.original),
                                       (what, INDEX_ERRORS.get(what, "IndexError")))


def _checked_index(index, x, dim, what):
    """index as int64, each element checked to lie in [0, x.shape[dim]) when the graph runs:
    torch's embedding, index_select, index_add and index_copy raise for a negative index, which
    kiln's take and index_put (NumPy's x[i]) would count from the end."""
    index = cast(index, torch.int64)
    one_d_add = what == "index_add" and x.ndim == 1  # eager's 1-d kernel: IndexError
    _kiln.check_index(index, x.shape[dim], dim, what, negative=False,
                      error="IndexError" if one_d_add else INDEX_ERRORS.get(what, "IndexError"))
    return index


@lowers(aten.embedding.default)
def _embedding(context, node, weight, indices, *args):
    return _kiln.take(weight, _checked_index(indices, weight, 0, "embedding"), 0, False)


@lowers(aten.index_select.default)
def _index_select(context, node, x, dim, index):
    if x.ndim == 0:  # torch's 0-d x: one element along dim 0, and a 0-d result
        x, dim = _kiln.reshape(x, [1]), 0
    dim = axis(dim, x.ndim)
    selected = _kiln.take(x, _checked_index(index, x, dim, "index_select"), dim, False)
    return _kiln.reshape(selected, out_shape(context, node))


@lowers(aten.index_add.default)
def _index_add(context, node, x, dim, index, source, alpha=1):
    """x with alpha * source added to its slices at `index` along `dim` (a repeated index adds
    each), functionally."""
    if x.ndim == 0 or index.ndim != 1:
        raise Unconvertible("index_add of a 0-d tensor or a 0-d index")
    dim = axis(dim, x.ndim)
    dtype = computing_dtype(out_dtype(node))
    values = cast(source, dtype)
    if alpha != 1:
        values = _kiln.multiply(values, context.full((), alpha, dtype))
    index = _checked_index(index, x, dim, "index_add")
    return cast(_kiln.index_put(cast(x, dtype), index, values, dim, True, check_bounds=False),
                out_dtype(node))


def _is_source_layout(x, source, size, stride, storage_offset):
    """Whether as_strided views x as it is: its sizes (kiln's, symbols included), offset and
    strides (those of extent 1 may differ: they step nowhere). Functionalisation restrides a
    pooled (N, C, 1, 1) that way, and with a symbolic batch no other rule takes it."""
    strides = source.stride()
    return (len(size) == x.ndim and (storage_offset or 0) == 0
            and type(source.storage_offset()) is int and source.storage_offset() == 0
            and all(n == m and (n == 1 or (type(st) is int and type(strides[d]) is int
                                           and st == strides[d]))
                    for d, (n, m, st) in enumerate(zip(size, x.shape, stride))))


@lowers(aten.as_strided.default)
def _as_strided(context, node, x, size, stride, storage_offset=None):
    """A view of x's memory (functionalisation replays views of channels-last tensors as
    as_strided): x's elements in memory order, then the elements the view's strides pick. Only
    for x whose memory is dense (a permutation of a contiguous layout) and a view inside it."""
    source = meta(node.args[0])
    if _is_source_layout(x, source, size, stride, storage_offset):
        return x
    if _is_row_major_reshape(source, meta(node)):
        return _kiln.reshape(x, out_shape(context, node))
    order, count = dense_memory_order(source, size, stride)
    offset = (storage_offset or 0) - source.storage_offset()
    memory = _kiln.reshape(_kiln.transpose(x, order), [count])
    places = strided_places(context, size, stride, offset, count)
    if not size:
        return _kiln.reshape(_kiln.take(memory, _kiln.reshape(places, [1]), 0, False), [])
    return _kiln.take(memory, places, 0, False)


def _is_row_major_reshape(source, view):
    """Whether as_strided views row-major x as a row-major tensor of as many elements: a
    reshape, symbolic sizes too (group norm's decomposition views its (N, G, C/G, 1) statistics
    as (N, C) so; with a dynamic batch it ran in eager PyTorch, its graph compiled per size).
    Sizes and strides are compared as expressions: no guard is made."""
    def row_major(tensor):
        expected = 1
        for extent, step in zip(reversed(tensor.shape), reversed(tensor.stride())):
            if not same_size(extent, 1) and not same_size(step, expected):
                return False
            expected = expected * extent
        return True

    def count(tensor):
        total = 1
        for extent in tensor.shape:
            total = total * extent
        return total
    return (all(same_size(tensor.storage_offset(), 0) for tensor in (source, view))
            and row_major(source) and row_major(view) and same_size(count(source), count(view)))


def dense_memory_order(source, size, stride):
    """(the axes of fake tensor `source` from its largest stride to its smallest, its element
    count) for memory that is dense (a permutation of a contiguous layout), which an as_strided
    view of `size` and `stride` reads (and as_strided_scatter writes) in that order."""
    if not all(type(v) is int for v in [*size, *stride, *source.shape, *source.stride()]):
        raise Unconvertible("as_strided with symbolic sizes")
    order = sorted(range(source.ndim), key=lambda d: -source.stride(d))
    count = 1
    for d in reversed(order):
        if source.shape[d] != 1 and source.stride(d) != count:
            raise Unconvertible("as_strided of a tensor whose memory is not dense")
        count *= source.shape[d]
    return order, count


def strided_places(context, size, stride, offset, count):
    """The int64 places in `count` elements of memory of a view's elements (its shape `size`;
    a 0-d view's one place 0-d too), for a view inside that memory."""
    last = offset + sum((n - 1) * st for n, st in zip(size, stride) if n > 0)
    if min(size, default=1) > 0 and (offset < 0 or last >= max(count, 1)
                                     or any(st < 0 for st in stride)):
        raise Unconvertible("as_strided reaching outside its tensor's memory")
    places = context.full([1] * len(size), offset, torch.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        along = [1] * len(size)
        along[d] = n
        position = _kiln.reshape(_kiln.arange(context.anchor(), n, "int64"), along)
        places = _kiln.add(places, _kiln.multiply(position, context.full((), st, torch.int64)))
    return _kiln.broadcast_to(places, list(size)) if size else places


def _flat_along(context, x, dim, index, what):
    """(flat int64 index into x of index's shape, x's element count) for index[i] at `dim` and
    i elsewhere: what gather reads and scatter writes (NumPy's take_along_axis)."""
    index = cast(index, torch.int64)
    what, error = _index_error(context, what)
    _kiln.check_index(index, x.shape[dim] if x.ndim else 1, dim, what, negative=False,
                      error=error)
    shape = list(index.shape)
    flat, stride = None, 1
    for d in reversed(range(x.ndim)):
        if d == dim:
            position = index
        else:
            along = [1] * x.ndim
            along[d] = shape[d]
            position = _kiln.reshape(_kiln.arange(context.anchor(), shape[d], "int64"), along)
        term = _kiln.multiply(position, context.full((), stride, torch.int64))
        flat = term if flat is None else _kiln.add(flat, term)
        stride *= x.shape[d]
    return _kiln.broadcast_to(flat, shape), stride


@lowers(aten.gather.default)
def _gather(context, node, x, dim, index, sparse_grad=False):
    """out[i] = x[i with index[i] at `dim`]: one flat index into x."""
    dim = axis(dim, x.ndim)
    if x.ndim == 0:
        what, error = _index_error(context, "gather")
        _kiln.check_index(cast(index, torch.int64), 1, dim, what, negative=False, error=error)
        return x
    flat, count = _flat_along(context, x, dim, index, "gather")
    return _kiln.take(_kiln.reshape(x, [count]), flat, 0, False)


@lowers(aten.scatter.src, aten.scatter.value, aten.scatter_add.default)
def _scatter(context, node, x, dim, index, src, reduce=None):
    """x with x[i with index[i] at `dim`] = src[i] (scatter_add: +=), functionally; src a
    tensor at least index's shape (its leading block is read) or a number. Where an index
    repeats, scatter keeps one of the values (torch leaves which one undefined too)."""
    if reduce is not None:
        raise Unconvertible(f"scatter with reduce={reduce!r}")
    dim = axis(dim, x.ndim)
    if x.ndim == 0 or 0 in index.shape:
        raise Unconvertible("scatter of a 0-d tensor or an empty index")
    dtype = computing_dtype(out_dtype(node))
    flat, count = _flat_along(context, x, dim, index, "scatter")
    if isinstance(src, _kiln.Tensor):
        src = _slice_any(src, [(0, extent, 1) for extent in index.shape])
    else:
        src = context.full(list(index.shape), src, dtype)
    values = _kiln.reshape(cast(src, dtype), [-1])
    target = _kiln.reshape(cast(x, dtype), [count])
    result = _kiln.index_put(target, _kiln.reshape(flat, [-1]), values, 0,
                             node.target is aten.scatter_add.default, check_bounds=False)
    return cast(_kiln.reshape(result, list(x.shape)), out_dtype(node))


def _advanced_index(context, node, x, indices, what, checked=True):
    """(first dim, merged extent, one flat int64 index) for index tensors on adjacent dims
    (None elsewhere): the dims they index merge into one, as NumPy's advanced indexing does.
    Each index is checked against its dim unless not `checked` (ATen's _unsafe_ ops: the
    caller promises them in range); a negative one counts from the end."""
    positions = [dim for dim, index in enumerate(indices) if index is not None]
    if not positions or positions != list(range(positions[0], positions[-1] + 1)):
        raise Unconvertible("index tensors on dims that are not adjacent")
    for dim in positions:
        if meta(node.args[1][dim]).dtype == torch.bool:
            raise Unconvertible("a boolean mask index (its result's shape depends on the data)")
    flat = None
    for dim in positions:
        index = cast(indices[dim], torch.int64)
        if checked:
            _kiln.check_index(index, x.shape[dim], dim, what)
        extent = context.full((), x.shape[dim], torch.int64)
        index = _kiln.where(_kiln.less(index, context.full((), 0, torch.int64)),
                            _kiln.add(index, extent), index)
        flat = index if flat is None else _kiln.add(_kiln.multiply(flat, extent), index)
    merged = 1
    for extent in x.shape[positions[0]:positions[-1] + 1]:
        merged *= extent
    return positions[0], positions[-1] + 1, merged, flat


def _merged(x, first, last, merged):
    return _kiln.reshape(x, list(x.shape[:first]) + [merged] + list(x.shape[last:]))


# _unsafe_index and _unsafe_index_put are what PyTorch's interpolation decompositions gather and
# (in their gradients) scatter with: indices in range by construction, so no check (as
# Inductor's); checking them cost a reduction kernel and two outputs per index every call.
@lowers(aten.index.Tensor, aten._unsafe_index.Tensor)
def _index(context, node, x, indices):
    """x[i0, i1, ...] with index tensors on adjacent dims."""
    first, last, merged, flat = _advanced_index(context, node, x, indices, "index",
                                                node.target is aten.index.Tensor)
    return _kiln.reshape(_kiln.take(_merged(x, first, last, merged), flat, first, False),
                         out_shape(context, node))


@lowers(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(context, node, x, indices, values, accumulate=False):
    """x[i0, i1, ...] = values (+= with accumulate: embedding's backward), functionally;
    float16/bfloat16 accumulate in float32. The flat index is in range once each of its parts
    is: index_put checks none again."""
    dtype = computing_dtype(out_dtype(node))
    if _boolean_mask(node, indices) is not None:
        return cast(_masked_put(node, cast(x, dtype), indices, cast(values, dtype),
                                accumulate), out_dtype(node))
    first, last, merged, flat = _advanced_index(context, node, x, indices, "index_put",
                                                node.target is aten.index_put.default)
    target = _merged(cast(x, dtype), first, last, merged)
    indexed_shape = list(target.shape[:first]) + list(flat.shape) + list(target.shape[first + 1:])
    values = _kiln.broadcast_to(cast(values, dtype), indexed_shape)
    return _kiln.reshape(_kiln.index_put(target, flat, values, first, bool(accumulate),
                                         check_bounds=False), out_shape(context, node))


def _boolean_mask(node, indices):
    """The dim a boolean mask index starts at, when it is the only index (x[:, mask] = v, as
    `x[mask] = value` traces); else None."""
    positions = [dim for dim, index in enumerate(indices) if index is not None]
    if len(positions) != 1 or meta(node.args[1][positions[0]]).dtype != torch.bool:
        return None
    return positions[0]


def _masked_put(node, x, indices, values, accumulate):
    """x[..., mask, ...] = values (+= with accumulate) as a where over the mask, when the
    values do not depend on how many elements the mask selects: they broadcast along the
    selected elements' dim (a number, a row per selected element's trailing dims), as in
    Longformer's `mask[global == 2] = finfo.max`. index_put runs this as masked_fill; values
    of one per selected element have a data-dependent shape and stay in eager PyTorch."""
    first = _boolean_mask(node, indices)
    mask = indices[first]
    leading, trailing = list(x.shape[:first]), list(x.shape[first + mask.ndim:])
    shape = [1] * (len(leading) + 1 + len(trailing) - values.ndim) + list(values.shape)
    if len(shape) != len(leading) + 1 + len(trailing):
        raise Unconvertible("index_put values of more dims than the indexed result")
    selected = shape[len(leading)]
    if not (isinstance(selected, int) and selected == 1):
        raise Unconvertible("a boolean mask index_put of one value per selected element "
                            "(their count depends on the data)")
    values = _kiln.reshape(values, shape[:len(leading)] + [1] * mask.ndim
                           + shape[len(leading) + 1:])
    mask = _kiln.reshape(mask, [1] * len(leading) + list(mask.shape) + [1] * len(trailing))
    return _kiln.where(mask, _kiln.add(x, values) if accumulate else values, x)
