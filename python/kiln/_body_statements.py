"""The statements of a captured loop body or branch side that kiln._loop_transform hands to the
capture helper (BodyStatements, a mixin of kiln._loop_capture.LoopCapture): call statements,
`with` blocks and `assert`s. A body traced once for every iteration, or a side traced whether
taken or not, runs each of them once, at the trace; what cannot be repeated or undone that way
gives the loop or branch up (CaptureFailed: it runs as written)."""
import ast
import contextlib
import warnings

import numpy as np

from ._loop_types import (CaptureFailed, rerun_note, rerun_where, truth,
                          untraced_effect as _untraced_effect)
from ._tracer import TracedArray, backend

# the classes themselves, not the stand-ins a trace puts in their place (their subclasses)
_UNCHECKED_CONTEXTS = (np.errstate, warnings.catch_warnings, contextlib.nullcontext)


class BodyStatements:
    def effect(self, function, *args, **kwargs):
        """A call statement of a loop body or branch (kiln._loop_transform._as_effect). In a
        body traced once for every iteration, or a branch side traced whether taken or not, a
        call whose effects the trace cannot repeat or undo (print, a list's or dict's method,
        random draws) gives the loop or branch up, as before."""
        if self.depth > 0 or self.sides > 0:
            reason = _untraced_effect(function)
            if reason is not None:
                raise CaptureFailed(reason)
        function(*args, **kwargs)

    def managed(self, manager):
        """The context manager of a `with` in a loop body or branch (kiln._loop_transform).
        A body traced once for every iteration enters and leaves it once, at the trace: only
        managers that change nothing the trace computes may be entered there (np.errstate
        and warnings.catch_warnings set what NumPy warns of, which kiln's kernels do not
        check; one that asks to raise is a graph break, kiln._numpy_errors). Any other (a
        lock, a timer, a file) gives the loop or branch up, as before."""
        if (self.depth > 0 or self.sides > 0) and not isinstance(manager, _UNCHECKED_CONTEXTS):
            raise CaptureFailed(f"a `with` of {type(manager).__name__}, which the trace of the "
                                f"body would enter once")
        return manager

    def asserted(self, test, location, kind="an assert"):
        """Whether `assert test` fails now (as_checked_assert): its test a Python value, as
        Python's `assert`; a traced one of a single element, a check that reruns the call
        eagerly where it is false when the graph runs, whose own `assert` then raises
        AssertionError with its message at NumPy's iteration, the arrays as NumPy left them
        (kiln._raising_calls). An `assert` of a row's sum in a loop asked bool() of it: a
        graph break an iteration, 61 graphs and 5 s of compiling for 4,000 rows. kind: what
        the check stands for, in its message (kiln._loop_optional_values' `is None` raise)."""
        if not isinstance(test, TracedArray) or test.size != 1 or rerun_note(self.context) is None:
            return not test
        rerun_where(self.context, backend().logical_not(truth(test)),
                    f"{kind} at {location} failed as the graph ran (the call runs again "
                    "eagerly)", "assert")
        return False


def as_checked_assert(statement, helper_call):
    """`assert T, M` of a captured body as `if HELPER.asserted(T, location): raise
    AssertionError(M)` (HELPER.asserted above); nothing where Python runs without asserts
    (`python -O`), as the `assert` it stands for. helper_call(name, node): the helper's call
    node (kiln._loop_transform)."""
    if not isinstance(statement, ast.Assert):
        return statement
    if not __debug__:
        return ast.copy_location(ast.Pass(), statement)
    check = helper_call("asserted()", statement)
    check.args = [statement.test, ast.Constant(f"line {statement.lineno}")]
    error = ast.Call(func=ast.Name(id="AssertionError", ctx=ast.Load()),
                     args=[statement.msg] if statement.msg is not None else [], keywords=[])
    failed = ast.If(test=check, body=[ast.Raise(exc=error, cause=None)], orelse=[])
    return ast.fix_missing_locations(ast.copy_location(failed, statement))
