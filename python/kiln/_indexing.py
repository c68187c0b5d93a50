"""x[key] and x[key] = value on tracers: basic indexing (ints, slices with steps, negative
indices, None, Ellipsis) as views; NumPy's advanced indexing with integer arrays (concrete or
traced, several, broadcast together) as one gather / scatter on the advanced axes merged into
one; and boolean masks: a concrete mask becomes integer indices; a traced mask selects lazily
(x[m] = v and x[m] += v become where(m, v, x); any other use of x[m] has a data-dependent
shape: a graph break)."""
import collections.abc
import math
import operator

import numpy as np

from . import (_assumed_numbers, _break_indices, _masked_selections, _memory_layout,
               _window_indexing, _windows)
from ._stored_scalars import stored_scalar
from ._tracer import (TracedArray, as_operand, backend, cast, graph_break, has_tracer,
                      materialize_all, to_tensor)


def _k():
    return backend()


def _normal_key(key):
    """The key with NumPy's conversions made: any other sequence (a range, a tuple inside the
    key's tuple) is an index array and an object with __index__ an int, as NumPy reads them."""
    if isinstance(key, tuple):
        return tuple(_normal_item(item) for item in key)
    return _normal_item(key)


def _normal_item(item):
    if item is None or item is Ellipsis or isinstance(
            item, (int, slice, list, np.ndarray, np.generic, TracedArray, str, bytes)):
        return item
    if isinstance(item, (tuple, collections.abc.Sequence)):
        return list(item)
    if hasattr(item, "__array__"):
        return np.asarray(item)
    if hasattr(type(item), "__index__"):
        return operator.index(item)
    return item


def _expand(key, shape):
    """The key as a list of ints, slices, None and arrays (concrete or traced), no Ellipsis;
    and whether its advanced entries (arrays, and ints beside them) are split apart by a slice,
    None or Ellipsis (even an empty one): NumPy then puts the broadcast index shape first."""
    ndim = len(shape)
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    masks = {}  # id of a concrete mask's first index array -> the mask's shape
    for item in key:
        if isinstance(item, list) and has_tracer(item):
            item = as_operand(item)  # A[[k, p]] of traced ints: their stack, traced
        elif isinstance(item, (list, np.ndarray)):
            empty_list = isinstance(item, list) and np.size(item) == 0
            item = np.asarray(item, np.intp) if empty_list else np.asarray(item)
            if item.dtype == np.bool_:
                indices = np.nonzero(item)
                masks[id(indices[0])] = item.shape
                entries.extend(indices)
                continue
        elif isinstance(item, np.integer):  # (unlike a 0-d array, with which NumPy copies)
            item = int(item)
        elif not (item is None or item is Ellipsis or isinstance(item, (int, slice, TracedArray))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
        entries.append(item)
    advanced = [i for i, e in enumerate(entries) if _is_array(e) or isinstance(e, int)]
    split = any(_is_array(e) for e in entries) and advanced[-1] - advanced[0] >= len(advanced)
    used = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        entries[ellipses[0]:ellipses[0] + 1] = [slice(None)] * (ndim - used)
    entries += [slice(None)] * (ndim - sum(1 for e in entries if e is not None))
    if masks:
        _check_masks(entries, masks, shape)
    return entries, split


def _check_masks(entries, masks, shape):
    """NumPy's IndexError for a concrete boolean mask whose shape is not that of the axes it
    covers (its nonzero() indices alone would select from the wrong axes' extents)."""
    axis = 0
    for entry in entries:
        if entry is None:
            continue
        for offset, size in enumerate(masks.get(id(entry), ())):
            if shape[axis + offset] != size:
                raise _numpy_mask_error(axis + offset, shape[axis + offset], size)
        axis += 1


def _numpy_mask_error(axis, length, size):
    """The installed NumPy's own IndexError for a boolean index of `size` along `axis` of
    `length` (its wording changed in 2.0), from a zero-stride stand-in of that shape."""
    stand_in = np.broadcast_to(np.zeros((), np.int8), (1,) * axis + (length,))
    try:
        stand_in[(slice(None),) * axis + (np.ones(size, bool),)]
    except IndexError as error:
        return error
    return IndexError(f"boolean index did not match indexed array along axis {axis}")


def _has_bool_scalar(key):
    """x[True] adds an axis (a 0-d mask), unlike x[1]: left to NumPy (a graph break)."""
    return any(isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and
                                                      item.ndim == 0 and item.dtype == np.bool_)
               for item in (key if isinstance(key, tuple) else (key,)))


