"""Graph breaks raised by the tracer, and the user's source line they are reported at.

A value the trace cannot know (bool(), float(), .item(), conversion to an ndarray, an
unsupported function) either ends the trace (graph_break: GraphBreakSignal) or is computed by
the driver from the graph so far and tracing goes on with it (materialize). The driver is
reached through the trace context (TraceContext.driver), never imported: this module sits at
the bottom of the package's imports.
"""
import functools
import os
import sys

import numpy as np

_PACKAGE_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIRECTORY = os.path.dirname(os.path.abspath(np.__file__))


# The benchmark's programs (kiln.bench.workloads) are user code that happens to ship with kiln.
_BENCH_DIRECTORY = os.path.join(_PACKAGE_DIRECTORY, "bench") + os.sep


@functools.lru_cache(maxsize=4096)  # each traced op asks for every frame of the stack
def is_internal(filename):
    """Code of kiln, of NumPy (its dispatch shims included), or of the import system."""
    if filename.startswith(_BENCH_DIRECTORY):
        return False
    return filename.startswith((_PACKAGE_DIRECTORY + os.sep, _NUMPY_DIRECTORY + os.sep, "<frozen",
                                "<__array_function__"))


def user_location():
    """'file.py:line' of the innermost frame outside kiln and NumPy: the line the user wrote."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_internal(filename):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"


class GraphBreakSignal(Exception):
    """The tracer cannot continue: the driver runs the call eagerly (or raises kiln.GraphBreak
    under fullgraph=True)."""

    def __init__(self, reason, location=""):
        super().__init__(f"{reason} at {location}" if location else reason)
        self.reason = reason
        self.location = location


def graph_break(reason):
    """Raises the signal: the trace cannot go on past this point."""
    raise GraphBreakSignal(reason, user_location())


def materialize(value, reason):
    """The concrete ndarray of a tracer, from the driver (a graph break that continues)."""
    known = value._context.known.get(value.tensor.id) if value._mask is None else None
    if known is not None:  # made by a creation function from static arguments
        return np.asarray(known())
    driver = value._context.driver
    location = user_location()
    if driver is None:  # traced without a driver that can run the graph so far
        raise GraphBreakSignal(reason, location)
    full = np.asarray(driver.graph_break(value.tensor, reason, location))
    if value._mask is None:
        return full
    mask = np.asarray(driver.graph_break(value._mask.tensor, reason, location))
    return full[mask]
