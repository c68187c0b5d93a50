"""The inputs a torch graph mutates (an optimizer's parameters and moments, batch norm's running
statistics, a cache's index_copy_): AOTAutograd keeps the mutation in the graph
(keep_inference_input_mutations), whose extra outputs are the new values. kiln writes a new
value into its input where it can (the input donated to it: sched/donated_outputs.h) and copies
the others in after the run."""
import torch


def donations(count, graph, inputs=None):
    """By kiln output (`count` of them) of `graph` (a CompiledGraph): the kiln input whose
    memory it may be written into, the input it is the new value of, or -1. None with size
    symbols (a size's run returns new arrays), nor for a GPU graph's CPU tensors (copied in each
    call) or where a GPU graph's `inputs` are unknown (a warm-start record)."""
    donated = [-1] * count
    if graph.symbolic or (graph.on_cuda and inputs is None):
        return donated
    kiln_input = {position: k for k, position in enumerate(graph.tensor_positions)}
    for index, position in graph._mutations:
        k = kiln_input.get(position)
        if k is not None and (not graph.on_cuda or inputs[k].device.type == "cuda"):
            donated[index] = k
    return donated


def split_mutations(graph, compiled):
    """`graph`'s mutations as `compiled` makes them: ((kiln output, input position) written
    into the input, those copied in after the run)."""
    in_place = [(index, graph.tensor_positions[k]) for index, k in compiled.in_place_outputs]
    written = {index for index, _ in in_place}
    return in_place, [pair for pair in graph._mutations if pair[0] not in written]


def write_mutations(copied, in_place, lazy, args, inputs, results):
    """The new values of the mutated inputs written into them: those `copied` ((kiln output,
    input position)) by a _foreach_copy_ per dtype (the `lazy` positions, negated or
    conjugated inputs read through resolved copies `inputs`, by copy_, which _foreach_copy_
    refuses); those kiln wrote `in_place` get their version counters bumped as copy_ would
    (autograd's check of the tensors it saved), a lazy one its resolved copy copied back."""
    targets, values = [], []
    for index, position in copied:
        if position in lazy:
            args[position].copy_(results[index])
        else:
            targets.append(args[position])
            values.append(results[index])
    if targets:
        _copy_into(targets, values)
    if in_place:
        torch._C._increment_version([args[position] for _, position in in_place])
        for _, position in in_place if lazy else ():
            if position in lazy:
                args[position].copy_(inputs[position])


def _copy_into(targets, values):
    """targets[k].copy_(values[k]) for every k, one _foreach_copy_ per dtype: a list of mixed
    dtypes (batch norm's float statistics and int64 batch counts) takes torch's slow path, a
    copy_ each (60 a resnet18 training step, 0.45 ms of host time on a GPU)."""
    by_dtype = {}
    for target, value in zip(targets, values):
        group = by_dtype.setdefault((target.dtype, value.dtype), ([], []))
        group[0].append(target)
        group[1].append(value)
    for group_targets, group_values in by_dtype.values():
        torch._foreach_copy_(group_targets, group_values)
