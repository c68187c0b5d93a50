"""What a loop or branch body may hold for kiln._loop_transform to rewrite it for capture:
assignments (to names, to subscripts of names and, at a loop's own level, to attributes of a
name's item; `:=` too), `del` of names, nested loops and branches, `pass`, call statements
(the capture helper checks the callee), `with` blocks (it checks the managers), try/finally
blocks, `assert`s (checks where their test is traced: kiln._body_statements) and, at the loop's
own level, no `break` or `continue` left (kiln._loop_jumps turns them into flags first).
Anything else leaves the loop as written, unrolled by tracing, with the reason these functions
give."""
import ast


_ALLOWED = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Pass,
            ast.With, ast.Assert, ast.Delete, ast.Try)


def _refusal(statements, item_attributes=False):
    """Why these statements cannot be captured (None: they can). item_attributes: whether an
    item's attribute may be assigned among them (`particles[0].x = v`, a loop's own level)."""
    for statement in statements:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring-like constant
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            continue  # called through the helper, which checks the callee (_as_effect)
        if isinstance(statement, ast.Expr):
            return "an expression statement"
        if not isinstance(statement, _ALLOWED) or _handles_exceptions(statement):
            return f"it contains a `{type(statement).__name__.lower()}` statement"
        if isinstance(statement, ast.Delete) and not all(
                isinstance(target, ast.Name) for target in statement.targets):
            return "a `del` of an item or attribute"  # a list's or dict's, changed once
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                reason = _target_refusal(target, item_attributes)
                if reason:
                    return reason
            if isinstance(statement, ast.AnnAssign) and statement.value is None:
                return "an annotation without a value"
        if isinstance(statement, (ast.For, ast.While)):
            if any(isinstance(node, (ast.Return, ast.Raise, ast.With, ast.FunctionDef,
                                     ast.ClassDef, ast.Lambda, ast.Import, ast.ImportFrom,
                                     ast.Global, ast.Nonlocal)) or _handles_exceptions(node)
                   or isinstance(node, ast.Delete) and not all(
                       isinstance(target, ast.Name) for target in node.targets)
                   for node in ast.walk(statement)):
                return "a nested loop returns, raises or defines something"
            continue  # its own break/continue are its own; it runs as Python inside the body
        if isinstance(statement, ast.If):
            reason = _refusal(statement.body) or _refusal(statement.orelse)
            if reason:
                return reason
        if isinstance(statement, ast.Try):  # try/finally: both parts run, in order
            reason = _refusal(statement.body) or _refusal(statement.finalbody)
            if reason:
                return reason
        if isinstance(statement, ast.With):  # its managers are checked as the body runs
            if any(item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name)
                   for item in statement.items):
                return "a `with` statement binding a target that is not a name"
            reason = _refusal(statement.body)
            if reason:
                return reason
        for node in ast.walk(statement):
            if isinstance(node, ast.Lambda):
                return "a lambda inside"
    return None


def _handles_exceptions(statement):
    """A `try` with `except` or `else` clauses: whether they run depends on exceptions, which
    the trace of a body (or a graph running it) does not raise where Python's loop would.
    try/finally runs its body then its `finally` block, in the trace as in Python (an
    exception of the trace's leaves both to run as Python)."""
    return isinstance(statement, ast.Try) and bool(statement.handlers or statement.orelse)


def _body_refusal(statements, loop=False):
    """Why a loop or branch body cannot be captured (None: it can). At a loop's own level an
    item's attribute may be assigned (kiln._loop_object_attributes carries it); a branch
    traces both sides, and one that assigns it there gave a wrong answer."""
    reason = _refusal(statements, item_attributes=loop)
    if reason is None and any(isinstance(n, (ast.Break, ast.Continue))
                              for n in _loop_level_nodes(statements)):
        reason = "it contains `break` or `continue`"
    return reason


def _target_refusal(target, item_attributes=False):
    if isinstance(target, ast.Name):
        return None
    if isinstance(target, ast.Starred):  # `head, *tail = row`: tail a list, as any name's
        return _target_refusal(target.value, item_attributes)
    if isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            reason = _target_refusal(item, item_attributes)
            if reason:
                return reason
        return None
    if (item_attributes and isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Subscript)
            and isinstance(target.value.value, ast.Name)):
        return None  # `particles[0].x = v`: carried (kiln._loop_object_attributes) or refused
    base = target
    while isinstance(base, ast.Subscript):  # D[i][j] = v: D[i] is a view of D, written through
        base = base.value
    if base is not target and isinstance(base, ast.Name):
        return None
    return "an assignment to an attribute or a subscript of one"


def _loop_level_nodes(statements):
    """Nodes of `statements` outside nested loops (a nested loop's break is its own; one in
    its `else` is the enclosing loop's) and nested functions. A nested loop among `statements`
    themselves is not entered either: `for i ...: for j ...: if x[i, j] < 0: continue` gave
    the outer loop the inner one's `continue`, and it was refused (unrolled)."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
