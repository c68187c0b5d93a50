"""x[key] and x[key] = value on tracers: basic indexing (ints, slices with steps, negative
indices, None, Ellipsis) as views, integer arrays through take/index_put, and boolean masks:
a concrete mask becomes integer indices; a traced mask selects lazily (x[m] = v and x[m] += v
become where(m, v, x); any other use of x[m] has a data-dependent shape: a graph break)."""
import numpy as np

from ._tracer import TracedArray, backend, cast, graph_break, materialize_all, to_tensor


def _k():
    return backend()


def _expand(key, ndim):
    """The key as a list: ints, slices, None, and arrays (concrete or traced), no Ellipsis."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    for item in key:
        if isinstance(item, (list,)) or (isinstance(item, np.ndarray) and item.ndim > 0):
            item = np.asarray(item)
            if item.dtype == np.bool_:
                entries.extend(np.nonzero(item))
                continue
        elif isinstance(item, (np.integer,)):
            item = int(item)
        elif not (item is None or item is Ellipsis or isinstance(item, (int, slice, TracedArray))):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
        entries.append(item)
    used = sum(1 for e in entries if e is not None and e is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{used} were indexed")
    if Ellipsis in [e for e in entries if not isinstance(e, (np.ndarray, TracedArray))]:
        position = next(i for i, e in enumerate(entries) if e is Ellipsis)
        entries[position:position + 1] = [slice(None)] * (ndim - used)
    entries += [slice(None)] * (ndim - sum(1 for e in entries if e is not None))
    return entries


def _is_array(entry):
    return isinstance(entry, (np.ndarray, TracedArray))


def _basic(tensor, entries, shape):
    """Applies ints, slices and None (arrays' axes kept whole); returns tensor and new shape."""
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
    x._check_plain("indexing")
    context, shape = x._context, x.shape
    if isinstance(key, TracedArray) and key.dtype == np.bool_:
        if key.shape != shape[:key.ndim]:
            raise IndexError("boolean index did not match indexed array")
        return TracedArray(context, x.tensor, mask=key)
    entries = _expand(key, len(shape))
    if _mask_entry(entries) is not None:
        values = materialize_all((x, entries), "boolean mask indexing has a data-dependent shape")
        return values[0][tuple(values[1])]
    arrays = [i for i, e in enumerate(entries) if _is_array(e)]
    if not arrays:
        result = x._make_view(_basic(x.tensor, entries, shape),
                              lambda root: _basic(root, entries, shape),
                              lambda root, value: _set_basic(root, entries, shape, value))
        result._scalar = all(isinstance(e, int) for e in entries) and len(entries) == len(shape)
        return result
    return _advanced(x, entries, shape)


def _expand_mask(mask, x):
    """The mask as a traced bool array broadcastable against x."""
    extra = x.ndim - mask.ndim
    if extra == 0:
        return mask
    return TracedArray(mask._context, _k().reshape(mask.tensor, list(mask.shape) + [1] * extra))


def _advanced(x, entries, shape):
    """One integer array (others: graph break) along one axis, after the basic part."""
    if sum(1 for e in entries if _is_array(e)) != 1 or any(
            isinstance(e, int) or e is None for e in entries):
        values = materialize_all((x, entries), "multi-array advanced indexing")
        return values[0][tuple(values[1])]
    k = _k()
    axis = next(i for i, e in enumerate(entries) if _is_array(e))
    basic = [slice(None) if _is_array(e) else e for e in entries]
    tensor = _basic(x.tensor, basic, shape)
    size = tensor.shape[axis]
    index = entries[axis]
    if isinstance(index, np.ndarray):
        if index.size and (index.max() >= size or index.min() < -size):
            bad = index[(index >= size) | (index < -size)][0]
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
        index_tensor = x._context.lift(np.where(index < 0, index + size, index).astype(
            np.int64)).tensor
    else:
        index_tensor = cast(index.tensor, np.int64)
        index_tensor = k.where(k.less(index_tensor, 0.0), k.add(index_tensor, float(size)),
                               index_tensor)
    return TracedArray(x._context, k.take(tensor, index_tensor, axis))


def _indices(like, start, length, step):
    k = _k()
    index = k.arange(like, length, "int64")
    if step != 1:
        index = k.multiply(index, float(step))
    if start:
        index = k.add(index, float(start))
    return index


def _set_basic(tensor, entries, shape, value):
    """tensor with tensor[entries] replaced by value (broadcast), entries basic only."""
    k = _k()
    target = _basic(tensor, entries, shape)
    value = k.broadcast_to(cast(value, tensor.dtype), list(target.shape))
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
        part = k.take(tensor, index, axis)
        inner = _scatter(part, plan, value, axis + 1)
    return k.index_put(tensor, index, inner, axis, False)


def setitem(x, key, value):
    context, shape = x._context, x.shape
    traced_mask = isinstance(key, TracedArray) and key.dtype == np.bool_
    if isinstance(value, TracedArray) and value._mask is not None and not traced_mask:
        value = value._materialized_selection()
    if traced_mask:
        mask = _expand_mask(key, x)
        if isinstance(value, TracedArray) and value._mask is not None:
            new = value.tensor
        elif isinstance(value, TracedArray) or np.ndim(value) == 0:
            new = to_tensor(context, value, x.dtype, "setitem")
        else:
            graph_break("x[mask] = array: the values' placement depends on the mask")
        x._assign(_k().where(mask.tensor, cast(new, x.dtype), x.tensor))
        return
    entries = _expand(key, len(shape))
    new = to_tensor(context, value, x.dtype, "setitem")
    arrays = [i for i, e in enumerate(entries) if _is_array(e)]
    if not arrays:
        x._assign(_set_basic(x.tensor, entries, shape, new))
        return
    if len(arrays) != 1 or any(isinstance(e, int) or e is None for e in entries) or _mask_entry(
            entries) is not None:
        graph_break("this advanced-index assignment is not supported by kiln")
    axis = arrays[0]
    index = entries[axis]
    size = shape[axis]
    if isinstance(index, np.ndarray):
        index_tensor = context.lift(np.where(index < 0, index + size, index).astype(
            np.int64)).tensor
    else:
        k = _k()
        index_tensor = cast(index.tensor, np.int64)
        index_tensor = k.where(k.less(index_tensor, 0.0), k.add(index_tensor, float(size)),
                               index_tensor)
    basic = [slice(None) if _is_array(e) else e for e in entries]
    part = _basic(x.tensor, basic, shape)
    updated = _k().index_put(part, index_tensor, new, axis, False)
    x._assign(_set_basic(x.tensor, basic, shape, updated))
