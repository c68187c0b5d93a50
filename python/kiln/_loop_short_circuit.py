"""`a and b`, `a or b` and `a if c else b` rewritten as branches (kiln._loop_transform).

Python evaluates `b` in `a and b` only where `a` is true (`a or b`: false), so `b` is a branch
side, as `a if c else b`'s are: on a traced `a` the helper's short_circuit / choose
(kiln._loop_expressions) trace it as one (kiln._branch_capture): its runtime checks apply
only where it is taken (`j < n and x[j] < key`: x[j]'s index check where j < n), and a side
that changes Python state (`rng.random()`, `log.append(...)`) or traces an op that raises on
data (np.linalg.solve) is Python's again, as an `if` side is. Each side comes with the names it
reads, so that the branch can tell whether it changed what they hold. A side that binds a name
(`:=`) stays as written: in a thunk the name would be the thunk's own.

    a and b and c  ->  HELPER.short_circuit(a, lambda: HELPER.short_circuit(b, lambda: c,
                           True, in_test, loc, names, reads), True, in_test, loc, names, reads)
"""
import ast

from ._loop_rewrite_parts import HELPER, _helper_call, _parse


def short_circuit(node, location, in_test, in_place=None):
    """The helper's short_circuit chain of the BoolOp `node`: each operand after the first is
    a side that runs where the operands before it do not decide. in_test: only the truth of
    the result is read (an `if`'s or `while`'s test), so traced operands stand as bools.
    in_place: as choice's; `a or b` of two arrays is one of them, as `a if c else b` is."""
    if _binds(node.values[1:]):
        return node
    written = not in_test and may_write(in_place, node.values)
    conjunction = isinstance(node.op, ast.And)
    result = node.values[-1]
    for position in range(len(node.values) - 2, -1, -1):
        later = node.values[position + 1:]
        call = _helper_call(f"short_circuit(None, None, {conjunction}, {in_test}, "
                            f"{location!r}, None, None)", node)
        call.args[0], call.args[1] = node.values[position], _thunk(result)
        call.args[5:7] = _reads(later, node)
        if written:
            call.keywords = [ast.copy_location(ast.keyword(arg="written",
                                                           value=ast.Constant(True)), node)]
        result = ast.copy_location(call, node)
    return result


def choice(node, location, in_place=None):
    """`body if test else orelse`: the helper's choose with both sides as thunks; written:
    whether an array a side reads may be written in place (kiln._loop_aliases' in_place), where
    the choice of one of two arrays is no select (kiln._branch_capture)."""
    if _binds([node.body, node.orelse]):
        return node
    call = _helper_call(f"choose(None, None, None, {location!r}, None, None)", node)
    call.args[:3] = [node.test, _thunk(node.body), _thunk(node.orelse)]
    call.args[4:6] = _reads([node.body, node.orelse], node)
    written = may_write(in_place, [node.body, node.orelse])
    call.keywords = [ast.copy_location(ast.keyword(arg="written", value=ast.Constant(written)),
                                       node)] if written else []
    return ast.copy_location(call, node)


def may_write(in_place, expressions):
    """Whether an array `expressions` may be, or a name they read holds, may be written in
    place (kiln._loop_aliases' in_place; None: nothing is known, as in a test's rewrite). The
    expressions themselves too: `L[0] if c else L[1]` is an item of L, which `a[0] = 5` writes
    where L = [a, b], though no write names L."""
    return in_place is not None and (any(
        in_place.name_changes(n.id) is not False for e in expressions for n in ast.walk(e)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        and not n.id.startswith("__kiln")) or any(
        in_place.changes(e) is not False for e in expressions))


def _reads(expressions, node):
    """(names, getter) of the names `expressions` read: a branch side's state, which it must
    leave as it was (kiln._loop_escapes.Containers: a list it appends to, a generator's draw)."""
    names = sorted({n.id for e in expressions for n in ast.walk(e)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                    and not n.id.startswith("__kiln")})
    getter = _parse("lambda: (" + "".join(f"{HELPER}.read(lambda: {name}), " for name in names)
                    + ")")[0].value
    for part in ast.walk(getter):
        ast.copy_location(part, node)
    names_node = ast.copy_location(ast.Tuple(elts=[ast.Constant(n) for n in names],
                                             ctx=ast.Load()), node)
    return [names_node, getter]


def _binds(expressions):
    return any(isinstance(n, ast.NamedExpr) for e in expressions for n in ast.walk(e))


def _thunk(expression):
    return ast.Lambda(args=_parse("lambda: 0")[0].value.args, body=expression)
