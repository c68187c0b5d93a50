"""Conversion-table entries: reductions into places an index names, as scatter-adds (see
_aten_table.py): embedding bags (nn.EmbeddingBag, F.embedding_bag: recommendation models' sparse
features), sums and means of the rows each bag's indices name, and scatter_reduce's sums and
means (graph networks' message aggregation); maxima and minima of both as a sort and a scatter
in sorted order, on the CPU.
"""
import operator

import torch

from .. import _kiln
from ._aten_structure import _flat_along, _slice_any
from ._aten_table import (Unconvertible, axis, cast, computing_dtype, lowers, meta, out_dtype,
                          out_shape)

aten = torch.ops.aten
_SUM, _MEAN, _MAX = 0, 1, 2


def _bag_of_each(context, offsets, count, bags, what):
    """Each index's bag: how many of the bags' offsets are at or before it, less one (offsets
    ascend; a last offset past the bags', include_last_offset's, is left out). `count` and
    `bags` may be size symbols (a dynamic batch: one compilation for every batch size)."""
    starts = cast(offsets, torch.int64)
    if not offsets.shape[0] == bags:
        starts = _slice_any(starts, [(0, bags, 1)])
    _kiln.check_index(starts, count + 1, 0, what, negative=False,
                      error="RuntimeError")
    marks = _kiln.index_put(context.full([count + 1], 0, torch.int64), starts,
                            context.full([bags], 1, torch.int64), 0, True, check_bounds=False)
    bag = _kiln.subtract(_slice_any(_kiln.cumsum(marks, 0), [(0, count, 1)]),
                         context.full((), 1, torch.int64))
    _kiln.check_index(bag, bags, 0, f"{what} (offsets[0] must be 0)", negative=False,
                      error="RuntimeError")
    return bag


def _kept(context, index, padding_idx):
    """Which indices count (all but the padding index's), or None when all do."""
    if padding_idx is None or padding_idx < 0:
        return None
    return _kiln.not_equal(index, context.full((), padding_idx, torch.int64))


def _index_count(indices):
    """How many indices the bags hold (an int or a size symbol): 1-d indices only."""
    if indices.ndim != 1:
        raise Unconvertible("embedding_bag of 2-d indices")
    return indices.shape[0]


@lowers(aten._embedding_bag_backward.default)
def _embedding_bag_backward(context, node, grad, indices, offsets, offset2bag, bag_size,
                            maximum_indices, num_weights, scale_grad_by_freq, mode, sparse,
                            per_sample_weights=None, padding_idx=-1):
    """The weight's dense gradient: each index's row gets its bag's gradient (times its sample
    weight, or over its bag's size for a mean), added up. The bags and their sizes are
    recomputed from the offsets (eager leaves a sum's offset2bag empty)."""
    if mode not in (_SUM, _MEAN) or sparse or scale_grad_by_freq:
        raise Unconvertible("embedding_bag's gradient of a max, sparse or scaled by frequency")
    bags, width = grad.shape
    count = _index_count(indices)
    if not isinstance(num_weights, int):
        raise Unconvertible("embedding_bag's gradient of a dynamic table size")
    dtype = computing_dtype(out_dtype(node))
    index = cast(indices, torch.int64)
    bag = _bag_of_each(context, offsets, count, bags, "embedding_bag backward")
    rows = _kiln.take(cast(grad, dtype), bag, 0, False)
    if per_sample_weights is not None:
        rows = _kiln.multiply(rows, _kiln.reshape(cast(per_sample_weights, dtype), [count, 1]))
    kept = _kept(context, index, padding_idx)
    if mode == _MEAN:
        size = _kiln.index_put(context.full([bags], 0, torch.int64), bag,
                               context.full([count], 1, torch.int64) if kept is None
                               else cast(kept, torch.int64), 0, True, check_bounds=False)
        divisor = _kiln.maximum(_kiln.take(size, bag, 0, False), context.full((), 1, torch.int64))
        rows = _kiln.divide(rows, _kiln.reshape(cast(divisor, dtype), [count, 1]))
    if kept is not None:
        rows = _kiln.where(_kiln.reshape(kept, [count, 1]), rows, context.full((), 0, dtype))
    _kiln.check_index(index, num_weights, 0, "embedding_bag backward", negative=False,
                      error="RuntimeError")
    return _kiln.index_put(context.full([num_weights, width], 0, dtype), index, rows, 0, True,
                           check_bounds=False)


