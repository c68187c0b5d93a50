"""What kiln.compile and kiln.wrap_numpy share in tracing a function: where it is (for
messages) and its loops and branches rewritten for capture."""
import os

from . import _loop_transform
from ._config import config


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
    if rewritten is None:
        return function
    for location, reason in rewritten.refused:
        note_loop("unrolled", location, reason)
    capture = getattr(tracer, "loop_capture", None)  # a stand-in tracer may have none
    if rewritten.code is None or capture is None:
        return function
    return rewritten.bind(function, capture(trace, note_loop))