def _is_array(entry):
    return isinstance(entry, (np.ndarray, TracedArray))


def _basic(tensor, entries, shape):
    """Applies ints, slices and None (arrays' axes kept whole); returns the tensor."""
    k = _k()
    slices, result_shape, axis = [], [], 0
    for entry in entries:
        if entry is None:
            result_shape.append(1)
            continue
        size = shape[axis]
        if isinstance(entry, int):
            index = entry + size if entry < 0 else entry
            if not 0 <= index < size:
                raise IndexError(f"index {entry} is out of bounds for axis {axis} with size "
                                 f"{size}")
            slices.append((index, index + 1, 1))
        elif isinstance(entry, slice):
            start, stop, step = entry.indices(size)
            length = len(range(start, stop, step))
            if length == 0:
                start, stop, step = 0, 0, 1
            elif step < 0 and stop < 0:
                stop = None
            slices.append((start, stop, step))
            result_shape.append(length)
        else:
            slices.append((0, size, 1))
            result_shape.append(size)
        axis += 1
    if any(s != (0, n, 1) for s, n in zip(slices, shape)):
        tensor = k.slice(tensor, slices)
    if tuple(result_shape) != tuple(tensor.shape):
        tensor = k.reshape(tensor, result_shape)
    return tensor


def _mask_entry(entries):
    traced_masks = [e for e in entries if isinstance(e, TracedArray) and e.dtype == np.bool_]
    return traced_masks[0] if traced_masks else None


def getitem(x, key):
    key = _assumed_numbers.as_index(key)
    if isinstance(x._selection, _windows.Window):  # v[:-1] of a window (a shrinking loop)
        return _window_indexing.index_window(x, _normal_key(key), getitem)
    if x._masked():  # x[mask][k]
        row = _masked_selections.element(x, key)
        if row is not None:
            return row
    x._check_plain("indexing")
    selected = _masked_selections.index_with(x, key)  # y[np.flatnonzero(m)] in a loop
    if selected is not None:
        return selected
    key = _windows.unit_slices(_windows.data_bounds_read(_normal_key(key)), x.shape)
    if _windows.has_moving_bounds(key):  # A[i, i+1:] in a captured loop
        fixed = _window_indexing.fixed_extents(x, key, getitem)   # x[i:i+3]: of fixed shape
        return fixed if fixed is not None else _windows.getitem(x, key, getitem)
    shape = x.shape
    if isinstance(key, TracedArray) and key.dtype == np.bool_:
        if key.shape != shape[:key.ndim]:
            raise IndexError("boolean index did not match indexed array")
        # the mask as it is now: a later write to it (keep &= ...) leaves this selection be
        return TracedArray(x._context, x.tensor, mask=TracedArray(key._context, key.tensor))
    if _has_bool_scalar(key):
        values = materialize_all((x, key), "indexing with a boolean scalar")
        return values[0][values[1]]
    entries, split = _expand(key, shape)
    entries = _break_indices.lifted_entries(x, entries, shape)
    if _mask_entry(entries) is not None:
        values = materialize_all((x, entries), "boolean mask indexing has a data-dependent shape")
        return values[0][tuple(values[1])]
    if not any(_is_array(e) for e in entries):
        if _gives_scalar(key, entries, shape):  # a NumPy scalar: a copy, not a view
            result = TracedArray(x._context, _basic(x.tensor, entries, shape))
            result._scalar = True
            return result
        strides, offset = _memory_layout.indexed(x, entries, shape)
        result = x._make_view(_basic(x.tensor, entries, shape),
                              lambda root: _basic(root, entries, shape),
                              lambda root, value: _set_basic(root, entries, shape, value),
                              strides, offset=offset)
        return result
    plan = _Advanced(x, entries, split)
    if plan.empty:
        return TracedArray(x._context, x._context.constant(0, x.dtype, plan.result_shape))
    tensor = _k().take(plan.merged, plan.index, plan.axis, check_bounds=False)
    scalar = _gives_scalar(key, entries, shape)
    if scalar or not all(isinstance(e, TracedArray) and e._scalar and e.ndim == 0
                         for e in entries if _is_array(e)):
        result = TracedArray(x._context, tensor)
        result._scalar = scalar
        return result

    # The arrays are all (traced) NumPy integer scalars: integers to NumPy, x[i] is a view.
    def plan_for(root):
        return _Advanced(TracedArray(x._context, root), entries, split)

    def forward(root):
        again = plan_for(root)
        return _k().take(again.merged, again.index, again.axis, check_bounds=False)
    return x._make_view(tensor, forward, lambda root, value: _set_basic(
        root, plan.basic, shape, plan_for(root).put(value)))


