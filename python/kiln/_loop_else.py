"""A loop's `else` clause, rewritten as a flag kiln._loop_transform can capture.

A search written `for i in range(n): if x[i] > t: idx = i; break` / `else: idx = -1` (and the
`while` form) was refused, "it has an `else` clause": the loop unrolled, its break a graph break
an iteration. Python runs the `else` where the loop ends without a `break` of its own; so

    for ...:                      __kiln_no_break_L_C = True
        ... break ...      ->     for ...:
    else:                             ... __kiln_no_break_L_C = False; break ...
        E                         if __kiln_no_break_L_C:
                                      E

(a loop with no break of its own: its `else` simply follows it). The loop is then one without
an `else` (kiln._loop_jumps makes its break a flag), and `if flag: E` a branch like any other. A
`return` in the loop leaves the function before E as before: kiln._loop_returns guards what
follows the loop, `if flag: E` included, with its own flag.

The search's result is bound on one side of the body's branch only (`idx = i; break`), often
unbound before the loop, and the branch refuses to merge a name bound on one side only. Where the
`else` binds it and the loop body never reads it, binds it only by plain assignments, and binds
it right before each of its breaks, the body binds FOUND + name instead, and the `else` becomes
`if flag: E` / `else: name = FOUND + name`: read only where a break ran, so right after a
binding, FOUND's value on the branch's other side (zeros, kiln._branch_capture) is never seen.
"""
import ast

from ._loop_rewrite_parts import _name, each_statement_rewritten

FOUND = "__kiln_found_"


def is_found(name):
    """Whether `name` holds a search's result as the rewrite above binds it in the loop: read
    only after a break that bound it."""
    return name.startswith(FOUND)


def without_else_clauses(statements):
    """`statements` (a function body) with every loop's `else` rewritten as above; nested
    functions and classes are left to their own rewrite."""
    return each_statement_rewritten(statements, _without_else)


def _without_else(node):
    if not isinstance(node, (ast.For, ast.While)) or not node.orelse:
        return [node]
    flag = f"__kiln_no_break_{node.lineno}_{node.col_offset}"
    clause, node.orelse = node.orelse, []
    if not _marks_breaks(node.body, flag):
        return [node] + clause
    start = ast.Assign(targets=[_name(flag, ast.Store())], value=ast.Constant(True))
    found = [name for name in _bound_names(clause) if _found_before_breaks(node, name)]
    for name in found:
        _RenamedStores(name, FOUND + name).visit(node)
    taken = [_located(ast.Assign(targets=[_name(name, ast.Store())], value=_name(FOUND + name)),
                      node) for name in found]
    after = ast.If(test=_name(flag), body=clause, orelse=taken)
    return [_located(start, node), node, _located(after, node)]


def _marks_breaks(statements, flag):
    """Puts `flag = False` before each `break` of the loop whose body is `statements` (not a
    nested loop's, but one in a nested loop's `else` is this loop's); whether there was one."""
    found = False
    position = 0
    while position < len(statements):
        node = statements[position]
        if isinstance(node, ast.Break):
            mark = ast.Assign(targets=[_name(flag, ast.Store())], value=ast.Constant(False))
            statements.insert(position, _located(mark, node))
            position += 1
            found = True
        elif isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            found = _marks_breaks(node.orelse, flag) or found
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(node, field, None), list):
                    found = _marks_breaks(getattr(node, field), flag) or found
            for handler in getattr(node, "handlers", ()):
                found = _marks_breaks(handler.body, flag) or found
            for case in getattr(node, "cases", ()):
                found = _marks_breaks(case.body, flag) or found
        position += 1
    return found


def _bound_names(statements):
    """Names the statements' own plain assignments bind (`name = ...`, `a, b = ...`)."""
    names = []
    for statement in statements:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name) and node.id not in names:
                        names.append(node.id)
    return names


def _found_before_breaks(loop, name):
    """Whether the loop (its test too) never reads `name`, binds it by plain assignments only,
    and binds it in the block of each of its breaks, before the break."""
    assigned = {id(node) for statement in ast.walk(loop) if isinstance(statement, ast.Assign)
                for target in statement.targets for node in ast.walk(target)}
    parts = loop.body + ([loop.test] if isinstance(loop, ast.While) else [])
    if any(isinstance(node, ast.Name) and node.id == name and id(node) not in assigned
           for part in parts for node in ast.walk(part)):
        return False
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
              ast.SetComp, ast.DictComp, ast.GeneratorExp)
    if any(isinstance(node, ast.Name) and node.id == name for part in parts
           for scope in ast.walk(part) if isinstance(scope, scopes) for node in ast.walk(scope)):
        return False  # a name of another scope
    return _binds_before_breaks(loop.body, name)


def _binds_before_breaks(statements, name, bound=False):
    for node in statements:
        if isinstance(node, ast.Break) and not bound:
            return False
        if isinstance(node, ast.Assign) and name in _bound_names([node]):
            bound = True
        elif isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            if not _binds_before_breaks(node.orelse, name, bound):
                return False
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            blocks = [getattr(node, field) for field in ("body", "orelse", "finalbody")
                      if isinstance(getattr(node, field, None), list)]
            blocks += [part.body for part in (*getattr(node, "handlers", ()),
                                              *getattr(node, "cases", ()))]
            if not all(_binds_before_breaks(block, name, bound) for block in blocks):
                return False
    return True


class _RenamedStores(ast.NodeTransformer):
    def __init__(self, name, new):
        self.name, self.new = name, new

    def visit_Name(self, node):
        if node.id == self.name:
            node.id = self.new
        return node


def _located(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old))
