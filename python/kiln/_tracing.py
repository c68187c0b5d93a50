"""What kiln.compile and kiln.wrap_numpy share in tracing a function: where it is (for
messages) and its loops and branches rewritten for capture."""
import os

from . import _loop_transform
from ._config import config
from ._loop_helpers import with_rewritten_helpers


def location_of(fn):
    """file:line of a function (its qualified name, or repr, when it has no code)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def with_loop_capture(original, function, tracer, trace, note_loop):
    """`function` (`original` as traced: its globals swapped) with its loops and branches
    rewritten for capture (kiln._loop_transform), under config.capture_loops;
    note_loop(kind, location, reason) hears of each loop and branch."""
    rewritten = _loop_transform.rewrite(original) if config.capture_loops else None
    for location, reason in rewritten.refused if rewritten is not None else ():
        note_loop("unrolled", location, reason)
    capture = getattr(tracer, "loop_capture", None)  # a stand-in tracer may have none
    if not config.capture_loops or capture is None:
        return function
    helper = capture(trace, note_loop)
    function = with_rewritten_helpers(function, helper, note_loop)  # (kiln._loop_helpers)
    if rewritten is None or rewritten.code is None:
        return function
    if hasattr(helper, "compiled_code"):  # its loops' views are no helper's (_carried_views)
        helper.compiled_code = rewritten.code
    return rewritten.bind(function, helper)
