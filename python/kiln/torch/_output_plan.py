"""The output plan of a compiled FX graph (kiln.torch._lowering.CompiledGraph): how each FX
output comes back from a call. One entry per output: a kiln output ("kiln", or "kiln
channels-last" where the graph computes it channels-last inside), an input returned as it is
("input"), a view of an input (_output_views), a view of another output's memory ("view": eager
returns y and y.view(-1) sharing memory), a size computed from the graph's symbols ("kiln
number") or a constant; then one ("mutation", ...) per input the graph updates in place."""
import torch

from .. import _kiln
from ._aten_table import Unconvertible, meta
from ._output_views import OutputView, input_view, symbolic_layout, whole_row_major
from ._saved_layouts import channels_first_order, channels_last_inside, channels_last_order


def _static_layout(value):
    return all(type(number) is int
               for number in (*value.shape, *value.stride(), value.storage_offset()))


def _hint(extent):
    """A size or stride as a number: a SymInt's value at the trace's sizes (None if unknown)."""
    if isinstance(extent, int):
        return extent
    return getattr(getattr(extent, "node", None), "hint", None)


def permuted_storage_order(value):
    """The logical axes of tensor `value`, outermost first, in its memory when that memory is a
    permuted row-major tensor (dense, no gaps or overlaps) and not row-major itself; else None.
    Axes of size 1 go first: where they lie changes no other axis's stride."""
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.dim() < 2:
        return None
    shape = [_hint(extent) for extent in value.shape]
    strides = [_hint(stride) for stride in value.stride()]
    if None in shape or None in strides or 0 in shape:
        return None
    ones = [axis for axis in range(value.dim()) if shape[axis] == 1]
    order = sorted((axis for axis in range(value.dim()) if shape[axis] > 1),
                   key=lambda axis: (-strides[axis], axis))
    if order == sorted(order):
        return None  # row-major but for its sizes of 1
    expected = 1
    for axis in reversed(order):
        if strides[axis] != expected:
            return None
        expected *= shape[axis]
    return ones + order


def inverse_permutation(order):
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return inverse


def _memory_owners(graph, results, converted, free_layouts=()):
    """{FX output position: owner node} for the outputs that share memory with another output
    (views of one another: y, y.view(-1), y[0], y.t(), as eager returns them) or are views of
    an intermediate (y.sum(0).expand(3, 5): eager's strides, no copy). The owner is the
    node that made the memory, when kiln computes it whole and row-major (its layout as a kiln
    output), of the outputs' dtype; a call returns the outputs as views of it. `free_layouts`:
    positions whose strides kiln chooses (_saved_layouts.py)."""
    shared = {}  # storage -> positions
    for position, result in enumerate(results):
        value = meta(result) if isinstance(result, torch.fx.Node) else None
        if (isinstance(value, torch.Tensor) and value.layout == torch.strided
                and result in converted):
            shared.setdefault(value.untyped_storage()._cdata, []).append(position)
    owners = {}
    for node in graph.nodes:  # the first node of a memory made it (an input's: not kiln's)
        if not shared:
            break
        value = meta(node)
        if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
            continue
        positions = shared.pop(value.untyped_storage()._cdata, None)
        if positions == [position for position, result in enumerate(results) if result is node]:
            continue  # an output that is its memory's only view: no view to make
        if positions and len(positions) == 1 and positions[0] in free_layouts:
            continue  # a view only the backward reads: kiln's layout (channels-last) serves
        if positions and node.op == "call_function" and node in converted and whole_row_major(
                value):
            owners.update((position, node) for position in positions
                          if meta(results[position]).dtype == value.dtype)
    return owners


