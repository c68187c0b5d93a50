"""The user's helper functions a traced function calls, with their loops and branches rewritten
for capture too (kiln._loop_transform rewrites the compiled function's own source only).

Numba's laplace2d calls `error = jacobi_relax_core(A, Anew)` in its while loop: the helper's
element loops and its `max(error, abs(...))` ran as Python on traced values, a graph break per
element (64 graphs, 28 s, then eager at 6x NumPy's time). A helper named by a global or a
closure cell of the function (and, in turn, of the helpers) that is a plain function of the
user's code is replaced, in the traced copy's globals and cells only, by its rewritten version
over the same capture helper. Functions of NumPy, kiln, the standard library and installed
packages stay as they are, as do helpers that rebind globals (their writes must reach the
module) and ones with nothing to rewrite.
"""
import dis
import functools
import sysconfig
import types

from . import _loop_transform
from ._graph_breaks import is_internal

_LIBRARIES = tuple({path for key in ("stdlib", "platstdlib", "purelib", "platlib")
                    if (path := sysconfig.get_paths().get(key))})


def with_rewritten_helpers(function, helper, note_loop):
    """`function` (a function or method) whose globals and closure cells name rewritten
    helpers; the function itself when none of them has anything to rewrite."""
    if isinstance(function, types.MethodType) and isinstance(function.__func__,
                                                             types.FunctionType):
        rebuilt = _with_helpers(function.__func__, helper, note_loop, {})
        return function if rebuilt is function.__func__ else types.MethodType(
            rebuilt, function.__self__)
    if not isinstance(function, types.FunctionType):
        return function
    return _with_helpers(function, helper, note_loop, {})


def _is_user_function(value):
    if type(value) is not types.FunctionType:
        return False
    filename = value.__code__.co_filename
    return not (filename.startswith("<") or is_internal(filename)
                or filename.startswith(_LIBRARIES))


@functools.lru_cache(maxsize=1024)
def _rebinds_globals(code):
    return any(instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")
               for instruction in dis.get_instructions(code))


def _helper(fn, helper, note_loop, done):
    """fn's stand-in: fn over rewritten helpers, its own loops and branches rewritten."""
    if id(fn) in done:  # recursion (or a helper reached twice): the same stand-in
        return done[id(fn)]
    done[id(fn)] = fn
    if _rebinds_globals(fn.__code__):
        return fn
    stand_in = _with_helpers(fn, helper, note_loop, done)
    rewritten = _loop_transform.rewrite(fn)
    if rewritten is not None:
        for location, reason in rewritten.refused:
            note_loop("unrolled", location, reason)
        if rewritten.code is not None:
            stand_in = rewritten.bind(stand_in, helper)
    done[id(fn)] = stand_in
    return stand_in


def _with_helpers(fn, helper, note_loop, done):
    code, globals_ = fn.__code__, fn.__globals__
    changes = {}
    for name in code.co_names:
        value = globals_.get(name)
        if _is_user_function(value):
            stand_in = _helper(value, helper, note_loop, done)
            if stand_in is not value:
                changes[name] = stand_in
    cells = fn.__closure__ or ()
    new_cells = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name the function binds later)
            new_cells.append(cell)
            continue
        stand_in = _helper(value, helper, note_loop, done) if _is_user_function(value) else value
        new_cells.append(cell if stand_in is value else types.CellType(stand_in))
    if not changes and all(new is old for new, old in zip(new_cells, cells)):
        return fn
    rebuilt = types.FunctionType(code, {**globals_, **changes} if changes else globals_,
                                 fn.__name__, fn.__defaults__, tuple(new_cells) or None)
    rebuilt.__kwdefaults__, rebuilt.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    return rebuilt