def _gives_scalar(key, entries, shape):
    """x[1, 2], x[()] and x[i] with i a 0-d integer array give NumPy scalars; x[...] and
    x[1, ...] give 0-d arrays."""
    return (len(entries) == len(shape) and not any(
        k is Ellipsis for k in (key if isinstance(key, tuple) else (key,))) and all(
        isinstance(e, int) or _is_array(e) and e.ndim == 0 for e in entries))


def _position(index, size, axis, check=True):
    """A traced integer index as int64 positions in [0, size): negative ones wrapped, and
    NumPy's IndexError raised at run time for the rest (not needed for a captured loop's index
    whose bounds are known to fit, or a narrow integer dtype's: a uint8 image indexing a
    256-entry table)."""
    known = index._range
    if index.dtype.kind in "iu":
        info = np.iinfo(index.dtype)
        low, high = known if known is not None else (int(info.min), int(info.max))
        known = (max(low, int(info.min)), min(high, int(info.max)))
    index = index.astype(np.int64)
    inside = known is not None and -size <= known[0] and known[1] < size
    if check and not inside:
        _k().check_index(index.tensor, size, axis)
    if not (inside and known[0] >= 0):
        index = np.where(index < 0, index + size, index)
    return index


def _shape_text(shape):
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


class _Advanced:
    """x[entries] with integer arrays, as NumPy does it: the basic part (slices, None) applied,
    the advanced axes (arrays and ints) moved together (in place, or first when split) and
    merged into one axis of `merged` at `axis`; `index` (int64, the arrays' broadcast shape)
    holds flat positions in that axis, so x[entries] is take(merged, index, axis)."""

    def __init__(self, x, entries, split):
        k, shape = _k(), x.shape
        positions = [p for p, e in enumerate(entries) if _is_array(e) or isinstance(e, int)]
        indices = [entries[p] for p in positions]
        # The input axis of each advanced entry (None entries add no input axis).
        axes = [sum(1 for e in entries[:p] if e is not None) for p in positions]
        sizes = [shape[a] for a in axes]
        if any(_is_array(i) and i.dtype.kind not in "iu" for i in indices):
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        try:
            broadcast = np.broadcast_shapes(*(np.shape(i) for i in indices))
        except ValueError:
            raise IndexError(
                "shape mismatch: indexing arrays could not be broadcast together with shapes " +
                "".join(_shape_text(i.shape) + " " for i in indices if _is_array(i))) from None
        self.empty = math.prod(broadcast) == 0
        # Flat positions: sum of index * stride, the concrete terms summed here, at trace time.
        concrete, traced, stride = np.zeros((), np.int64), None, 1
        for index, size, axis in reversed(list(zip(indices, sizes, axes))):
            if isinstance(index, TracedArray):
                index = _position(index, size, axis, check=not self.empty)
                term = index * stride if stride != 1 else index
                traced = term if traced is None else traced + term
            else:
                index = np.asarray(index, np.int64)
                bad = (index >= size) | (index < -size)
                if bad.any() and not self.empty:
                    raise IndexError(f"index {index[bad].flat[0]} is out of bounds for axis "
                                     f"{axis} with size {size}")
                concrete = concrete + np.where(index < 0, index + size, index) * stride
            stride *= size
        if traced is None:
            flat = x._context.lift(np.array(np.broadcast_to(concrete, broadcast)))  # 0-d kept
        else:
            flat = traced + concrete if concrete.ndim or concrete != 0 else traced
        self.index = flat.tensor
        if tuple(self.index.shape) != broadcast:
            self.index = k.broadcast_to(self.index, list(broadcast))
        self.basic = [slice(None) if p in positions else e for p, e in enumerate(entries)]
        part = _basic(x.tensor, self.basic, shape)      # the advanced axes kept whole
        # Move the advanced axes together at `axis` and merge them.
        self.axis = 0 if split else positions[0]
        others = [a for a in range(len(entries)) if a not in positions]
        self.permutation = others[:self.axis] + positions + others[self.axis:]
        if self.permutation != sorted(self.permutation):
            part = k.transpose(part, self.permutation)
        self.moved_shape = list(part.shape)
        outer = self.moved_shape[:self.axis], self.moved_shape[self.axis + len(positions):]
        if len(positions) != 1:
            part = k.reshape(part, outer[0] + [math.prod(sizes)] + outer[1])
        self.merged = part
        self.result_shape = outer[0] + list(broadcast) + outer[1]

    def put(self, value, accumulate=False):
        """The basic part's tensor with x[entries] = value (broadcast) done: duplicate indices,
        last one wins (NumPy's buffered assignment); with `accumulate` every one adds its value
        (np.add.at)."""
        k = _k()
        merged = self.merged
        if not self.empty:
            merged = k.index_put(merged, self.index, value, self.axis, accumulate,
                                 check_bounds=False)
        part = k.reshape(merged, self.moved_shape)
        if self.permutation != sorted(self.permutation):
            part = k.transpose(part, [int(a) for a in np.argsort(self.permutation)])
        return part


