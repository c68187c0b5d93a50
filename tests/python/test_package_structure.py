"""The Python layer stays capture and glue (DESIGN §4): its modules import each other in one
direction (no cycle), never inside functions, and the tracer never imports the driver: they
talk through the driver object attached to the trace context."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "kiln"


def _imports(path):
    """(module names imported from the package, names imported inside functions)."""
    tree = ast.parse(path.read_text())
    package, nested = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            package.update(names)
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    nested.append(f"{path.name}:{node.lineno}")
    return package, nested


def test_no_import_cycle_and_no_imports_inside_functions():
    graph, nested = {}, []
    for path in PACKAGE.glob("*.py"):
        graph[path.stem], inside = _imports(path)
        nested += inside
    assert not nested, f"imports inside functions: {nested}"
    state = {}

    def visit(module, trail):
        state[module] = "open"
        for dependency in graph.get(module, ()):
            if dependency not in graph:
                continue
            assert state.get(dependency) != "open", f"import cycle: {trail + [dependency]}"
            if dependency not in state:
                visit(dependency, trail + [dependency])
        state[module] = "done"

    for module in graph:
        if module not in state:
            visit(module, [module])
    tracer_side = {"_tracer", "_graph_breaks", "_indexing", "_numpy_api", "_numpy_functions",
                   "_numpy_creation", "_numpy_manipulation", "_numpy_statistics", "_numpy_math",
                   "_numpy_selection", "_numpy_binning", "_numpy_layout",
                   "_tracer_operators", "_numpy_tracer"}
    for module in tracer_side:
        assert "_compile" not in graph[module], f"{module} imports the driver"
