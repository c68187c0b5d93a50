"""Graphs with dynamic sizes (SymInt inputs, symbolic tensor shapes), as Dynamo hands them over
with dynamic=True or after it saw a size change. They become one kiln graph with size symbols
(_size_symbols.py, CompiledGraph(symbolic=True)); this is the fallback for a graph an op of which
needs a number for a size (a convolution's geometry, a floor division): each distinct set of
concrete sizes gets its own compilation (the graph re-traced by make_fx with the call's real
tensors, every size a constant). KILN_LOGS=recompiles says when and why.
"""
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from .. import _kiln
from ._aten_table import meta


def has_dynamic_sizes(graph_module):
    for node in graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        value = meta(node)
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return True
        if isinstance(value, torch.Tensor) and any(
                not isinstance(extent, int) for extent in (*value.shape, *value.stride())):
            return True
    return False


def _size_key(args):
    return tuple((tuple(arg.shape), arg.stride(), arg.dtype) if isinstance(arg, torch.Tensor)
                 else (type(arg), arg) for arg in args)


class SizeSpecializedGraph:
    """Compiles `graph_module` for the sizes of each call (once per distinct sizes)."""

    def __init__(self, graph_module, compile_static, name):
        self._boxed_call = True  # instance attribute: wrappers copy __dict__
        self.graph_module = graph_module
        self.compile_static = compile_static
        self.name = name
        self.variants = {}

    def __call__(self, args):
        key = _size_key(args)
        compiled = self.variants.get(key)
        if compiled is None:
            if _kiln.log_enabled("recompiles"):
                sizes = ", ".join(str(tuple(arg.shape)) if isinstance(arg, torch.Tensor)
                                  else repr(arg) for arg in args)
                _kiln.log("recompiles", f"torch graph {self.name} compiles for sizes {sizes} "
                          f"(variant {len(self.variants) + 1})")
            detached = [arg.detach() if isinstance(arg, torch.Tensor) else arg for arg in args]
            try:
                static = make_fx(self.graph_module, tracing_mode="fake")(*detached)
            except Exception as error:  # noqa: BLE001  e.g. a nested tensor's ragged size
                compiled = self._eager(f"its sizes cannot be fixed ({error})")
            else:
                placeholders = [node for node in static.graph.nodes if node.op == "placeholder"]
                for placeholder, arg in zip(placeholders, detached):
                    if not isinstance(arg, torch.Tensor):  # a size, now a constant here
                        placeholder.meta["val"] = arg
                compiled = self.compile_static(static, detached)
            self.variants[key] = compiled
        if getattr(compiled, "_boxed_call", False):
            return compiled(list(args))
        return compiled(*args)

    def _eager(self, reason):
        """The ATen graph itself, run by PyTorch (what backend="aot_eager" would do)."""
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", f"torch graph {self.name} runs in eager PyTorch: {reason}")
        return self.graph_module