@lowers(aten._embedding_bag_per_sample_weights_backward.default)
def _embedding_bag_sample_weights_backward(context, node, grad, weight, indices, offsets,
                                           offset2bag, mode, padding_idx=-1):
    """Each sample weight's gradient: its row of the table dotted with its bag's gradient."""
    if mode != _SUM:
        raise Unconvertible("per-sample weights of a bag that is no sum")
    bags, width = grad.shape
    count = _index_count(indices)
    dtype = computing_dtype(out_dtype(node))
    index = cast(indices, torch.int64)
    bag = _bag_of_each(context, offsets, count, bags, "embedding_bag backward")
    _kiln.check_index(index, weight.shape[0], 0, "embedding_bag backward", negative=False,
                      error="RuntimeError")
    products = _kiln.multiply(_kiln.take(cast(grad, dtype), bag, 0, False),
                              _kiln.take(cast(weight, dtype), index, 0, False))
    result = _kiln.sum(products, [1], False)
    kept = _kept(context, index, padding_idx)
    if kept is not None:
        result = _kiln.where(kept, result, context.full((), 0, dtype))
    return result


def _max_bags(context, node, weight, indices, offsets, padding_idx):
    """Each bag's largest row, element by element, as scatter_reduce's maxima are: the rows'
    values sorted (kiln's sort kernel), then scattered into their bag's row in that order, so
    that the last write to each place is its largest; an empty bag is zeros, as eager's. On the
    CPU only (a GPU scatter applies repeated places in no fixed order)."""
    if meta(node)[0].device.type != "cpu":
        raise Unconvertible("embedding_bag with mode='max' on the GPU")
    count = indices.shape[0]
    bags, width = out_shape(context, node, 0)
    if not all(isinstance(extent, int) for extent in (count, bags, width)) or \
            count * width > _MOST_SORTED_VALUES:
        raise Unconvertible(f"embedding_bag with mode='max' of dynamic sizes or more than "
                            f"{_MOST_SORTED_VALUES} values")
    dtype = computing_dtype(meta(node)[0].dtype)
    index = cast(indices, torch.int64)
    bag = _bag_of_each(context, offsets, count, bags, "embedding_bag")
    _kiln.check_index(index, weight.shape[0], 0, "embedding_bag", negative=False)
    rows = _kiln.take(cast(weight, dtype), index, 0, False)
    kept = _kept(context, index, padding_idx)
    if kept is not None:  # a padding row's values are written first, and overwritten
        rows = _kiln.where(_kiln.reshape(kept, [count, 1]), rows,
                           context.full((), float("-inf"), dtype))
    columns = _kiln.reshape(_kiln.arange(context.anchor(), width, "int64"), [1, width])
    places = _kiln.add(_kiln.multiply(_kiln.reshape(bag, [count, 1]),
                                      context.full((), width, torch.int64)), columns)
    values = _kiln.reshape(rows, [count * width])
    places = _kiln.reshape(_kiln.broadcast_to(places, [count, width]), [count * width])
    order = _kiln.argsort(values, 0, False)
    total = _kiln.index_put(context.full([bags * width], 0, dtype),
                            _kiln.take(places, order, 0, False),
                            _kiln.take(values, order, 0, False), 0, False, check_bounds=False)
    total = _kiln.reshape(total, [bags, width])
    if kept is not None:  # a bag of padding indices only is empty: zeros
        size = _kiln.index_put(context.full([bags], 0, torch.int64), bag, cast(kept, torch.int64),
                               0, True, check_bounds=False)
        total = _kiln.where(_kiln.reshape(_kiln.greater(size, context.full((), 0, torch.int64)),
                                          [bags, 1]), total, context.full((), 0, dtype))
    return (total,) + tuple(context.full(out_shape(context, node, k), 0, torch.int64)
                            for k in (1, 2, 3))