def _mask_broadcast(value, trailing):
    """A traced value for x[mask] = value, shaped to broadcast over x's `trailing` unmasked axes
    only (where() then places it); one with an axis of the selected count is placed in mask
    order, which depends on the data (and NumPy checks the count): a graph break."""
    if not isinstance(value, TracedArray) or value.ndim <= trailing:
        return value
    leading = value.ndim - trailing
    if any(size != 1 for size in value.shape[:leading]):
        graph_break("x[mask] = array: the values' placement depends on the mask")
    return value.reshape(value.shape[leading:])


def _expand_mask(mask, x):
    """The mask as a traced bool array broadcastable against x."""
    extra = x.ndim - mask.ndim
    if extra == 0:
        return mask
    return TracedArray(mask._context, _k().reshape(mask.tensor, list(mask.shape) + [1] * extra))


def _indices(like, start, length, step):
    """start + step * arange(length); start an int or a traced int64 0-d tensor."""
    k = _k()
    index = k.arange(like, length, "int64")
    if step != 1:
        index = k.multiply(index, float(step))
    if not isinstance(start, (int, np.integer)):
        index = k.add(index, start)
    elif start:
        index = k.add(index, float(start))
    return index


def _set_basic(tensor, entries, shape, value):
    """tensor with tensor[entries] replaced by value (broadcast as NumPy does), entries basic
    only."""
    k = _k()
    target = _basic(tensor, entries, shape)
    value = k.broadcast_to(cast(_fit_value(value, target.shape), tensor.dtype),
                           list(target.shape))
    # Per input axis: (start, length, step), or None where the whole axis is taken.
    plan, axis = [], 0
    for entry in entries:
        if entry is None:
            continue
        size = shape[axis]
        if isinstance(entry, int):
            index = entry + size if entry < 0 else entry
            plan.append((index, 1, 1))
        else:
            start, stop, step = entry.indices(size)
            length = len(range(start, stop, step))
            plan.append(None if (start, length, step) == (0, size, 1) else (start, length, step))
        axis += 1
    value = k.reshape(value, [n if p is None else p[1] for n, p in zip(shape, plan)])
    return _scatter(tensor, plan, value, 0)


