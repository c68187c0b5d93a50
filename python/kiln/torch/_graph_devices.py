"""Which device an FX graph runs on, and which of its results torch computed on the CPU beside
a GPU's (see graph_devices)."""
import torch

from ._aten_table import meta


def graph_devices(graph_module):
    """The devices an FX graph computes on: its accelerators' ({"cuda:0"}; more than one is
    several devices), else {"cpu"} (empty: no tensors). CPU tensors beside an accelerator's are
    what torch lets mix with them (0-d numbers, index tensors, a position table `arange` builds
    on the CPU): the kiln graph computes them on the accelerator, CompiledGraph copies CPU
    inputs there and returns CPU outputs to the CPU (mvit, swin and raft ran wholly eagerly)."""
    devices = set()
    for node in graph_module.graph.nodes:
        values = meta(node) if node.op in ("placeholder", "call_function", "get_attr") else None
        for value in values if isinstance(values, (tuple, list)) else [values]:
            if isinstance(value, torch.Tensor) and value.device.type != "meta":
                devices.add(str(value.device))
    accelerators = devices - {"cpu"}
    return accelerators or devices


def host_outputs(graph_module):
    """The positions of an FX graph's outputs that are CPU tensors (see graph_devices)."""
    output = next(node for node in graph_module.graph.nodes if node.op == "output").args[0]
    results = output if isinstance(output, (tuple, list)) else [output]
    return [position for position, result in enumerate(results)
            if isinstance(result, torch.fx.Node) and isinstance(meta(result), torch.Tensor)
            and meta(result).device.type == "cpu"]
