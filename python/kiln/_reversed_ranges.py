"""`for i in reversed(range(...))`, as back substitution and backward passes are written: the
loop rewrite (kiln._loop_transform) knew only `range(...)`, so such a loop was unrolled (3,000
iterations: 7 s of tracing, then a graph too large to compile, run eagerly). It is captured as
the range of the same values in the other order, whose bounds the capture helper computes when
the loop starts (`reversed_bounds`), from Python ints or traced ones. Only where the step is
written as a number: its sign decides the bounds."""
import ast


def reversed_range_call(iterator):
    """The `range(...)` call of `reversed(range(...))` whose step is absent or an int literal,
    or None."""
    if not (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name)
            and iterator.func.id == "reversed" and len(iterator.args) == 1
            and not iterator.keywords):
        return None
    inner = iterator.args[0]
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
            and inner.func.id == "range" and not inner.keywords
            and 1 <= len(inner.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in inner.args)):
        return None
    if len(inner.args) == 3 and _literal_int(inner.args[2]) in (None, 0):
        return None
    return inner


def _literal_int(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal_int(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def reversed_bounds(*arguments):
    """(start, stop, step) of reversed(range(*arguments)), the step a nonzero int."""
    start, stop, step = (0, arguments[0], 1) if len(arguments) == 1 else (*arguments, 1)[:3]
    if all(type(value) is int for value in (start, stop)):
        backwards = range(start, stop, step)[::-1]
        return backwards.start, backwards.stop, backwards.step
    # traced bounds: the count of the forward range (at most 0 where it is empty), then its
    # last value first; an empty count gives an empty range too
    count = (stop - start + step - (1 if step > 0 else -1)) // step
    return start + (count - 1) * step, start - step, -step