@lowers(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def _embedding_bag(context, node, weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                   sparse=False, per_sample_weights=None, include_last_offset=False,
                   padding_idx=-1):
    """(result, offset2bag, bag_size, max_indices) with eager PyTorch's CPU values for the last
    three, which its backward (run eagerly) reads: zeros for a sum (and offset2bag empty, or each
    index's bag with a padding index), each index's bag and the bags' sizes (twice) for a mean.
    Max bags (_max_bags) when nothing reads the last three (inference)."""
    if indices.ndim != 1 or weight.ndim != 2:
        raise Unconvertible("embedding_bag of 2-d indices")
    auxiliary_used = any(user.target is not operator.getitem or user.args[1] != 0
                         for user in node.users)
    if mode == _MAX:
        if auxiliary_used:
            raise Unconvertible("embedding_bag with mode='max' whose max indices a backward reads")
        return _max_bags(context, node, weight, indices, offsets, padding_idx)
    if mode not in (_SUM, _MEAN):
        raise Unconvertible(f"embedding_bag with mode={mode}")
    if auxiliary_used and meta(node)[0].device.type != "cpu":
        raise Unconvertible("embedding_bag whose bag sizes a backward reads, off the CPU")
    count = indices.shape[0]
    bags, width = out_shape(context, node, 0)
    index = cast(indices, torch.int64)
    bag = _bag_of_each(context, offsets, count, bags, "embedding_bag")
    _kiln.check_index(index, weight.shape[0], 0, "embedding_bag", negative=False,
                      error="RuntimeError")
    dtype = computing_dtype(meta(node)[0].dtype)
    rows = _kiln.take(cast(weight, dtype), index, 0, False)
    if per_sample_weights is not None:
        rows = _kiln.multiply(rows, _kiln.reshape(cast(per_sample_weights, dtype), [count, 1]))
    kept = _kept(context, index, padding_idx)
    if kept is not None:
        rows = _kiln.where(_kiln.reshape(kept, [count, 1]), rows, context.full((), 0, dtype))
    total = _kiln.index_put(context.full([bags, width], 0, dtype), bag, rows, 0, True,
                            check_bounds=False)
    size = _kiln.index_put(context.full([bags], 0, torch.int64), bag,
                           context.full([count], 1, torch.int64) if kept is None
                           else cast(kept, torch.int64), 0, True, check_bounds=False)
    if mode == _MEAN:
        divisor = _kiln.maximum(size, context.full((), 1, torch.int64))
        total = _kiln.divide(total, _kiln.reshape(cast(divisor, dtype), [bags, 1]))
    if not auxiliary_used:  # no backward reads them
        return (total,) + tuple(context.full(out_shape(context, node, k), 0, torch.int64)
                                for k in (1, 2, 3))
    if mode == _MEAN:
        if out_shape(context, node, 2) != [bags]:
            raise Unconvertible("embedding_bag whose bag sizes are not one per bag")
        return total, bag, size, size
    # a sum's offset2bag: each index's bag where eager fills it (a padding index), else empty
    offset2bag = bag if out_shape(context, node, 1) == [count] else context.full(
        out_shape(context, node, 1), 0, torch.int64)
    return (total, offset2bag) + tuple(context.full(out_shape(context, node, k), 0, torch.int64)
                                       for k in (2, 3))


# The most values scatter_reduce's amax/amin sorts: past it, the sort and the ordered scatter
# cost more than eager's scatter-max (1M values: 54 against 31 ms), which then runs instead.
_MOST_SORTED_VALUES = 1 << 18


def _count(shape):
    total = 1
    for extent in shape:
        total *= extent
    return total


def _scattered(context, x, dim, index, src, computing):
    """scatter_reduce's operands, flat: the places in x's flat elements, their count, the values
    (src's part the index covers) and x itself, in the computing dtype."""
    flat, count = _flat_along(context, x, dim, index, "scatter_reduce")
    values = _kiln.reshape(cast(_slice_any(src, [(0, extent, 1) for extent in index.shape]),
                                computing), [-1])
    return _kiln.reshape(flat, [-1]), count, values, _kiln.reshape(cast(x, computing), [count])


def _scatter_extremum(context, node, x, dim, index, src, reduce, include_self):
    """amax/amin: the values sorted (kiln's sort kernel), then scattered in that order, so that
    the last write to each place, the one kept (a scatter applies repeated places in order on
    the CPU), is its largest: NaN too, sorted after every number (torch's maxima and minima
    propagate NaN). Float minima are the negated maxima of the negated values; integer minima
    sort descending."""
    if meta(node).device.type != "cpu":
        raise Unconvertible(f"scatter_reduce's {reduce} on the GPU (its scatter applies repeated "
                            "places in no fixed order there)")
    dtype = out_dtype(node)
    if dtype == torch.bool:
        raise Unconvertible(f"scatter_reduce's {reduce} of bool")
    dim = axis(dim, x.ndim)
    if x.ndim == 0 or 0 in index.shape:
        raise Unconvertible("scatter_reduce of a 0-d tensor or an empty index")
    if not all(isinstance(extent, int) for extent in index.shape) or \
            _count(index.shape) > _MOST_SORTED_VALUES:
        raise Unconvertible(f"scatter_reduce's {reduce} of more than {_MOST_SORTED_VALUES} values "
                            "or of dynamic sizes (eager's scatter-max is faster there)")
    computing = computing_dtype(dtype)
    flat, _, values, own = _scattered(context, x, dim, index, src, computing)
    negated = reduce == "amin" and computing.is_floating_point
    if negated:
        values, own = _kiln.negative(values), _kiln.negative(own)
    order = _kiln.argsort(values, 0, reduce == "amin" and not negated)
    scattered = _kiln.index_put(own, _kiln.take(flat, order, 0, False),
                                _kiln.take(values, order, 0, False), 0, False, check_bounds=False)
    extremum = _kiln.minimum if reduce == "amin" and not negated else _kiln.maximum
    result = extremum(own, scattered) if include_self else scattered
    if negated:
        result = _kiln.negative(result)
    return cast(_kiln.reshape(result, list(x.shape)), dtype)


@lowers(aten.scatter_reduce.two)
def _scatter_reduce(context, node, x, dim, index, src, reduce, include_self=True):
    """x with src's values summed (or averaged) into the places index names (GNN message
    aggregation): scatter-adds of the values and of their counts; maxima and minima through a
    sort (_scatter_extremum). Products stay eager; so do integer means (torch floors them)."""
    if reduce in ("amax", "amin"):
        return _scatter_extremum(context, node, x, dim, index, src, reduce, include_self)
    if reduce not in ("sum", "mean"):
        raise Unconvertible(f"scatter_reduce with reduce={reduce!r}")
    dtype = out_dtype(node)
    if reduce == "mean" and not dtype.is_floating_point:
        raise Unconvertible("scatter_reduce's mean of integers")
    dim = axis(dim, x.ndim)
    if x.ndim == 0 or 0 in index.shape:
        raise Unconvertible("scatter_reduce of a 0-d tensor or an empty index")
    computing = computing_dtype(dtype)
    flat, count, values, own = _scattered(context, x, dim, index, src, computing)
    sums = _kiln.index_put(own if include_self else context.full([count], 0, computing), flat,
                           values, 0, True, check_bounds=False)
    hits = None
    if reduce == "mean" or not include_self:  # how many values each place received
        hits = _kiln.index_put(context.full([count], 0, computing), flat,
                               _kiln.ones_like(values), 0, True, check_bounds=False)
    result = sums
    if reduce == "mean":
        divisor = _kiln.add(hits, context.full((), 1, computing)) if include_self else \
            _kiln.maximum(hits, context.full((), 1, computing))
        result = _kiln.divide(sums, divisor)
    if not include_self:  # a place no value reaches keeps its own
        result = _kiln.where(_kiln.greater(hits, context.full((), 0, computing)), result, own)
    return cast(_kiln.reshape(result, list(x.shape)), dtype)


@lowers(aten.histc.default)
def _histc(context, node, x, bins=100, min=0, max=0):
    """The counts of x's elements in `bins` equal bins over [min, max] (a mixture of experts'
    tokens per expert, transformers' MoE): a scatter-add of ones at each element's bin, the bin
    as eager's CPU kernel computes it ((x - min) * bins / (max - min), truncated, in x's dtype;
    max in the last bin; elements outside the range counted nowhere). A range taken from the
    data (min == max) and half-precision inputs (eager rounds each step) stay eager's."""
    dtype = out_dtype(node)
    if dtype not in (torch.float32, torch.float64):
        raise Unconvertible(f"histc of {dtype}")
    low, high = (float(torch.tensor(float(edge), dtype=dtype)) for edge in (min, max))
    if not low < high or bins < 1 or high - low == float("inf"):
        raise Unconvertible(f"histc over [{min}, {max}]: its range from the data, or none")
    x = _kiln.reshape(x, [-1])
    left, right = context.full((), low, dtype), context.full((), high, dtype)
    inside = _kiln.logical_and(_kiln.greater_equal(x, left), _kiln.less_equal(x, right))
    scaled = _kiln.divide(_kiln.multiply(_kiln.subtract(x, left), context.full((), bins, dtype)),
                          context.full((), high - low, dtype))
    zero = context.full((), 0, torch.int64)
    place = _kiln.minimum(_kiln.where(inside, cast(scaled, torch.int64), zero),
                          context.full((), bins - 1, torch.int64))
    ones = cast(inside, dtype)
    return _kiln.index_put(context.full([bins], 0, dtype), place, ones, 0, True,
                           check_bounds=False)
