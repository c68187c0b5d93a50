"""The training partitioner, with the tensors the forward saves for the backward read before the
forward's input mutations.

A forward that mutates an input which needs no gradient (a module's step counter `self.n += 1`,
an EMA buffer updated in place) writes the new value back into the input at the graph's end
(`copy_(primals_1, add)`, AOTAutograd's keep_inference_input_mutations). Where the partitioner
saves that input for the backward (to recompute `primals_1 + 1` there, or because the gradient
reads the old value), the backward reads the mutated input: the gradient of `linear(x) * n`
came out as `(n + 1) * ...` (Inductor and aot_eager alike, pytorch/pytorch#197039). The forward
saves a copy of such an input instead, taken before the write: only the inputs both mutated
and saved pay a copy, once a call.
"""
import torch
from torch._functorch.partitioners import min_cut_rematerialization_partition

from ._compared_saves import save_compared_extrema_operands

aten = torch.ops.aten


def _mutated_inputs(graph):
    """The placeholders the graph writes into (copy_ into an input, AOTAutograd's epilogue)."""
    return {node.args[0] for node in graph.nodes
            if node.op == "call_function" and node.target is aten.copy_.default
            and node.args[0].op == "placeholder"}


def _input_read(node, mutated):
    """Whether `node` is a mutated input or a view of one (its memory is the input's)."""
    while True:
        if node in mutated:
            return True
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            return False
        if not node.target.is_view or not node.args:
            return False
        node = node.args[0]


def partition_reading_inputs_before_mutation(joint_module, joint_inputs, *, num_fwd_outputs,
                                             **options):
    """min_cut_rematerialization_partition, whose forward saves copies of mutated inputs (and
    the values compared with their maximum: _compared_saves.py)."""
    save_compared_extrema_operands(joint_module.graph)
    forward, backward = min_cut_rematerialization_partition(
        joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs, **options)
    graph = forward.graph
    mutated = _mutated_inputs(graph)
    if not mutated:
        return forward, backward
    output = graph.output_node()
    results = list(output.args[0])
    first_write = next(node for node in graph.nodes if node.target is aten.copy_.default
                       and node.args[0] in mutated)
    copies = {}
    for position in range(num_fwd_outputs, len(results)):
        saved = results[position]
        if not isinstance(saved, torch.fx.Node) or not _input_read(saved, mutated):
            continue
        if saved not in copies:
            with graph.inserting_before(first_write):
                copies[saved] = graph.call_function(aten.clone.default, (saved,))
            # a tensor of its own (kiln's output plan tells an input's views by their storage)
            copies[saved].meta = {**saved.meta, "val": saved.meta["val"].clone()}
        results[position] = copies[saved]
    if copies:
        output.args = (tuple(results),) + tuple(output.args[1:])
        forward.recompile()
    return forward, backward
