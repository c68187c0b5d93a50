"""Loops whose body swaps names (`u, v = v, u`: two buffers, one read and one written in place,
as stencils and time steppers keep them) rewritten to run a whole cycle of swaps an iteration.

kiln._loop_capture carries each name's array through a loop node, and refuses a loop whose
iteration both writes an array in place and leaves it under another name ("the loop both updates
`v` in place and rebinds it"): the loop unrolled, 20,000 Jacobi sweeps of 1,000 points took 9 s
to trace and then ran eagerly (a graph of 100,000 ops). After as many iterations as the swaps'
cycle is long, every name holds its own array again, so

    for i in range(a, b, s):       FIRST, STOP = a, b
        BODY (u, v = v, u)   ->    COUNT = max(0, (STOP - FIRST + s - 1) // s)   (s > 0)
                                   for K in range(FIRST, FIRST + (COUNT - COUNT % 2) * s, 2 * s):
                                       i = K
                                       BODY
                                       i = K + s
                                       BODY
                                   for K in range(FIRST + (COUNT - COUNT % 2) * s,
                                                  FIRST + COUNT * s, s):
                                       i = K
                                       BODY

runs the same statements in the same order (the second loop the last, odd iteration), and the
first loop is one loop node whose arrays are updated in place. The trip count is arithmetic where
the source writes the step (`range(n, 0, -3)`: traced bounds count in the graph) and Python's
len(range(...)) where a name holds it (its checks: a step of zero raises ValueError there). A
`while` loop's trip count is known only as it runs: its body is written out once for each
iteration of the cycle with the names renamed instead (_while_in_whole_cycles). Only loops whose
body has no `break`, `continue`, `return` or `yield` of its own are rewritten, and only where the
body's top-level assignments of names to names (`a, b = b, a`, `a, b, c = b, c, a`) permute
them, in a cycle of 2 to 4 iterations.
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
    observed = _observed_names(statements)
    return each_statement_rewritten(statements, lambda node: _in_whole_cycles(node, observed))


def _in_whole_cycles(node, observed):
    if isinstance(node, ast.While):
        return _while_in_whole_cycles(node, observed)
    bounds = _range_bounds(node)
    cycle = _swap_cycle(node.body) if bounds else 1
    if cycle < 2 or cycle > LONGEST_CYCLE or _jumps(node.body):
        return [node]
    start, stop, step = bounds
    tag = f"{node.lineno}_{node.col_offset}"
    first, last, count, index = (f"{PREFIX}_{part}_{tag}"
                                 for part in ("first", "stop", "count", "index"))
    names = [_name(first, ast.Store()), _name(last, ast.Store())]
    bind = [ast.Assign(targets=[ast.Tuple(elts=names, ctx=ast.Store())],
                       value=ast.Tuple(elts=[start, stop], ctx=ast.Load()))]
    if isinstance(step, int):
        # the trip count in arithmetic, so that traced bounds are counted in the graph
        rounding = step - 1 if step > 0 else step + 1
        counted = f"max(0, ({last} - {first} + {rounding}) // {step})"
        stride = step
    else:  # a step known only as the loop starts: Python's range counts (and checks) it
        stride = f"{PREFIX}_step_{tag}"
        bind.append(ast.Assign(targets=[_name(stride, ast.Store())], value=step))
        counted = f"len(range({first}, {last}, {stride}))"
    bind.append(ast.Assign(targets=[_name(count, ast.Store())], value=_parsed(counted)))
    whole_stop = f"{first} + ({count} - {count} % {cycle}) * {stride}"
    whole_step = cycle * stride if isinstance(stride, int) else f"{cycle} * {stride}"
    whole = _loop(node, index, _parsed(f"range({first}, {whole_stop}, {whole_step})"),
                  [statement for turn in range(cycle)
                   for statement in _iteration(node, index, turn, stride)])
    rest = _loop(node, index,
                 _parsed(f"range({whole_stop}, {first} + {count} * {stride}, {stride})"),
                 _iteration(node, index, 0, stride))
    return [_located(statement, node) for statement in bind] + [whole, rest]


def _while_in_whole_cycles(node, observed):
    """A `while` loop that swaps names, its body written out once for each iteration of the
    cycle, each copy's names renamed to those holding its iteration's arrays (no name is
    rebound: the loop node updates each array in place), the test checked between copies; the
    cycle's iteration the test ended the loop at (PHASE) permutes the names as Python's swaps
    had left them:

        while TEST:                  PHASE = 0
            BODY (u, v = v, u)  ->   while TEST:
                                         BODY (without its swap)
                                         PHASE = 1
                                         if not TEST (u and v renamed v and u):
                                             break
                                         BODY (u and v renamed v and u, without its swap)
                                         PHASE = 0
                                     u, v = ((u, v), (v, u))[PHASE]

    A renaming is the same program only where nothing reads the names but the function's own
    code as written: no function, lambda, class or generator that may read them later, no
    locals(), vars(), eval() or exec()."""
    cycle = _swap_cycle(node.body)
    if (node.orelse or cycle < 2 or cycle > LONGEST_CYCLE or _jumps(node.body)
            or observed is None or _permuted_names(node.body) & observed):
        return [node]
    phase = f"{PREFIX}_phase_{node.lineno}_{node.col_offset}"
    body, renaming, exits = [], {}, []
    for turn in range(cycle):
        if turn > 0:
            exits.append(renaming)
            test = ast.UnaryOp(op=ast.Not(), operand=_renamed(node.test, renaming))
            body += [_assign(phase, turn), ast.If(test=test, body=[ast.Break()], orelse=[])]
        copied, renaming = _renamed_iteration(node.body, renaming)
        body += copied
    loop = ast.While(test=node.test, body=body + [_assign(phase, 0)], orelse=[])
    names = sorted(exits[-1])  # every permuted name moves in the cycle's last iteration
    orders = [names] + [[renaming.get(name, name) for name in names] for renaming in exits]
    # one lookup of the phase (a graph break where it is traced), not one test per phase
    after = ast.Assign(targets=[_names(names, ast.Store())], value=ast.Subscript(
        value=ast.Tuple(elts=[_names(order) for order in orders], ctx=ast.Load()),
        slice=_name(phase), ctx=ast.Load()))
    return [_located(statement, node) for statement in [_assign(phase, 0), loop, after]]


def _renamed_iteration(statements, renaming):
    """(copies of `statements` with each name read or bound renamed to the one holding its
    value, their top-level swaps dropped; the renaming after them)."""
    copied = []
    for statement in statements:
        permuted = _permutation(statement)
        if permuted is None:
            copied.append(_renamed(statement, renaming))
            continue
        targets, sources = permuted
        renaming = {**renaming, **{t: renaming.get(s, s) for t, s in zip(targets, sources)}}
    return copied, {name: held for name, held in renaming.items() if name != held}


def _renamed(node, renaming):
    node = copy.deepcopy(node)
    for part in ast.walk(node):
        if isinstance(part, ast.Name) and part.id in renaming:
            part.id = renaming[part.id]
    return node


def _permuted_names(body):
    return {name for statement in body for name in (_permutation(statement) or ((), ()))[0]}


def _observed_names(statements):
    """Names something besides the code as written may read: those a nested function, lambda,
    class or generator expression names (it may run after a renaming moved the value); None (all
    of them) where locals(), vars(), eval() or exec() may look them up by their text."""
    observed = set()
    for node in ast.walk(ast.Module(body=list(statements), type_ignores=[])):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("locals", "vars", "eval", "exec")):
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                             ast.GeneratorExp)):
            observed |= {part.id for part in ast.walk(node) if isinstance(part, ast.Name)}
    return observed


def _range_bounds(node):
    """(start, stop, step) of a plain `for` over range(...), else None: step a Python int
    where the source writes one (`range(n, 0, -2)`), else its expression."""
    if not (isinstance(node, ast.For) and not node.orelse and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
            and not node.iter.keywords and 1 <= len(node.iter.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in node.iter.args)):
        return None
    args = node.iter.args
    if len(args) == 1:
        return ast.Constant(0), args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    step = _literal_int(args[2])
    if step == 0:
        return None  # Python's ValueError, where the loop starts
    return args[0], args[1], args[2] if step is None else step


def _literal_int(node):
    """The int a literal `3` or `-3` writes, else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal_int(node.operand)
        return None if value is None else -value
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


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


def _iteration(loop, index, turn, stride):
    """The loop's target bound to the index of the cycle's iteration `turn`, then a copy of
    its body."""
    offset = turn * stride if isinstance(stride, int) else f"{turn} * {stride}"
    value = _name(index) if turn == 0 else _parsed(f"{index} + {offset}")
    bind = ast.Assign(targets=[copy.deepcopy(loop.target)], value=value)
    return [_located(bind, loop)] + copy.deepcopy(loop.body)


def _loop(original, index, iterable, body):
    loop = ast.For(target=_name(index, ast.Store()), iter=iterable, body=body, orelse=[],
                   type_comment=None)
    return _located(loop, original)


def _assign(name, value):
    return ast.Assign(targets=[_name(name, ast.Store())], value=ast.Constant(value))


def _names(names, context=None):
    return ast.Tuple(elts=[_name(name, context) for name in names], ctx=context or ast.Load())


def _parsed(expression):
    return ast.parse(expression, mode="eval").body


def _located(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old))
