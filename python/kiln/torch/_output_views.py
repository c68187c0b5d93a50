"""Outputs that are views of one of the graph's tensor inputs (`x.flatten()[2:9]`, the pieces
of `x.view(-1).split(5)`): a call returns them as views of that input, as eager PyTorch does,
with the sizes, strides and storage offset torch recorded, at the call's sizes.

AOTAutograd rebuilds such an output from the input itself: by replaying the views, or, where a
view took a size symbol (the flatten of a tensor with dynamic sizes, in the graph Dynamo
handed over, even when kiln compiles it per size), by `as_strided` with the sizes, strides and
offset of the tensor the compiled graph returned. A copy computed by kiln has its own
(contiguous, offset 0): the output came out as the input's first elements.

Only the graph's own inputs are such bases. A part of a partitioned graph (_partition.py) also
takes tensors another part or an eager op computed: their strides are that part's (a kiln
output is contiguous where torch recorded a permuted view), so a view with the recorded strides
read the wrong elements (Funnel's saved attention operands). Its outputs over those are kiln's.

Outputs that are views of another output's memory (y and y[..., :1].expand_as(y)) are
rebuilt the same way when the graph has size symbols: an OutputView of the kiln output that
owns the memory (_output_plan._memory_owners), at the call's sizes.
"""
import sympy
import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ._aten_table import meta
from ._dynamic_sizes import locate_sizes

# A placeholder's meta key: its tensor is computed inside the outer graph (_partition.py), its
# layout unknown until the call.
COMPUTED_INPUT = "kiln_computed_input"


class InputView:
    """Makes the view of input `position` at a call's sizes: `sizes`, `strides` and `offset`
    (from the input's own storage offset) are ints or sympy expressions of the symbols that
    `places` finds in the arguments (_dynamic_sizes.locate_sizes)."""

    def __init__(self, position, sizes, strides, offset, places):
        self.position, self.places = position, places
        self.layout = (sizes, strides, offset)
        self._numbers = {}  # the symbols' values -> the layout in numbers

    def __call__(self, args, results=()):
        values = tuple(int(args[position] if dim is None else args[position].shape[dim])
                       for position, dim in self.places.values())
        numbers = self._numbers.get(values)
        if numbers is None:
            bound = {symbol: sympy.Integer(value) for symbol, value in zip(self.places, values)}

            def number(extent):
                return extent if isinstance(extent, int) else int(extent.xreplace(bound))
            sizes, strides, offset = self.layout
            numbers = self._numbers[values] = (
                [number(size) for size in sizes], [number(stride) for stride in strides],
                number(offset))
        base = self._base(args, results)
        sizes, strides, offset = numbers
        return base.as_strided(sizes, strides, base.storage_offset() + offset)

    def _base(self, args, results):
        return args[self.position]


class OutputView(InputView):
    """The view of kiln output `position` (the memory's owner) at a call's sizes."""

    def _base(self, args, results):
        return results[self.position]


def output_view(results, index, shape, strides, offset):
    """An output that is a view of kiln output `index` (the plan's "view": numbers)."""
    owner = results[index]
    return owner.as_strided(shape, strides, owner.storage_offset() + offset)


def symbolic_layout(value, graph, base_offset=0):
    """(sizes, strides, storage offset from `base_offset`, places) of tensor `value` as
    expressions of the size symbols, and where the arguments hold those (None: not all)."""
    sizes = [_expression(size) for size in value.shape]
    strides = [_expression(stride) for stride in value.stride()]
    offset = _expression(value.storage_offset()) - _expression(base_offset)
    symbols = set().union(*(extent.free_symbols for extent in (*sizes, *strides, offset)
                            if isinstance(extent, sympy.Expr)))
    return sizes, strides, offset, locate_sizes(graph, symbols)


def whole_row_major(value):
    """Whether tensor `value` is all of its memory, row-major from offset 0, its sizes numbers
    or size symbols."""
    expected = sympy.Integer(1)
    for size, stride in zip(reversed(value.shape), reversed(value.stride())):
        size, stride = _expression(size), _expression(stride)
        if size != 1 and sympy.simplify(stride - expected) != 0:
            return False
        expected = expected * size
    nbytes = _expression(value.untyped_storage().nbytes())
    return (_expression(value.storage_offset()) == 0
            and sympy.simplify(nbytes - expected * value.element_size()) == 0)


def _expression(extent):
    return extent.node.expr if isinstance(extent, torch.SymInt) else int(extent)


def input_view(result, graph):
    """An InputView for FX output `result` when it is a view of a tensor input of `graph` (the
    same storage and dtype) whose layout's symbols the arguments hold; else None."""
    value = meta(result)
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        return None
    storage = StorageWeakRef(value.untyped_storage())
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    for position, node in enumerate(placeholders):
        base = meta(node)
        if (isinstance(base, torch.Tensor) and base.layout == torch.strided
                and not node.meta.get(COMPUTED_INPUT) and base.dtype == value.dtype
                and StorageWeakRef(base.untyped_storage()) == storage):
            break
    else:
        return None
    sizes, strides, offset, places = symbolic_layout(value, graph, base.storage_offset())
    return None if places is None else InputView(position, sizes, strides, offset, places)
