"""What a symbolic kiln graph (one for every size: _size_symbols.py) checks of each call's sizes
before it runs (CompiledGraph); a call outside them runs the FX graph in eager PyTorch, or a
call past a max or min's conditions a graph compiled for its sizes (compile_graph_module):
- an input dimension that is no symbol by itself (s1 - 2, 2*s0*s1: SizeSymbols.bind_input_sizes)
  may be below 2, the least size a kiln symbol stands for (ir/shape.h);
- a max or min of sizes was traced as one of its arguments (SizeSymbols._branch), on conditions
  that a call's sizes keep it so (a sliding window's first position Max(0, s0 - 4) is s0 - 4
  from s0 = 4 on; a prompt of 3 tokens compiles for its size).
"""
import sympy
import torch

from ._aten_table import meta
from ._dynamic_sizes import locate_sizes


class SizeChecks:
    def __init__(self, graph_module, conditions):
        placeholders = [node for node in graph_module.graph.nodes if node.op == "placeholder"]
        self.shifted = [(position, dim) for position, node in enumerate(placeholders)
                        if isinstance(meta(node), torch.Tensor)
                        for dim, extent in enumerate(meta(node).shape)
                        if isinstance(extent, torch.SymInt) and not extent.node.expr.is_Symbol]
        self.conditions = []  # (text, function of the symbols' values, their places)
        for condition in dict.fromkeys(conditions):  # (one check per distinct condition)
            symbols = sorted(condition.free_symbols, key=str)
            places = locate_sizes(graph_module.graph, set(symbols))
            if places is None:  # (a refusal: the graph compiles per size)
                raise ValueError(f"the size condition {condition} >= 0 reads sizes no input "
                                 f"holds as a dimension")
            self.conditions.append((str(condition), sympy.lambdify(symbols, condition),
                                    [places[symbol] for symbol in symbols]))

    def __bool__(self):
        return bool(self.shifted or self.conditions)

    def below_two(self, args):
        """Why a call's sizes are below what its size symbols stand for, or None."""
        for position, dim in self.shifted:
            if args[position].shape[dim] < 2:
                return (f"input sizes below 2 where it has a size symbol: "
                        f"{[tuple(args[position].shape) for position, _ in self.shifted]}")
        return None

    def past_condition(self, args):
        """The condition of a max or min size a call's sizes fail, or None."""
        for text, function, places in self.conditions:
            values = [args[position] if dim is None else args[position].shape[dim]
                      for position, dim in places]
            if function(*values) < 0:
                return f"sizes where {text} < 0 (a max or min traced as another argument)"
        return None
