"""kiln.explain(fn)(*args): what compiling fn on these arguments does, like torch._dynamo.explain.

The function is compiled afresh (the in-process cache of kiln.compile(fn) is not consulted; the
disk cache is) and called once; the returned ExplainOutput lists the graphs (each graph-break
prefix and the final graph), the breaks with reason and file:line, ops and kernels per graph,
the compile time, and each loop and branch: captured as a `loop` node, as a select, or unrolled
(with the reason)."""
import dataclasses

from ._compile import CompiledFunction


@dataclasses.dataclass
class BreakReason:
    reason: str
    location: str  # "file.py:12", "" where unknown

    def __str__(self):
        return f"{self.reason} at {self.location}" if self.location else self.reason


@dataclasses.dataclass
class GraphInfo:
    op_count: int
    kernels: list
    compile_seconds: float
    graph_text: str
    source_path: str


@dataclasses.dataclass
class LoopInfo:
    location: str  # "file.py:12"
    kind: str      # "loop" (one loop node), "select" (a branch), "unrolled" (traced through)
    reason: str    # why a loop is unrolled ("" otherwise)

    def __str__(self):
        return f"{self.location}: {self.kind}" + (f" ({self.reason})" if self.reason else "")


@dataclasses.dataclass
class ExplainOutput:
    graphs: list
    break_reasons: list
    result: object = dataclasses.field(repr=False, default=None)
    loops: list = dataclasses.field(default_factory=list)

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

    @property
    def ops_per_graph(self):
        return [graph.op_count for graph in self.graphs]

    @property
    def op_count(self):
        return sum(self.ops_per_graph)

    @property
    def kernels(self):
        return [kernel for graph in self.graphs for kernel in graph.kernels]

    @property
    def compile_time(self):
        return sum(graph.compile_seconds for graph in self.graphs)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}",
                 f"Kernel Count: {len(self.kernels)}",
                 f"Compile Time: {self.compile_time:.3f} s"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for number, reason in enumerate(self.break_reasons, 1):
                lines.append(f"  Break Reason {number}:")
                lines.append(f"    Reason: {reason.reason}")
                lines.append(f"    Location: {reason.location or '(unknown)'}")
        if self.loops:
            lines.append("Loops and branches:")
            lines.extend(f"  {loop}" for loop in self.loops)
        if self.graphs:
            lines.append("Graphs:")
            for number, graph in enumerate(self.graphs, 1):
                lines.append(f"  Graph {number}: {graph.op_count} ops, {len(graph.kernels)} "
                             f"kernel(s) {', '.join(graph.kernels)}; compiled in "
                             f"{graph.compile_seconds:.3f} s")
                lines.extend("    " + line for line in graph.graph_text.splitlines())
        return "\n".join(lines)


def explain(fn, *, mode=None, options=None):
    """kiln.explain(fn)(*args, **kwargs) -> ExplainOutput (see the module doc). For a function
    from kiln.compile, its mode and options apply unless others are given."""
    compiled_function = getattr(fn, "_kiln_function", None)
    original = getattr(fn, "__wrapped__", fn) if compiled_function else fn
    if compiled_function is not None:
        settings = dict(compiled_function.options)
        mode = mode or settings.pop("mode", "default")
        options = options if options is not None else settings
    mode = mode or "default"

    def run(*args, **kwargs):
        function = CompiledFunction(original, mode, False, options)
        function.records = []
        result = function.make_wrapper()(*args, **kwargs)
        graphs, breaks, loops = [], [], []
        for record in function.records:
            if record[0] == "loop":
                loops.append(LoopInfo(record[2], record[1], record[3]))
            elif record[0] == "graph":
                compiled = record[1]
                graphs.append(GraphInfo(compiled.op_count, list(compiled.kernels),
                                        compiled.compile_seconds, compiled.graph_text,
                                        compiled.source_path))
            else:
                breaks.append(BreakReason(record[1], record[2]))
        return ExplainOutput(graphs, breaks, result, loops)

    return run
