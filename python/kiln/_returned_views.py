"""Results that are an argument array itself or a view of one, or a view of another result,
returned as NumPy returns them.

NumPy's `return a` gives the caller its own array (`f(x) is x`), and `return a.T`, `a[1:]`,
`a.reshape(-1)` (where NumPy's reshape views), `np.flip(a)` or `np.broadcast_to(a, ...)` give
views of the caller's memory: a later write through the result reaches x, and x.base-style
checks see the link. Likewise `b = a * 2; return b, b[0]` gives a second result that views the
first. A graph's outputs are new arrays, so such a result is not an output of the graph: its
spec leaf (built by src/python/output_spec.cpp) names the array it views, an argument by its
position among the call's arrays (ArgumentView) or another result by its graph output
(ResultView), and the view's layout in that array's memory: the offset of its first element and
its strides, in elements (the tracer's _offset and _strides, kiln._memory_layout), its shape,
and whether NumPy's view is read-only where the array is not (a broadcast). An argument's layout
is part of the cache entry's guard and a result's is row-major, so the view's layout is fixed
per entry. Views kiln does not follow exactly (a layout it does not know, a reshape NumPy may
copy, as_strided's hidden base, a view chosen by a traced condition) and calls whose arguments
share memory (kiln._aliasing) keep the copy.
"""
from ._memory_layout import c_contiguous, c_strides, strides_of
from ._tracer import TracedArray, backend


class ArgumentView:
    """An output spec leaf: the call's array argument `_kiln_argument` (its position among the
    arrays), itself where `_kiln_view` is None, else its view (offset, shape, strides,
    read_only)."""
    __slots__ = ("_kiln_argument", "_kiln_view")

    def __init__(self, argument, view=None):
        self._kiln_argument = argument
        self._kiln_view = view


class ResultView:
    """An output spec leaf: the view `_kiln_view` (offset, shape, strides, read_only) of graph
    output `_kiln_result`, a row-major array the result returns too."""
    __slots__ = ("_kiln_result", "_kiln_view")

    def __init__(self, result, view):
        self._kiln_result = result
        self._kiln_view = view


def argument_positions(inputs, aliased):
    """By id of its tracer, the position of each array argument among the call's arrays
    (trace_inputs' `inputs`): none where arguments share memory, whose tracers are views of
    one flat input kiln made."""
    return {} if aliased else {id(tracer): position
                               for position, (_, tracer) in enumerate(inputs)}


def _viewable(leaf):
    return (isinstance(leaf, TracedArray) and not leaf._scalar and leaf._weak is None
            and leaf._selection is None and leaf._tensor is not None)


def _layout(leaf, root):
    """(offset, shape, strides, read_only) of the view `leaf` of `root`, None where kiln does
    not know it as NumPy lays it out."""
    strides = strides_of(leaf)
    if (strides is None or leaf._offset is None or leaf._maybe_copy or leaf._hidden_base
            or leaf.dtype != root.dtype):
        return None
    if not all(-2**63 <= int(value) < 2**63 for value in (leaf._offset, *strides)):
        return None  # (a step past int64, a[::2**70]: NumPy clamps it, a copy holds the same)
    shape = tuple(int(n) for n in leaf.shape)
    # Read-only where its array is (an argument's writeable flag is not part of its guard),
    # and where it broadcasts (a zero stride over several elements: only broadcast_to's here)
    broadcast = any(s == 0 and n > 1 for n, s in zip(shape, strides))
    read_only = broadcast or leaf._read_only and not root._read_only
    return int(leaf._offset), shape, tuple(int(s) for s in strides), bool(read_only)


def memory_ordered(leaf):
    """(the tensor of `leaf` transposed into NumPy's memory order, the layout of `leaf` as a
    view of it) for a new array NumPy lays out densely but not in C order (order="K" results
    of Fortran-ordered operands, asfortranarray, copy(order="F")); None otherwise. Its graph
    output is written in that order, so the caller gets NumPy's strides."""
    if not _viewable(leaf) or leaf._root is not None or leaf._argument:
        return None
    shape, strides = tuple(int(n) for n in leaf.shape), leaf._strides
    if not isinstance(strides, tuple) or c_contiguous(shape, strides):
        return None
    order = sorted(range(len(shape)), key=lambda d: -abs(strides[d]))
    packed = dict(zip(order, c_strides([shape[d] for d in order])))
    if any(strides[d] != packed[d] for d in range(len(shape)) if shape[d] > 1):
        return None
    return (backend().transpose(leaf.tensor, order),
            (0, shape, tuple(int(s) for s in strides), False))


def returned_view(leaf, positions, slot_of):
    """The spec leaf standing for the result leaf `leaf` where it is an argument (ArgumentView
    of `positions`, argument_positions'), a view of one, or a view of a row-major array the
    result returns as itself (ResultView of its graph output, `slot_of(root)`: None where the
    result does not return it); None otherwise."""
    if not _viewable(leaf):
        return None
    root = leaf._root if leaf._root is not None else leaf
    position = positions.get(id(root))
    if position is not None and root._argument:
        if leaf is root:
            return ArgumentView(position)
        layout = _layout(leaf, root)
        return None if layout is None else ArgumentView(position, layout)
    if leaf is root or root._argument or not _viewable(root):
        return None
    layout = _layout(leaf, root)
    if layout is None:
        return None
    slot = slot_of(root)
    if isinstance(slot, ResultView):  # (a result in NumPy's memory order: memory_ordered)
        slot = slot._kiln_result
    return ResultView(slot, layout) if type(slot) is int and slot >= 0 else None


def holds_argument_view(spec):
    """Whether the output spec `spec` has an ArgumentView leaf."""
    if isinstance(spec, ArgumentView):
        return True
    if type(spec) in (tuple, list):
        return any(holds_argument_view(part) for part in spec)
    if type(spec) is dict:
        return any(holds_argument_view(part) for part in spec.values())
    parts = getattr(spec, "_kiln_parts", None)  # Rebuilt
    return parts is not None and holds_argument_view(parts)
