"""Arguments that share memory (`f(a, a)`, `f(a, a[::2])`): traced so that a write through one
is seen by reads through the other, as in NumPy's sequential semantics.

The arrays of one call are grouped by overlapping memory. A group of identical arrays (same
memory, dtype, shape and strides) is one graph input with one tracer. Any other group becomes
one input over the memory the group spans (a flat array of the common dtype), and each member a
view of it: reads gather, writes scatter back through the view (the tracer's view machinery),
so the write-back to the caller's memory happens once. A group that cannot be described that way
(dtypes or offsets that do not line up) makes the call run eagerly: correct, never wrong.
The C++ guard (GuardedCache, any_overlap) keeps aliased and independent calls apart.
An array whose own elements share memory (as_strided with a zero or short stride) is read as
independent elements, which is right while it is only read; a call that writes one
(overlaps_itself, checked after the trace) runs eagerly: a later read of it must see what the
last write to each address left, which the graph's elements do not (its strides are guarded).
"""
import ctypes

import numpy as np

from . import _kiln


class AliasingUnsupported(Exception):
    """The arrays overlap in a way kiln does not trace (the call runs eagerly)."""


def _extent(array):
    """[lowest byte, one past the highest byte] of the array's elements."""
    low = high = array.__array_interface__["data"][0]
    if array.size == 0:
        return low, low
    for extent, stride in zip(array.shape, array.strides):
        span = (extent - 1) * stride
        if span < 0:
            low += span
        else:
            high += span
    return low, high + array.itemsize


def overlaps_itself(array):
    """Whether two elements of `array` may share memory (an as_strided view with a zero or
    short stride). Conservative: with the axes sorted by stride, each stride must step past
    all that the smaller ones span."""
    if array.size == 0:
        return False
    reach = array.itemsize
    for stride, extent in sorted((abs(s), n) for n, s in zip(array.shape, array.strides) if n > 1):
        if stride < reach:
            return True
        reach += stride * (extent - 1)
    return False


def groups(arrays):
    """Lists of indices of `arrays` whose memory overlaps (transitively); singletons omitted."""
    extents = [_extent(array) for array in arrays]
    order = sorted((i for i in range(len(arrays)) if extents[i][0] != extents[i][1]),
                   key=lambda i: extents[i][0])
    found, current, reach = [], [], None
    for index in order:
        low, high = extents[index]
        if current and low < reach:
            current.append(index)
            reach = max(reach, high)
        else:
            if len(current) > 1:
                found.append(current)
            current, reach = [index], high
    if len(current) > 1:
        found.append(current)
    return found


def _same_view(a, b):
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides)


def _flat_memory(low, high, dtype):
    """A writable 1-D array of `dtype` over the bytes [low, high) (owned by the caller's
    arrays, which outlive the call)."""
    count = (high - low) // dtype.itemsize
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(low)
    return np.frombuffer(buffer, dtype=dtype, count=count)


def view_index(k, like, shape, offset, strides):
    """int64 tensor of `shape`: offset + sum(i_d * strides[d]), the flat element positions."""
    index = None
    for axis, (extent, stride) in enumerate(zip(shape, strides)):
        term = k.arange(like, extent, "int64")
        if stride != 1:
            term = k.multiply(term, float(stride))
        term = k.reshape(term, [extent if d == axis else 1 for d in range(len(shape))])
        index = term if index is None else k.add(index, term)
    if index is None:
        index = k.arange(like, 1, "int64")
        index = k.reshape(index, [])
    if offset:
        index = k.add(index, float(offset))
    return k.broadcast_to(index, list(shape))


def trace_inputs(arrays, trace, tracer):
    """The graph inputs for the argument arrays of one call: (input arrays, [(input tensor, its
    tracer)] in the same order, one tracer per argument array, whether any overlapped). Raises
    AliasingUnsupported for overlaps that cannot be traced."""
    found = groups(arrays)
    member_of = {index: group for group in found for index in group}
    graph_arrays, graph_inputs, tracers = [], [], [None] * len(arrays)
    for index, array in enumerate(arrays):
        group = member_of.get(index)
        if group is None or all(_same_view(array, arrays[other]) for other in group):
            if group is not None and index != group[0]:
                tracers[index] = tracers[group[0]]  # f(a, a): one tracer for both
                continue
            tensor = trace.input(array.dtype.name, list(array.shape))
            tracers[index] = tracer.wrap(tensor, trace)
            _keep_read_only(array, tracers[index], tracer)
            note = getattr(tracer, "note_layout", None)  # a stand-in tracer may have none
            if note is not None:
                note(tracers[index], array)
            graph_arrays.append(array)
            graph_inputs.append((tensor, tracers[index]))
        elif index == group[0]:
            memory, tensor, base = _trace_group([arrays[i] for i in group], group, trace, tracer,
                                                tracers)
            graph_arrays.append(memory)
            graph_inputs.append((tensor, base))
    return graph_arrays, graph_inputs, tracers, bool(found)


def _trace_group(members, positions, trace, tracer, tracers):
    """(the flat memory array, its input tensor, its tracer); sets the members' tracers."""
    dtype = members[0].dtype
    itemsize = dtype.itemsize
    if any(member.dtype != dtype or any(s % itemsize for s in member.strides)
           for member in members):
        raise AliasingUnsupported("arguments that share memory with different dtypes or "
                                  "unaligned strides")
    extents = [_extent(member) for member in members]
    low, high = min(e[0] for e in extents), max(e[1] for e in extents)
    if any((member.__array_interface__["data"][0] - low) % itemsize for member in members):
        raise AliasingUnsupported("arguments that share memory at offsets that are not a "
                                  "multiple of the element size")
    memory = _flat_memory(low, high, dtype)
    tensor = trace.input(dtype.name, [memory.size])
    base = tracer.wrap(tensor, trace)
    k = _kiln
    for member, position in zip(members, positions):
        offset = (member.__array_interface__["data"][0] - low) // itemsize
        strides = [s // itemsize for s in member.strides]
        shape = list(member.shape)

        def forward(root, shape=shape, offset=offset, strides=strides):
            index = view_index(k, root, shape, offset, strides)
            return k.take(root, index, 0, check_bounds=False)

        def backward(root, value, shape=shape, offset=offset, strides=strides):
            index = k.reshape(view_index(k, root, shape, offset, strides), [-1])
            return k.index_put(root, index, k.reshape(value, [-1]), 0, False,
                               check_bounds=False)

        tracers[position] = base._make_view(forward(base.tensor), forward, backward,
                                            tuple(strides), offset=offset)
        tracers[position]._argument = True
        # The shared memory is traced as one writable array: a member NumPy would refuse to
        # write still refuses.
        _keep_read_only(member, tracers[position], tracer)
    return memory, tensor, base


def _keep_read_only(array, traced, tracer):
    mark = getattr(tracer, "mark_read_only", None)  # a stand-in tracer may have none
    if mark is not None and not array.flags.writeable:
        mark(traced)
