"""`break` and `continue` of a loop kiln._loop_transform captures, rewritten as flags.

An escape-time loop (`if abs(z) > 2: break`), a search, a `while True:` with a convergence
test: Python asks bool() of the traced condition, and a loop holding the jump was left to
unroll (a graph break per iteration: Numba's per-pixel Mandelbrot traced for 16 s, then ran
eagerly). As AutoGraph does it: the jump sets a flag, and what follows a statement that may set
one runs only while none is set. A `while` loop also tests its flag (`while not stop and
test:`): it ends where Python's would. A `for` loop tests it too: captured, as a loop node
bounded by its range that also stops at the flag; run as Python, through LoopCapture.for_range's
stop. Its index after a captured loop would be the range's last, not the one it broke at: a
loop whose index is read after it is left as written.
"""
import ast
import copy

from ._loop_refusals import _loop_level_nodes
from ._loop_rewrite_parts import _name


def jumps(statements):
    """Which of break / continue `statements` hold at their loop's level (not a nested loop's)."""
    kinds = {type(node) for node in _loop_level_nodes(statements)}
    return ast.Break in kinds, ast.Continue in kinds


def without_jumps(loop, number):
    """(loop rewritten without break/continue at its level, the statements to put before it),
    or (loop, []) when it has none. `number` makes the flags' names unique."""
    has_break, has_continue = jumps(loop.body)
    if not (has_break or has_continue):
        return loop, []
    stop, skip = f"__kiln_break_{number}", f"__kiln_continue_{number}"
    flags = {ast.Break: stop, ast.Continue: skip}
    body = _guarded(loop.body, flags, [stop] * has_break + [skip] * has_continue)
    if has_continue:  # cleared at the top of every iteration
        body = [_assign(skip, False)] + body
    loop = copy.copy(loop)
    if has_break and isinstance(loop, ast.While):
        loop.test = ast.BoolOp(op=ast.And(), values=[_none_set([stop]), loop.test])
    elif has_break:  # a for loop: every iteration tests it (captured, the trip count is fixed)
        body = [ast.copy_location(ast.If(test=_none_set([stop]), body=body, orelse=[]), loop)]
    loop.body = body
    # the continue flag is bound before the loop too: a loop nested in a captured one is not
    # among the names the outer loop restores when its trace is abandoned, and the flag's value
    # from that trace (a value of its body) was carried into the inner loop's next capture
    before = [_assign(stop, False)] * has_break + [_assign(skip, False)] * has_continue
    return loop, [ast.fix_missing_locations(ast.copy_location(s, loop)) for s in before]


def stop_flag(loop, number):
    """The name of the flag `without_jumps` gave a for loop's break, or None."""
    return f"__kiln_break_{number}" if jumps(loop.body)[0] else None


def _guarded(statements, flags, names):
    result = []
    for position, statement in enumerate(statements):
        if type(statement) in flags:
            result.append(ast.copy_location(_assign(flags[type(statement)], True), statement))
            return result  # what follows a jump in its block never runs
        if isinstance(statement, (ast.If, ast.With, ast.Try)) and any(jumps([statement])):
            # (a try/finally's `finally` runs after a jump of its body, as Python's does)
            statement = copy.copy(statement)
            statement.body = _guarded(statement.body, flags, names) or [ast.Pass()]
            if isinstance(statement, ast.If):
                statement.orelse = _guarded(statement.orelse, flags, names)
            if isinstance(statement, ast.Try):
                statement.finalbody = _guarded(statement.finalbody, flags, names) or [ast.Pass()]
            result.append(statement)
            rest = _guarded(statements[position + 1:], flags, names)
            if rest:
                result.append(ast.copy_location(
                    ast.If(test=_none_set(names), body=rest, orelse=[]), statement))
            return result
        result.append(statement)
    return result


def _none_set(names):
    """`not (a or b)`: neither flag set."""
    flag = _name(names[0]) if len(names) == 1 else ast.BoolOp(
        op=ast.Or(), values=[_name(name) for name in names])
    return ast.UnaryOp(op=ast.Not(), operand=flag)


def _assign(name, value):
    return ast.Assign(targets=[_name(name, ast.Store())], value=ast.Constant(value=value))
