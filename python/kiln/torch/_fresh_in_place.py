"""In-place ops on a graph's own fresh tensors, as their functional twins.

torchvision's ReLU(inplace=True) traces to aten.relu_ on the convolution's result: a mutation,
so the one-trace export (_backend._traced_once) used to hand resnet18 to AOTAutograd's
functionalising export, which traces it twice (0.34 s of 0.79 s on a 2-core Xeon). Where the
mutated tensor is one the graph made itself and nothing else shares its memory (no input, no
view of it), `relu_(x)` is `y = relu(x)` with x's later uses reading y: what functionalisation
would write. In-place ops in a row on that tensor go alike (resnet's `out += identity` then
ReLU(inplace=True), as it traces on CUDA: that graph took the two traces there, 0.69 s of
resnet18's first call on an H100 host).
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


def _in_place_on(node, before, table):
    """Whether `node` is an in-place op (with a functional twin kiln converts) on `before`."""
    return (node.op == "call_function" and bool(node.args) and node.args[0] is before
            and _functional_twin(node.target, table) is not None)


def _as_twin(node, mutated, fake_mode, table, position):
    """Rewrites in-place `node` on `mutated` into its functional twin, later uses of `mutated`
    reading the result; False (and nothing changed) where the twin's shape or dtype differ."""
    twin = _functional_twin(node.target, table)
    fake = lambda a: a.meta["val"] if isinstance(a, torch.fx.Node) else a  # noqa: E731
    with fake_mode:
        result = twin(*torch.fx.node.map_aggregate(node.args, fake),
                      **torch.fx.node.map_aggregate(node.kwargs, fake))
    before = mutated.meta["val"]
    if (not isinstance(result, torch.Tensor) or result.shape != before.shape
            or result.dtype != before.dtype):
        return False  # (an integer tensor times a float in place stays integer)
    node.target = twin
    node.meta["val"] = result
    for user in list(mutated.users):
        if user is not node and position[user] > position[node]:
            user.replace_input_with(mutated, node)
    return True


def functionalize_fresh_in_place(graph_module, input_storages, fake_mode, table):
    """Rewrites the in-place ops of `graph_module` on a tensor the graph made itself, in no
    input's memory, into their functional twins where every value that shares its memory is
    that tensor or one of those ops, each on the one before (`out += x; relu_(out)`: a
    view of it would see the change); later uses read the results. Returns the graph module."""
    nodes = list(graph_module.graph.nodes)
    position = {node: k for k, node in enumerate(nodes)}
    sharing = collections.defaultdict(list)  # by storage, in graph order: its maker first
    for node in nodes:
        storage = _storage(node)
        if storage is not None:
            sharing[storage.cdata].append((node, storage))
    for group in sharing.values():
        chain = [node for node, _ in group]
        maker, storage = group[0]
        if (len(chain) < 2 or maker.op != "call_function"
                or any(storage == other for other in input_storages)
                or not all(_in_place_on(node, before, table)
                           for before, node in zip(chain, chain[1:]))):
            continue
        for before, node in zip(chain, chain[1:]):
            if not _as_twin(node, before, fake_mode, table, position):
                break  # the ops after it still write the maker's memory: left as they are
    graph_module.recompile()
    return graph_module
