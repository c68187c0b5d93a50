"""Python's UnboundLocalError where the rewrite of a loop or branch moved the user's code into a
function of its own (kiln._loop_transform: a body or a side whose names are `nonlocal`).

There, reading or deleting one of the user's locals before it is bound raises NameError
("cannot access free variable 'y' ... in enclosing scope") where the user's function raises
UnboundLocalError, a subclass the user's `except UnboundLocalError:` catches: `for i in
range(n): y = y + x[i]`, or `del last` in a branch of a loop once `last` is gone. The helper
runs those functions through running_as_written, which raises Python's error instead."""
import sys

from ._graph_breaks import is_kiln_code


def running_as_written(function):
    """`function` (a body or branch side made by the rewrite), raising Python's own error for
    a name of the user's function it finds unbound."""
    def run(*arguments):
        try:
            return function(*arguments)
        except NameError as error:
            converted = _as_unbound_local(error, sys._getframe(1))
            if converted is None:
                raise
            raise converted.with_traceback(error.__traceback__) from None
    return run


def _as_unbound_local(error, caller):
    """The UnboundLocalError the user's code raises for `error`, or None where no function of
    the rewrite found a local of the user's function unbound (a user's own closure reading a
    variable of an enclosing function that is not bound raises NameError in Python too)."""
    if type(error) is not NameError or getattr(error, "name", None) is None:
        return None
    innermost = error.__traceback__
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    if not _is_rewrites(innermost.tb_frame.f_code):
        return None
    frame = caller  # out to the user's function, past the helper's frames and the rewrite's
    while frame is not None and (_is_rewrites(frame.f_code)
                                 or is_kiln_code(frame.f_code.co_filename)):
        frame = frame.f_back
    if frame is None or error.name not in frame.f_code.co_cellvars:
        return None
    return UnboundLocalError(f"cannot access local variable '{error.name}' where it is not "
                             "associated with a value")


def _is_rewrites(code):
    return code.co_name.startswith("__kiln_")
