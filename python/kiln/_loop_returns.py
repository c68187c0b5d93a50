"""Early returns of a function kiln._loop_transform rewrites, merged into one exit.

A guard clause (`if n < eps: return v`, then `return v / n`) asks bool() of a traced test: a
graph break, so the function ran in segments and was traced again on every call. As AutoGraph
does it: each return assigns the result, what follows an `if` whose body returns on every path
becomes its `else`, and the function returns the result once, at its end; the `if` is then a
branch the capture helper selects or runs on the side taken (kiln._branch_capture), and on a
Python test it runs as before. Returns in loops, `with` or `try` blocks, in an `if` whose body
may fall through, and returned conversions (`return float(loss)`: kiln._loop_transform keeps
those Python numbers) leave the function as written.
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
        if not isinstance(statement, ast.If):
            return None  # a return in a loop, a `with` or a `try`
        then = _terminal(statement.body)
        otherwise = _terminal(statement.orelse + statements[position + 1:])
        if then is None or otherwise is None:
            return None
        merged = copy.copy(statement)
        merged.body, merged.orelse = then, otherwise
        return statements[:position] + [merged]
    return None  # a path that falls through


def _converts(value):
    """Whether a returned value holds float(x), int(x), bool(x) or x.item()."""
    return value is not None and any(
        isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "bool")
            or isinstance(node.func, ast.Attribute) and node.func.attr == "item")
        for node in ast.walk(value))
