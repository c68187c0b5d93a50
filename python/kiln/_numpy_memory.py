"""np.may_share_memory and np.shares_memory of traced arrays, answered as NumPy answers them on
the eager run, where each traced array is the ndarray it stands for.

NumPy's own code asks them of what np.asarray(x) gave and of x itself: Generator.permutation
copies x before shuffling only when the two share memory. So the ndarray a graph break hands
out for a traced value (materialize records it in context.handed_out) is that value's memory.
Memory is known by its root (TracedArray._root: views of one array share it): an argument's is
the caller's array (context.input_memory; kiln._aliasing puts overlapping arguments under one
root), any other array's is its own, new memory that no ndarray outside the trace holds.
Where the trace cannot know (a reshape NumPy may have copied, as_strided's hidden base, a view
of a handed-out ndarray), it is a graph break, never a guess.
"""
import math

import numpy as np

from ._graph_breaks import graph_break, materialize
from ._tracer import TracedArray, backend, traced

# What an array's memory is: a traced root (with the traced array that views it), or an
# ndarray outside the trace.
_OUTSIDE = None


def _memory(context, value, function):
    """(root, view): the TracedArray whose memory `value` lies in and the traced array that is
    `value`; (_OUTSIDE, ndarray) for an array outside the trace."""
    if isinstance(value, TracedArray):
        if value._hidden_base or value._maybe_copy or value._lazy is not None or (
                value._selection is not None and not isinstance(value._selection, TracedArray)):
            graph_break(f"{function} of an array whose memory kiln does not know")
        if value._selection is not None:  # x[mask] is a copy: memory of its own
            return value, value
        root = value
        while root._root is not None:
            root = root._root
        return root, value
    if isinstance(value, np.ndarray):
        for array, tracer in context.handed_out:
            if array is value:
                return _memory(context, tracer, function)
            if np.may_share_memory(value, array):
                graph_break(f"{function} of a view of an array a graph break handed to NumPy")
        return _OUTSIDE, value
    return _OUTSIDE, np.asarray(value)  # lists and numbers: new memory


def _outside_overlap(context, root, view, array, exact, function):
    """Whether the traced `view` (of `root`) and the ndarray `array` share memory."""
    memory = context.input_memory.get(id(root))
    if memory is None:  # a computed array: memory no ndarray outside the trace holds
        if context.in_body:  # a loop body's value may be an outer array: not known here
            graph_break(f"{function} inside a loop body")
        return False
    real = np.shares_memory if exact else np.may_share_memory
    if not real(memory, array):
        return False
    if view is root:
        return True
    graph_break(f"{function} of a view of an argument and an array overlapping the argument")


def _positions(context, view, root, function):
    """The flat positions in `root` of the elements of `view` (a concrete int64 array)."""
    shape = view._root_shape
    if any(not isinstance(size, int) for size in shape):
        graph_break(f"{function} of two views of one array at dynamic sizes")
    k = backend()
    iota = k.reshape(k.arange(context.anchor(), math.prod(shape), "int64"), list(shape))
    return np.asarray(materialize(traced(context, view._forward(iota)),
                                  f"{function} of two views of one array"))


def _traced_overlap(context, first, second, exact, function):
    (root, view), (other_root, other_view) = first, second
    if root is not other_root:
        if context.in_body and (context.input_memory.get(id(root)) is None or
                                context.input_memory.get(id(other_root)) is None):
            graph_break(f"{function} inside a loop body")
        return False  # arguments that overlap share one root (kiln._aliasing)
    if math.prod(view.shape) == 0 or math.prod(other_view.shape) == 0:
        return False
    if view is root or other_view is root or view is other_view:
        return True
    if view.dtype != root.dtype or other_view.dtype != root.dtype:
        graph_break(f"{function} of views of one array with another dtype")
    positions = _positions(context, view, root, function)
    other = _positions(context, other_view, root, function)
    if exact:
        return bool(np.intersect1d(positions, other).size)
    return bool(positions.min() <= other.max() and other.min() <= positions.max())


def _overlap(function, exact):
    def answer(context, a, b, max_work=None):
        first = _memory(context, a, function)
        second = _memory(context, b, function)
        if first[0] is _OUTSIDE and second[0] is _OUTSIDE:
            real = np.shares_memory if exact else np.may_share_memory
            return real(first[1], second[1])
        if first[0] is _OUTSIDE or second[0] is _OUTSIDE:
            (root, view), array = (second, first[1]) if first[0] is _OUTSIDE else (
                first, second[1])
            return _outside_overlap(context, root, view, array, exact, function)
        return _traced_overlap(context, first, second, exact, function)
    return answer


FUNCTIONS = {
    np.may_share_memory: _overlap("may_share_memory", exact=False),
    np.shares_memory: _overlap("shares_memory", exact=True),
}