def _scatter(tensor, plan, value, axis):
    k = _k()
    while axis < len(plan) and plan[axis] is None:
        axis += 1
    if axis == len(plan):
        return value
    start, length, step = plan[axis]
    index = _indices(tensor, start, length, step)
    inner = value
    if any(p is not None for p in plan[axis + 1:]):
        part = k.take(tensor, index, axis, check_bounds=False)  # slice positions: in range
        if all(p is None or p[1] == 1 for p in plan[axis + 1:]):
            inner = _masked_positions(part, plan, value, axis + 1)
        else:
            inner = _scatter(part, plan, value, axis + 1)
    return k.index_put(tensor, index, inner, axis, False, check_bounds=False)


def _masked_positions(part, plan, value, axis):
    """part with value written where each axis from `axis` on is at its one position (x[i, j]
    = v, i and j traced: the row x[i] with v at column j): where(column == j, v, row), an update
    of the row at each element's own position that the scheduler makes in place and trims to
    the positions (sched/trim_loops.h), where a scatter into the row would copy the row first
    and then copy it back."""
    k = _k()
    shape = list(part.shape)
    mask = None
    for b in range(axis, len(plan)):
        if plan[b] is None:
            continue
        start = plan[b][0]
        positions = k.arange(part, shape[b], "int64")
        here = k.equal(positions, float(start) if isinstance(start, (int, np.integer)) else start)
        here = k.reshape(here, [1] * b + [shape[b]] + [1] * (len(shape) - b - 1))
        mask = here if mask is None else k.logical_and(mask, here)
    return k.where(k.broadcast_to(mask, shape), k.broadcast_to(value, shape), part)


def _set_indexed(tensor, entries, shape, value):
    """tensor[entries] = value for ints, slices and traced integer scalars (x[i, j] = v in a
    loop): one scatter per indexed axis into a part of the array (single positions after the
    first: a where, _masked_positions), the outermost into the array itself, which the scheduler
    updates in place; not a scatter into a flattened copy."""
    plan, target, axis = [], [], 0
    for entry in entries:
        size = shape[axis]
        if isinstance(entry, TracedArray):
            plan.append((_position(entry, size, axis).tensor, 1, 1))
        elif isinstance(entry, int):
            index = entry + size if entry < 0 else entry
            if not 0 <= index < size:
                raise IndexError(f"index {entry} is out of bounds for axis {axis} with size "
                                 f"{size}")
            plan.append((index, 1, 1))
        else:
            start, stop, step = entry.indices(size)
            length = len(range(start, stop, step))
            target.append(length)
            plan.append(None if (start, length, step) == (0, size, 1) else (start, length, step))
        axis += 1
    k = _k()
    value = k.broadcast_to(cast(_fit_value(value, target), tensor.dtype), target)
    value = k.reshape(value, [n if p is None else p[1] for n, p in zip(shape, plan)])
    return _scatter(tensor, plan, value, 0)


def stripped_to_fit(shape, target, strip=True):
    """`shape` without the extra leading size-1 axes NumPy drops from an assigned value (when
    `strip`), if it then broadcasts to `target`; None if it does not."""
    stripped = tuple(shape)
    while strip and len(stripped) > len(target) and stripped[0] == 1:
        stripped = stripped[1:]
    try:
        return stripped if np.broadcast_shapes(stripped, tuple(target)) == tuple(target) else None
    except ValueError:
        return None


def _fit_value(value, shape):
    """value reshaped to broadcast against the indexing result `shape` (NumPy drops the value's
    extra leading size-1 axes), or NumPy's ValueError."""
    value_shape = tuple(value.shape)
    stripped = stripped_to_fit(value_shape, shape)
    if stripped is None:
        raise ValueError(f"shape mismatch: value array of shape {_shape_text(value_shape)} could "
                         f"not be broadcast to indexing result of shape {_shape_text(shape)}")
    return _k().reshape(value, list(stripped)) if stripped != value_shape else value