def output_plan(context, output_node, converted, placeholders, free_layouts, mutations=()):
    """The plan's entries: one per FX output, then ("mutation", (kiln output, dtype, input))
    per input the graph mutates. A size the graph computes from its symbols (Swin's padded
    sides, which Python reads after the graph) is a 0-d kiln output, read as a number. Outputs
    that share memory are ("view", (kiln output, dtype, shape, strides, offset)) of the kiln
    output of their memory's owner (_memory_owners; one after the plan's when the owner is no
    FX output)."""
    results = output_node.args[0]
    single = not isinstance(results, (list, tuple))
    results = [results] if single else list(results)
    outputs, plan = [], []
    input_position = {node: position for position, node in enumerate(placeholders)}
    # an input mutation's copy_ the graph returns is its input (copy_ returns it), whose new
    # value the call writes into it after the run (the plan's "mutation" entries)
    input_position.update((copy, input_position[copy.args[0]]) for copy, _ in mutations)
    free_layouts = set(range(len(results))[free_layouts]) if free_layouts is not None else ()
    computed_channels_last = {}
    owners = _memory_owners(output_node.graph, results, converted, free_layouts)
    owner_outputs = {}  # owner node -> its kiln output
    for position, result in enumerate(results):
        if position in owners:
            if result is owners[position] and result not in owner_outputs:
                owner_outputs[result] = len(outputs)
                plan.append(("kiln", (len(outputs), meta(result).dtype)))
                outputs.append(converted[result])
            else:
                plan.append(None)  # a view, once every owner has its output
        elif isinstance(result, torch.fx.Node) and result in input_position:
            plan.append(("input", input_position[result]))
        elif (position in free_layouts and isinstance(result, torch.fx.Node)
              and channels_last_inside(result, computed_channels_last)):
            rank = meta(result).dim()
            plan.append(("kiln channels-last", (len(outputs), meta(result).dtype,
                                                channels_first_order(rank))))
            outputs.append(_kiln.transpose(converted[result], channels_last_order(rank)))
        elif isinstance(result, torch.fx.Node) and isinstance(meta(result), torch.SymInt):
            size = converted[result]
            if isinstance(size, int):
                plan.append(("constant", size))
            else:
                plan.append(("kiln number", (len(outputs), torch.int64)))
                outputs.append(context.full((), size, torch.int64))
        elif (isinstance(result, torch.fx.Node)
              and (view := input_view(result, output_node.graph)) is not None):
            plan.append(("input view", view))
        elif (isinstance(result, torch.fx.Node) and position not in free_layouts
              and (physical := permuted_storage_order(meta(result))) is not None):
            # eager's layout, a permutation of a row-major tensor (x.permute(0, 3, 1, 2) * 2):
            # code after the graph may view it (a backward compiled for these strides does)
            plan.append(("kiln channels-last", (len(outputs), meta(result).dtype,
                                                inverse_permutation(physical))))
            outputs.append(_kiln.transpose(converted[result], physical))
        elif isinstance(result, torch.fx.Node):
            plan.append(("kiln", (len(outputs), meta(result).dtype)))
            outputs.append(converted[result])
        else:
            plan.append(("constant", result))
    for position, owner in owners.items():
        if plan[position] is None:
            if owner not in owner_outputs:
                owner_outputs[owner] = len(outputs)
                outputs.append(converted[owner])
            value = meta(results[position])
            if _static_layout(value):
                plan[position] = ("view", (owner_outputs[owner], value.dtype, tuple(value.shape),
                                           tuple(value.stride()), value.storage_offset()))
                continue
            # sizes of symbols: AOTAutograd rebuilds a view of another output from the tensor
            # returned here (as_strided with its strides), so it must be that view
            sizes, strides, offset, places = symbolic_layout(value, output_node.graph)
            if places is None:
                raise Unconvertible("an output viewing another output's memory, its layout of "
                                    "sizes the arguments do not hold")
            plan[position] = ("output view", OutputView(owner_outputs[owner], sizes, strides,
                                                        offset, places))
    for copy, value in mutations:
        plan.append(("mutation", (len(outputs), meta(copy.args[0]).dtype,
                                  input_position[copy.args[0]])))
        outputs.append(value)
    return outputs, plan, single
