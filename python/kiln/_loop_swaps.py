"""Loops whose body swaps names (`u, v = v, u`: two buffers, one read and one written in place,
as stencils and time steppers keep them) rewritten to run a whole cycle of swaps an iteration.

kiln._loop_capture carries each name's array through a loop node, and refuses a loop whose
iteration both writes an array in place and leaves it under another name ("the loop both updates
`v` in place and rebinds it"): the loop unrolled, 20,000 Jacobi sweeps of 1,000 points took 9 s
to trace and then ran eagerly (a graph of 100,000 ops). After as many iterations as the swaps'
cycle is long, every name holds its own array again, so

    for i in range(a, b):          __kiln_swap_first_L_C, __kiln_swap_stop_L_C = a, b
        BODY (u, v = v, u)   ->    for __kiln_swap_L_C in range(first, stop - 1, 2):
                                       i = __kiln_swap_L_C
                                       BODY
                                       i = __kiln_swap_L_C + 1
                                       BODY
                                   for __kiln_swap_L_C in range(max(stop - (stop - first) % 2,
                                                                    first), stop):
                                       i = __kiln_swap_L_C
                                       BODY

runs the same statements in the same order (the second loop the last, odd iteration), and the
first loop is one loop node whose arrays are updated in place. Only loops over `range` with a
step of one whose body has no `break`, `continue`, `return` or `yield` of its own are rewritten,
and only where the body's top-level assignments of names to names (`a, b = b, a`, `a, b, c = b,
c, a`) permute them, in a cycle of 2 to 4 iterations.
"""
import ast
import copy
import math

from ._loop_rewrite_parts import _name, each_statement_rewritten

PREFIX = "__kiln_swap"
LONGEST_CYCLE = 4


def in_whole_swap_cycles(statements):
    """`statements` (a function body) with each loop that swaps names rewritten as above;
    nested functions and classes are left to their own rewrite."""
    return each_statement_rewritten(statements, _in_whole_cycles)


def _in_whole_cycles(node):
    bounds = _unit_range(node)
    cycle = _swap_cycle(node.body) if bounds else 1
    if cycle < 2 or cycle > LONGEST_CYCLE or _jumps(node.body):
        return [node]
    tag = f"{node.lineno}_{node.col_offset}"
    first, stop, index = (f"{PREFIX}_{part}_{tag}" for part in ("first", "stop", "index"))
    names = [_name(first, ast.Store()), _name(stop, ast.Store())]
    start = ast.Assign(targets=[ast.Tuple(elts=names, ctx=ast.Store())],
                       value=ast.Tuple(elts=list(bounds), ctx=ast.Load()))
    whole = _loop(node, index, _parsed(f"range({first}, {stop} - {cycle - 1}, {cycle})"),
                  [statement for step in range(cycle)
                   for statement in _iteration(node, index, step)])
    rest = _loop(node, index,
                 _parsed(f"range(max({stop} - ({stop} - {first}) % {cycle}, {first}), {stop})"),
                 _iteration(node, index, 0))
    return [_located(start, node), whole, rest]


def _unit_range(node):
    """(start, stop) of a plain `for` over range(stop) or range(start, stop), else None."""
    if not (isinstance(node, ast.For) and not node.orelse and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
            and not node.iter.keywords and 1 <= len(node.iter.args) <= 2
            and not any(isinstance(a, ast.Starred) for a in node.iter.args)):
        return None
    args = node.iter.args
    return (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])


def _swap_cycle(body):
    """The iterations after which the body's top-level permutations of names (`a, b = b, a`)
    leave every name with its own value again: 1 where there are none."""
    place = {}  # name -> the name whose value from the iteration's start it holds
    for statement in body:
        permuted = _permutation(statement)
        if permuted is None:
            continue
        targets, sources = permuted
        place.update({t: place.get(s, s) for t, s in zip(targets, sources)})
    cycle, seen = 1, set()
    for name in place:
        length, at = 0, name
        while at not in seen:
            seen.add(at)
            at = place.get(at, at)
            length += 1
        cycle = math.lcm(cycle, max(length, 1))
    return cycle


def _permutation(statement):
    """(targets, sources) of `a, b = b, a`: names assigned names they permute, else None."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Tuple)
            and isinstance(statement.value, ast.Tuple)):
        return None
    targets = [e.id if isinstance(e, ast.Name) else None for e in statement.targets[0].elts]
    sources = [e.id if isinstance(e, ast.Name) else None for e in statement.value.elts]
    if None in targets or None in sources or len(set(targets)) != len(targets):
        return None
    if sorted(targets) != sorted(sources) or targets == sources:
        return None
    return targets, sources


def _jumps(body):
    """Whether the body leaves its iteration or the function (a break or continue of its own,
    a return, a yield): run twice in one iteration it would leave differently."""
    for node in _walk_own(body):
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return True
    for node in _walk_own(body, loops=False):
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
    return False


def _walk_own(body, loops=True):
    """The nodes of `body` outside nested functions and classes (and, with loops=False,
    outside nested loops' bodies, whose break and continue are their own)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if not loops and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _iteration(loop, index, step):
    """The loop's target bound to iteration `index + step`, then a copy of its body."""
    value = _name(index) if step == 0 else ast.BinOp(left=_name(index), op=ast.Add(),
                                                     right=ast.Constant(step))
    bind = ast.Assign(targets=[copy.deepcopy(loop.target)], value=value)
    return [_located(bind, loop)] + copy.deepcopy(loop.body)


def _loop(original, index, iterable, body):
    loop = ast.For(target=_name(index, ast.Store()), iter=iterable, body=body, orelse=[],
                   type_comment=None)
    return _located(loop, original)


def _parsed(expression):
    return ast.parse(expression, mode="eval").body


def _located(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old))
