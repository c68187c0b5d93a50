"""The most iterations a while loop may run, where its test bounds a counter: `while err >
tol and k < maxit: ...; k += 1`. Such a loop ends by the time k reaches maxit, so its trip
count is at most maxit - k (its values when the capture starts); the loop node runs at most
that many, and a list its body appends to (Newton's and bisection's histories) is carried in
that many rows (kiln._loop_appends: it was unrolled, a graph break per iteration).

The transform (bound_argument) finds a conjunct `k < stop` (`k <= stop`, `stop > k`) of the
test whose k the body's top level steps by a positive constant (`k += 1`, `k = k + 2`), once,
with no `continue` in the body that might skip it and no other binding of k; stop reads no
name the body binds and calls nothing. The run time (span) takes the bound where k and stop
are Python ints then."""
import ast
import sys

import numpy as np

ROWS_AT_MOST = 1 << 20  # a bound past this stays unknown: its rows would not fit


def bound_argument(node, assigned, rebound):
    """`, bound=lambda: (stop, k, step, inclusive)` of the while loop `node` (an ast.While)
    whose body binds `assigned` (`rebound`: through the functions it calls), or "" when its
    test bounds no counter."""
    tests = node.test.values if (isinstance(node.test, ast.BoolOp)
                                 and isinstance(node.test.op, ast.And)) else [node.test]
    if any(isinstance(part, ast.Continue) for part in ast.walk(ast.Module(node.body, []))):
        return ""
    for test in tests:
        counted = _compared(test)
        if counted is None:
            continue
        name, stop, inclusive = counted
        step = _step(node.body, name)
        reads = {part.id for part in ast.walk(stop) if isinstance(part, ast.Name)}
        if (step is None or reads & set(assigned) or name in rebound
                or any(isinstance(part, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield,
                                         ast.Lambda, ast.Subscript))
                       for part in ast.walk(stop))):
            continue
        return f", bound=lambda: ({ast.unparse(stop)}, {name}, {step}, {inclusive})"
    return ""


def _compared(test):
    """(k, stop, inclusive) of `k < stop`, `k <= stop`, `stop > k`, `stop >= k`; else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        left, right = right, left
        op = ast.Lt() if isinstance(op, ast.Gt) else ast.LtE()
    if not isinstance(op, (ast.Lt, ast.LtE)) or not isinstance(left, ast.Name):
        return None
    return left.id, right, isinstance(op, ast.LtE)


def _step(body, name):
    """The positive int constant the body's top level adds to `name` once, where nothing else
    in it binds `name`; else None."""
    steps = []
    for statement in body:
        if (isinstance(statement, ast.AugAssign) and isinstance(statement.op, ast.Add)
                and isinstance(statement.target, ast.Name) and statement.target.id == name):
            steps.append(statement.value)
        elif (isinstance(statement, ast.Assign) and len(statement.targets) == 1
              and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name
              and isinstance(statement.value, ast.BinOp) and isinstance(statement.value.op, ast.Add)
              and isinstance(statement.value.left, ast.Name)
              and statement.value.left.id == name):
            steps.append(statement.value.right)
    stores = sum(isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store)
                 and part.id == name for part in ast.walk(ast.Module(body, [])))
    if len(steps) != 1 or stores != 1:
        return None
    step = steps[0]
    if not (isinstance(step, ast.Constant) and type(step.value) is int and step.value > 0):
        return None
    return step.value


def span(bound, lifted=None, names=(), get=None, set_=None, keep=None):
    """range(0, the most iterations), or range(0, sys.maxsize) where that is unknown. lifted:
    the Python numbers the loop made traced for its test (kiln._loop_counters), the counter's
    among them: the bound reads their Python values (set back for it)."""
    unknown = range(0, sys.maxsize)
    if bound is None:
        return unknown
    if lifted:
        now = dict(zip(names, get()))
        set_(tuple(lifted.get(name, keep) for name in names))
    try:
        stop, counter, step, inclusive = bound()
    except Exception:  # (a name not bound yet: no bound)
        return unknown
    finally:
        if lifted:
            set_(tuple(now[name] if name in lifted else keep for name in names))
    if not all(isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
               for value in (stop, counter)):
        return unknown
    most = -(-(int(stop) - int(counter) + inclusive) // step)
    return range(0, most) if 0 < most <= ROWS_AT_MOST else unknown
