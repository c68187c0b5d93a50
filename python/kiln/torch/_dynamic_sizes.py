"""Graphs with dynamic sizes (SymInt inputs, symbolic tensor shapes), as Dynamo hands them over
with dynamic=True or after it saw a size change. They become one kiln graph with size symbols
(_size_symbols.py, CompiledGraph(symbolic=True)); these are the fallbacks for a graph an op of
which needs a number for a size (a convolution's geometry, a floor division):
- PartlySizedGraph: the symbols that op needs become numbers, one kiln graph per value of
  them, and the others stay symbols (a CNN's image size fixed, its batch dynamic);
- SizeSpecializedGraph: each distinct set of concrete sizes gets its own compilation (the graph
  re-traced by make_fx with the call's real tensors, every size a constant).
KILN_LOGS=recompiles says when and why.
"""
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from .. import _kiln
from ._aten_table import meta
from ._size_symbols import same_size, traced_values


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


def _symbols_of(extents):
    return set().union(*(extent.node.expr.free_symbols for extent in extents
                         if isinstance(extent, torch.SymInt)))


def symbols_to_fix(node, fixed):
    """The symbols of `node`'s tensor operands, not yet in `fixed`, that an op refusing symbols
    likely needs as numbers: first those of its inner dimensions (a convolution's image, its
    batch (dimension 0) left symbolic), then all of them."""
    shapes = [meta(operand).shape for operand in node.all_input_nodes
              if isinstance(meta(operand), torch.Tensor)]
    leading = _symbols_of(shape[0] for shape in shapes if len(shape))
    inner = _symbols_of(extent for shape in shapes for extent in shape[1:]) - leading - fixed
    return inner or _symbols_of(extent for shape in shapes for extent in shape) - fixed


def locate_sizes(graph, symbols):
    """symbol -> (argument position, dimension or None for a SymInt argument) where a call's
    arguments (an FX graph's placeholders) hold its value; None when one of them is no
    argument's dimension by itself."""
    places = {}
    for position, node in enumerate(n for n in graph.nodes if n.op == "placeholder"):
        value = meta(node)
        extents = [(None, value)] if isinstance(value, torch.SymInt) else (
            list(enumerate(value.shape)) if isinstance(value, torch.Tensor) else [])
        for dim, extent in extents:
            if isinstance(extent, torch.SymInt) and extent.node.expr in symbols:
                places.setdefault(extent.node.expr, (position, dim))
    return places if places.keys() == set(symbols) else None


def drop_padding_sliced_away(graph_module):
    """Takes `slice(constant_pad_nd(x, pads), d, 0, x.shape[d])` for x: padding after the
    end of x, sliced away again, of which nothing is read. PyTorch pads an attention mask
    that way on CUDA (to a multiple of 8, `pad_bias`), by an amount computed with Mod, which
    kiln's size symbols (polynomials) do not express: the graph would compile per size."""
    aten, changed = torch.ops.aten, False
    for node in list(graph_module.graph.nodes):
        if node.target is not aten.slice.Tensor or len(node.args) < 4:
            continue
        padded, dim, start, end = node.args[:4]
        step = node.args[4] if len(node.args) > 4 else 1
        if (not isinstance(padded, torch.fx.Node) or padded.target is not aten.constant_pad_nd.default
                or start != 0 or step != 1):
            continue
        source, pads = padded.args[0], padded.args[1]
        value = meta(source)
        if not isinstance(value, torch.Tensor):
            continue
        dim = dim % value.dim()
        end = meta(end) if isinstance(end, torch.fx.Node) else end
        # pads: (before, after) pairs from the last dimension back; only `dim` may grow, at its end
        grows_only_dim = all(isinstance(pad, int) and pad == 0 for k, pad in enumerate(pads)
                          if k != 2 * (value.dim() - 1 - dim) + 1)
        if grows_only_dim and end is not None and same_size(end, value.shape[dim]):
            node.replace_all_uses_with(source)
            changed = True
    if changed:
        graph_module.graph.eliminate_dead_code()
        graph_module.recompile()
    return changed


def symbol_hint(graph_module, symbol):
    """The number Dynamo traced `symbol` at."""
    for node in graph_module.graph.nodes:
        value = meta(node) if node.op == "placeholder" else None
        extents = [value] if isinstance(value, torch.SymInt) else (
            value.shape if isinstance(value, torch.Tensor) else [])
        for extent in extents:
            if isinstance(extent, torch.SymInt):
                values = traced_values(extent.node.shape_env)
                if symbol not in values:
                    # an unbacked symbol (a size .item() or nonzero gave the forward, which
                    # the backward's inputs carry): no number was traced
                    raise ValueError(f"{symbol} is a data-dependent size")
                return int(values[symbol])
    raise ValueError(f"no size of the graph has a value for {symbol}")


class PartlySizedGraph:
    """`graph_module` compiled with the symbols in `places` as the numbers each call's arguments
    give them (one CompiledGraph with the other symbols per distinct value of them)."""

    def __init__(self, graph_module, places, compile_fixed, name):
        self._boxed_call = True
        self.graph_module, self.places, self.compile_fixed, self.name = (
            graph_module, places, compile_fixed, name)
        self.variants = {}

    def __call__(self, args):
        values = tuple(int(args[position] if dim is None else args[position].shape[dim])
                       for position, dim in self.places.values())
        compiled = self.variants.get(values)
        if compiled is None:
            fixed = dict(zip(self.places, values))
            if _kiln.log_enabled("recompiles"):
                _kiln.log("recompiles", f"torch graph {self.name} compiles for "
                          + ", ".join(f"{symbol} = {value}" for symbol, value in fixed.items())
                          + f" (variant {len(self.variants) + 1}; its other sizes stay symbols)")
            compiled = self.variants[values] = self.compile_fixed(fixed)
        return compiled(args)


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