def setitem(x, key, value):
    key = _assumed_numbers.as_index(key)
    value = _assumed_numbers.as_stored(value, x.dtype)
    if (isinstance(x._selection, _windows.Window)  # v[0] = s of a window v
            and _window_indexing.set_window_elements(x, _normal_key(key), value, setitem)):
        return
    key = _windows.unit_slices(_windows.data_bounds_read(_normal_key(key)), x.shape)
    if _windows.has_moving_bounds(key):
        fixed = _window_indexing.fixed_extents(x, key, getitem)
        if fixed is not None:   # written through the view
            return setitem(fixed, Ellipsis, value)
        return _windows.setitem(x, key, value, getitem, setitem)
    if _masked_selections.assign_at(  # y[np.flatnonzero(m)] = v in a loop
            x, key, value, lambda v: stored_scalar(v, x.dtype, advanced=True)):
        return
    context, shape = x._context, x.shape
    traced_mask = isinstance(key, TracedArray) and key.dtype == np.bool_
    if traced_mask:
        value = stored_scalar(value, x.dtype, advanced=True)
    if isinstance(value, TracedArray) and value._selection is not None and not traced_mask:
        value = value._materialized_selection()
    if traced_mask:
        mask = _expand_mask(key, x)
        if isinstance(value, TracedArray) and value._selection is not None:
            if (not context.same_mask(value._selection.tensor, key.tensor)
                    or value._unmasked().shape != x.tensor.shape):
                graph_break("x[mask] = y[other_mask]: the values' placement depends on the masks")
            new = value._unmasked()  # x[m] = y[m]: where(m, y, x)
        elif isinstance(value, TracedArray) or np.ndim(value) == 0:
            new = to_tensor(context, _mask_broadcast(value, x.ndim - key.ndim), x.dtype,
                            "setitem")
        else:
            graph_break("x[mask] = array: the values' placement depends on the mask")
        x._assign(_k().where(mask.tensor, cast(new, x.dtype), x.tensor))
        return
    if _has_bool_scalar(key):
        graph_break("assignment through a boolean scalar index")
    entries, split = _expand(key, shape)
    entries = _break_indices.lifted_entries(x, entries, shape)
    scalar_indices = all(not _is_array(e) or isinstance(e, TracedArray) and e._scalar and
                         e.ndim == 0 and e.dtype.kind in "iu" for e in entries if e is not None)
    value = stored_scalar(value, x.dtype, advanced=not scalar_indices)
    new = to_tensor(context, value, x.dtype, "setitem")
    if not any(_is_array(e) for e in entries):
        x._assign(_set_basic(x.tensor, entries, shape, new))
        return
    if _mask_entry(entries) is not None:
        graph_break("x[..., mask, ...] = v with a traced mask among other indices")
    if scalar_indices and all(e is not None for e in entries):  # no == on tracers
        x._assign(_set_indexed(x.tensor, entries, shape, new))
        return
    plan = _Advanced(x, entries, split)
    part = plan.put(_fit_value(new, plan.result_shape))
    x._assign(_set_basic(x.tensor, plan.basic, shape, part))


def add_at(x, key, value, negate=False):
    """np.add.at(x, key, value): x[key] += value, unbuffered (a repeated index adds each of its
    values), as one scatter-add (np.subtract.at: `negate`, -value in x's dtype, wrapping as
    NumPy's does); the caller has checked that the sum is in x's own dtype."""
    key = _normal_key(key)
    entries, split = _expand(key, x.shape)
    if _mask_entry(entries) is not None:
        graph_break("np.add.at with a traced boolean mask")
    new = to_tensor(x._context, value, x.dtype, "np.add.at")
    if negate:
        new = (-TracedArray(x._context, new)).tensor
    if not any(_is_array(e) for e in entries):   # no index repeats: x[key] += value
        x[key] = x[key] + TracedArray(x._context, new)
        return
    plan = _Advanced(x, entries, split)
    part = plan.put(_fit_value(new, plan.result_shape), accumulate=True)
    x._assign(_set_basic(x.tensor, plan.basic, x.shape, part))
