"""In-place ops on a graph's own fresh tensors, as their functional twins.

torchvision's ReLU(inplace=True) traces to aten.relu_ on the convolution's result: a mutation,
so the one-trace export (_backend._traced_once) used to hand resnet18 to AOTAutograd's
functionalising export, which traces it twice (0.34 s of 0.79 s on a 2-core Xeon). Where the
mutated tensor is one the graph made itself and nothing else shares its memory (no input, no
view of it), `relu_(x)` is `y = relu(x)` with x's later uses reading y: what functionalisation
would write.
"""
import collections

import torch
from torch.multiprocessing.reductions import StorageWeakRef


def _functional_twin(target, table):
    """aten.relu_.default -> aten.relu.default, where kiln converts that; else None."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.name.startswith("aten::") or not schema.name.endswith("_"):
        return None
    packet = getattr(torch.ops.aten, schema.name[len("aten::"):-1], None)
    twin = getattr(packet, target._overloadname, None) if packet is not None else None
    return twin if twin in table else None


def _storage(node):
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return StorageWeakRef(value.untyped_storage()) if isinstance(value, torch.Tensor) else None


def functionalize_fresh_in_place(graph_module, input_storages, fake_mode, table):
    """Rewrites each in-place op of `graph_module` whose mutated tensor (its first argument) the
    graph made itself, in no input's memory and sharing it with no other value, into its
    functional twin when that computes the same shape and dtype; later uses of the tensor read
    the result. Returns the graph module."""
    nodes = list(graph_module.graph.nodes)
    position = {node: k for k, node in enumerate(nodes)}
    sharing = collections.Counter(storage.cdata for storage in map(_storage, nodes) if storage)
    for node in nodes:
        if node.op != "call_function" or not node.args:
            continue
        twin = _functional_twin(node.target, table)
        mutated = node.args[0]
        if twin is None or not isinstance(mutated, torch.fx.Node) or mutated.op != "call_function":
            continue
        storage = _storage(mutated)
        if storage is None or any(storage == other for other in input_storages):
            continue
        if sharing[storage.cdata] != 2:  # the tensor and this op's result alone: a view of
            continue                     # it, or another in-place op on it, would see the change
        fake = lambda a: a.meta["val"] if isinstance(a, torch.fx.Node) else a  # noqa: E731
        with fake_mode:
            result = twin(*torch.fx.node.map_aggregate(node.args, fake),
                          **torch.fx.node.map_aggregate(node.kwargs, fake))
        before = mutated.meta["val"]
        if (not isinstance(result, torch.Tensor) or result.shape != before.shape
                or result.dtype != before.dtype):
            continue  # (an integer tensor times a float in place stays integer)
        node.target = twin
        node.meta["val"] = result
        for user in list(mutated.users):
            if user is not node and position[user] > position[node]:
                user.replace_input_with(mutated, node)
    graph_module.recompile()
    return graph_module
