"""Early returns of a function kiln._loop_transform rewrites, merged into one exit.

A guard clause (`if n < eps: return v`, then `return v / n`) asks bool() of a traced test: a
graph break, so the function ran in segments and was traced again on every call. As AutoGraph
does it: each return assigns the result, what follows an `if` whose body returns on every path
becomes its `else`, and the function returns the result once, at its end; the `if` is then a
branch the capture helper selects or runs on the side taken (kiln._branch_capture), and on a
Python test it runs as before. A loop whose body returns sets the result and a flag and breaks
(kiln._loop_jumps), and what follows it runs where the flag is not set. Returns in nested
loops, `with` or `try` blocks, in an `if` whose body may fall through, and returned conversions
(`return float(loss)`: kiln._loop_transform keeps those Python numbers) leave the function as
written.
"""
import ast
import copy

from ._loop_rewrite_parts import _name, _walk_scope

RESULT = "__kiln_result"


def single_exit(statements):
    """The function body `statements` with its returns merged into one, or `statements` itself
    where they take another form or there is no early return."""
    returns = [node for node in _walk_scope(statements) if isinstance(node, ast.Return)]
    if len(returns) < 2 or any(_converts(node.value) for node in returns):
        return statements
    body = list(statements)
    if not isinstance(body[-1], ast.Return):  # falling off the end returns None
        body.append(ast.copy_location(ast.Return(value=None), body[-1]))
    merged = _terminal(body)
    if merged is None:
        return statements
    exit_ = ast.copy_location(ast.Return(value=_name(RESULT)), returns[-1])
    return [ast.fix_missing_locations(statement) for statement in merged + [exit_]]


def _terminal(statements):
    """`statements`, which return on every path, with each return assigning RESULT instead;
    None where a return is in another form."""
    for position, statement in enumerate(statements):
        if isinstance(statement, ast.Return):
            value = statement.value if statement.value is not None else ast.Constant(value=None)
            assign = ast.Assign(targets=[_name(RESULT, ast.Store())], value=value)
            return statements[:position] + [ast.copy_location(assign, statement)]
        if not any(isinstance(node, ast.Return) for node in _walk_scope([statement])):
            continue
        if isinstance(statement, (ast.For, ast.While)):
            return _loop_exit(statements, position)
        if not isinstance(statement, ast.If):
            return None  # a return in a `with` or a `try`
        then = _terminal(statement.body)
        otherwise = _terminal(statement.orelse + statements[position + 1:])
        if then is None or otherwise is None:
            return None
        merged = copy.copy(statement)
        merged.body, merged.orelse = then, otherwise
        return statements[:position] + [merged]
    return None  # a path that falls through


def _loop_exit(statements, position):
    """statements[position], a loop whose body returns (`for i in range(n): ... if escaped:
    return i`, Numba's Mandelbrot), as one that sets the result and a flag and breaks
    (kiln._loop_jumps makes the break a flag too); what follows it runs where the flag is
    not set. None for returns in its nested loops or a loop with an `else`."""
    loop = statements[position]
    if loop.orelse or any(isinstance(node, ast.Return) for inner in _walk_scope(loop.body)
                          if isinstance(inner, (ast.For, ast.While))
                          for node in _walk_scope(inner.body + inner.orelse)):
        return None
    rest = _terminal(statements[position + 1:])
    if rest is None:
        return None
    returned = f"__kiln_returned_{loop.lineno}_{loop.col_offset}"
    loop = copy.copy(loop)
    loop.body = [_ReturnsAsBreaks(returned).visit(statement) for statement in loop.body]
    start = ast.copy_location(ast.Assign(targets=[_name(returned, ast.Store())],
                                         value=ast.Constant(value=False)), loop)
    after = ast.copy_location(ast.If(test=_name(returned), body=[ast.Pass()], orelse=rest), loop)
    return statements[:position] + [start, loop, after]


class _ReturnsAsBreaks(ast.NodeTransformer):
    """`return e` at a loop's level: `RESULT = e; returned = True; break`."""

    def __init__(self, returned):
        self.returned = returned

    def visit_Return(self, node):
        value = node.value if node.value is not None else ast.Constant(value=None)
        return [ast.copy_location(statement, node) for statement in (
            ast.Assign(targets=[_name(RESULT, ast.Store())], value=value),
            ast.Assign(targets=[_name(self.returned, ast.Store())], value=ast.Constant(True)),
            ast.Break())]

    def visit_For(self, node):  # a nested loop's own statements (no return in it: checked)
        return node

    visit_While = visit_AsyncFor = visit_FunctionDef = visit_AsyncFunctionDef = visit_For
    visit_ClassDef = visit_Lambda = visit_For


def _converts(value):
    """Whether a returned value holds float(x), int(x), bool(x) or x.item()."""
    return value is not None and any(
        isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "bool")
            or isinstance(node.func, ast.Attribute) and node.func.attr == "item")
        for node in ast.walk(value))
