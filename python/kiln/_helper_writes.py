"""When a captured loop runs: whether the global functions its function calls write what they
are given. kiln._loop_aliases' verdicts name such calls (a dotted global name, how many
positional arguments, an out=) where the function's own code cannot tell (`bump(x)`,
`state = step(state)`); verdict() answers them in the namespace the loop runs in, reading each
function's source as kiln._loop_aliases reads the compiled one, and the functions it calls in
turn, so that a helper rebound to one that writes is seen at the next trace."""
import ast
import builtins
import math
import textwrap
import types

import numpy as np

from ._call_effects import (FRESH_BUILTINS, HOLDING_BUILTINS, MOST_CALL_DEPTH, NUMPY_FRESH,
                            NUMPY_VIEWS, numpy_object)
from ._loop_aliases import InPlace
from ._loop_rewrite_parts import HELPER
from ._loop_source import compiles_to, source_of

class Writes:
    """A verdict of calls of global functions (as_constant's tuple), true when one of the
    functions `namespace` (the compiled function's globals) names may write what it is
    given, a global, or what they hold: asked only where it matters."""

    def __init__(self, specs, namespace):
        self.specs, self.namespace = specs, namespace

    def __bool__(self):
        return any(_call_writes(_resolve(name, self.namespace, {}), count, out, set())
                   for name, count, out in self.specs)


def verdict(value, namespace):
    """A verdict as the rewrite left it (as_constant), where the loop runs in `namespace`."""
    return value if isinstance(value, bool) else Writes(value, namespace)


_MISSING = object()
_analyses = {}


def _resolve(name, namespace, cells):
    parts = name.split(".")
    value = cells.get(parts[0], namespace.get(parts[0], getattr(builtins, parts[0], _MISSING)))
    for part in parts[1:]:
        if value is _MISSING:
            break
        value = getattr(value, part, _MISSING)
    return value


def _known_function(value):
    """Whether `value` is a NumPy, math or builtin function known to write nothing."""
    if isinstance(value, types.BuiltinFunctionType) and getattr(math, value.__name__,
                                                                None) is value:
        return True
    if getattr(builtins, getattr(value, "__name__", ""), None) is value:
        return value.__name__ in FRESH_BUILTINS or value.__name__ in HOLDING_BUILTINS
    name = getattr(value, "__name__", None)
    return name is not None and any(
        numpy_object(path) is value for path in (*NUMPY_FRESH, *NUMPY_VIEWS)
        if path.rsplit(".", 1)[-1] == name)


def _call_writes(value, count, out, visiting):
    """Whether a call of `value` with `count` positional arguments (out: an out= keyword)
    may write what it is given, a global, or what they hold."""
    if isinstance(value, np.ufunc):
        return out or count > value.nin
    if _known_function(value):
        return out
    if not isinstance(value, types.FunctionType) or len(visiting) >= MOST_CALL_DEPTH:
        return True  # classes, methods, partials, C functions: may write
    code = value.__code__
    if code in visiting:  # recursion adds no write of its own
        return False
    if code not in _analyses:
        _analyses[code] = _analysis(value)
    own = _analyses[code]
    if not isinstance(own, frozenset):
        return own
    cells = dict(zip(code.co_freevars, (_cell(c) for c in value.__closure__ or ())))
    visiting.add(code)
    try:
        return any(_call_writes(_resolve(name, value.__globals__, cells), n, o, visiting)
                   for name, n, o in own)
    finally:
        visiting.discard(code)


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _analysis(function):
    """InPlace.own_writes of a user function's source (True where there is none, or it is
    not the function's: a lambda, a file edited since). The function may be kiln's rewrite of
    its source (kiln._loop_transform: a helper's loops and calls), read as the user wrote it."""
    code = function.__code__
    try:
        tree = ast.parse(textwrap.dedent(source_of(code, function.__globals__)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return True
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef) or definition.name != code.co_name:
        return True
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    try:  # the file may have been edited since; kiln's rewrite of it checked that itself
        if HELPER not in code.co_freevars and not compiles_to(definition, code.co_filename,
                                                              code):
            return True
    except (SyntaxError, ValueError, TypeError):
        return True
    own = InPlace(definition).own_writes()
    return own if own is True else frozenset(own or ())
