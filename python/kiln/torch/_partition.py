"""Graphs with ops kiln cannot convert: the convertible parts become kiln graphs, the rest runs
in eager PyTorch between them (what KILN_LOGS=graph_breaks reports, op and source line).

One tolerant trace finds every node kiln refuses (not in the table, a dtype kiln lacks, or
arguments its entry refuses); torch.fx's capability partitioner groups the others into
maximal convex subgraphs; each becomes a CompiledGraph called from the outer GraphModule.
"""
import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .. import _kiln
from ._aten_table import VIEW_OPS, meta
from ._dynamic_sizes import (PartlySizedGraph, SizeSpecializedGraph, drop_padding_sliced_away,
                             has_dynamic_sizes, locate_sizes, symbol_hint, symbols_to_fix)
from ._graph_devices import graph_devices
from ._output_views import COMPUTED_INPUT
from ._lowering import CompiledGraph, UnconvertibleNode, describe, trace_graph


class _Convertible(OperatorSupportBase):
    def __init__(self, refused):
        super().__init__()
        self.refused = refused

    def is_node_supported(self, submodules, node):
        return node.op == "call_function" and node not in self.refused


class _CompiledPartition(torch.nn.Module):
    """A fused partition's submodule replaced by its kiln graph (called with unboxed args)."""

    def __init__(self, compiled, submodule):
        super().__init__()
        self.compiled = compiled
        result = next(node for node in submodule.graph.nodes if node.op == "output").args[0]
        self.single = not isinstance(result, (tuple, list))  # the submodule's own convention

    def forward(self, *args):
        outputs = self.compiled(list(args))
        return outputs[0] if self.single else tuple(outputs)


def refused_nodes(graph_module, symbolic=False):
    """{node: reason} for every node that must run in eager PyTorch. `symbolic`: the graph has
    dynamic sizes, traced at the numbers Dynamo traced them at (an op that needs a size as a
    number stays kiln's: its part compiles per value of that size, _with_size_symbols)."""
    refused, fixed = {}, None
    if symbolic:
        extents = [extent for node in graph_module.graph.nodes if node.op == "placeholder"
                   for extent in ([meta(node)] if isinstance(meta(node), torch.SymInt) else
                                  getattr(meta(node), "shape", ()))
                   if isinstance(extent, torch.SymInt)]
        fixed = {}
        for symbol in set().union(*(extent.node.expr.free_symbols for extent in extents)):
            try:
                fixed[symbol] = symbol_hint(graph_module, symbol)
            except (TypeError, ValueError):  # no number (a nested tensor's): stays a symbol
                pass
    trace_graph(graph_module, symbolic=symbolic, fixed_sizes=fixed,
                on_refusal=lambda node, reason: refused.setdefault(node, reason))
    return refused


def _computes_something(partition):
    return any(node.target not in VIEW_OPS and node.target is not operator.getitem
               for node in partition.nodes)


_REFUSALS = (UnconvertibleNode, TypeError, ValueError, IndexError, _kiln.Unsupported)


def _with_size_symbols(graph_module, example_inputs, options, name):
    """One kiln graph with size symbols for every size; else, where an op needs some sizes as
    numbers (a convolution's image), one per value of those with the rest symbols; else None."""
    fixed, reasons = {}, []  # symbol -> its hint (the first trace's number), why
    while True:
        try:
            first = CompiledGraph(graph_module, example_inputs, options, name, symbolic=True,
                                  fixed_sizes=fixed or None)
            break
        except _REFUSALS as error:
            node = getattr(error, "node", None)
            more = symbols_to_fix(node, fixed.keys()) if node is not None else set()
            if not more or locate_sizes(graph_module.graph, set(fixed) | more) is None:
                if _kiln.log_enabled("recompiles"):
                    _kiln.log("recompiles", f"torch graph {name} keeps no size symbols, it "
                              f"compiles per size: {error}")
                return None
            fixed.update({symbol: symbol_hint(graph_module, symbol) for symbol in more})
            reasons.append(str(error))
    if not fixed:
        return first
    if _kiln.log_enabled("recompiles"):
        _kiln.log("recompiles", f"torch graph {name} keeps its other size symbols, but "
                  f"{', '.join(sorted(map(str, fixed)))} compile per value: "
                  + "; ".join(reasons))
    places = locate_sizes(graph_module.graph, set(fixed))
    partly = PartlySizedGraph(graph_module, places, lambda values: CompiledGraph(
        graph_module, example_inputs, options, name, symbolic=True, fixed_sizes=values), name)
    partly.variants[tuple(fixed[symbol] for symbol in places)] = first
    return partly


def compile_graph_module(graph_module, example_inputs, options, unsupported_ops, name,
                         free_layouts=None, keep_record=False):
    """A callable for an ATen graph: one kiln graph when kiln converts every node, else the
    graph partitioned between kiln and eager PyTorch. `free_layouts`: the slice of outputs
    whose strides kiln may choose (honoured by a whole graph: CompiledGraph.output_strides).
    `keep_record`: a whole static graph keeps what a warm start needs (CompiledGraph.record)."""
    devices = graph_devices(graph_module)
    if len(devices) > 1:  # one kiln graph runs on one device
        reason = (f"torch graph {name} reads tensors on several devices ({', '.join(sorted(devices))})"
                  ": it runs in eager PyTorch")
        if unsupported_ops == "error":
            raise _kiln.Unsupported(reason + " (options={'unsupported_ops': 'error'})")
        if _kiln.log_enabled("graph_breaks"):
            _kiln.log("graph_breaks", reason)

        def run_eagerly(args):
            return graph_module(*args)
        run_eagerly._boxed_call = True
        return run_eagerly
    if has_dynamic_sizes(graph_module):
        drop_padding_sliced_away(graph_module)
        compiled = _with_size_symbols(graph_module, example_inputs, options, name)
        if compiled is None:  # an op kiln lacks: the parts around it, each with size symbols
            compiled = _partitioned(graph_module, unsupported_ops, name, symbolic=True, compile_part=(
                lambda part, examples, part_name: _with_size_symbols(part, examples, options,
                                                                     part_name)))
        per_size = SizeSpecializedGraph(
            graph_module, lambda static, inputs: compile_graph_module(
                static, inputs, options, unsupported_ops, name), name)
        if isinstance(compiled, CompiledGraph) and compiled.size_checks:
            # calls past the conditions of its max and min sizes: a graph for their sizes
            compiled.past_conditions = per_size
        return compiled if compiled is not None else per_size

    def compile_part(part, examples, part_name):
        try:
            return CompiledGraph(part, examples, options, part_name)
        except UnconvertibleNode as error:  # the tolerant trace missed it: stay eager
            if _kiln.log_enabled("graph_breaks"):
                _kiln.log("graph_breaks", f"{part_name} runs in eager PyTorch: {error}")
            return part
    return (_partitioned(graph_module, unsupported_ops, name, symbolic=False,
                         compile_part=compile_part)
            or CompiledGraph(graph_module, example_inputs, options, name,
                             free_layouts=free_layouts, keep_record=keep_record))


def _partitioned(graph_module, unsupported_ops, name, symbolic, compile_part):
    """The graph with its convertible parts compiled (`compile_part(part, examples, name)`:
    a callable, or None when the whole graph should not be partitioned so), the rest in eager
    PyTorch; None when kiln converts every node (or a part returned None). `graph_module`
    is left as it is: the partitioner rewrites a copy (made only here: a GraphModule's copy of
    a thousand nodes takes a tenth of a second)."""
    refused = refused_nodes(graph_module, symbolic)
    if not refused:
        return None
    graph, copies = torch.fx.Graph(), {}
    graph.output(graph.graph_copy(graph_module.graph, copies))
    graph_module = torch.fx.GraphModule(graph_module, graph)
    refused = {copies[node]: reason for node, reason in refused.items()}
    reasons = [f"{describe(node)} runs in eager PyTorch: {reason}"
               for node, reason in refused.items()]
    if unsupported_ops == "error":
        raise _kiln.Unsupported("kiln cannot compile every op of this graph "
                                "(options={'unsupported_ops': 'error'}):\n  "
                                + "\n  ".join(reasons))
    if _kiln.log_enabled("graph_breaks"):
        for reason in reasons:
            _kiln.log("graph_breaks", reason)
    partitioner = CapabilityBasedPartitioner(graph_module, _Convertible(refused),
                                             allows_single_node_partition=True)
    partitions = [partition for partition in partitioner.propose_partitions()
                  if _computes_something(partition)]
    fused = partitioner.fuse_partitions(partitions, prefix="kiln_part_")
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not node.target.startswith("kiln_part_"):
            continue
        submodule = getattr(fused, node.target)
        placeholders = [item for item in submodule.graph.nodes if item.op == "placeholder"]
        for placeholder, argument in zip(placeholders, node.args):
            placeholder.meta.setdefault("val", meta(argument))
            if getattr(argument, "op", None) != "placeholder":  # strides of its maker's choosing (_output_views.py)
                placeholder.meta[COMPUTED_INPUT] = True
        compiled = compile_part(submodule, [meta(argument) for argument in node.args],
                                f"{name}/{node.target}")
        if compiled is None:
            return None
        if compiled is not submodule:
            setattr(fused, node.target, _CompiledPartition(compiled, submodule))
    fused.recompile()

    def run_partitioned(args):  # AOTAutograd's boxed convention, as CompiledGraph has
        return fused(*args)
    run_partitioned._boxed_call = True
    return run_partitioned
