"""Graph breaks raised by the tracer, and the user's source line they are reported at.

A value the trace cannot know (bool(), float(), .item(), conversion to an ndarray, an
unsupported function) either ends the trace (graph_break: the driver's GraphBreakSignal) or is
computed by the driver from the graph so far and tracing goes on with it (materialize).
"""
import os
import sys

import numpy as np

_PACKAGE_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIRECTORY = os.path.dirname(os.path.abspath(np.__file__))


def is_internal(filename):
    """Code of kiln, of NumPy (its dispatch shims included), or of the import system."""
    return filename.startswith((_PACKAGE_DIRECTORY, _NUMPY_DIRECTORY, "<frozen",
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


def graph_break(reason):
    """Raises the driver's signal: the trace cannot go on past this point."""
    from ._compile import GraphBreakSignal
    raise GraphBreakSignal(reason, user_location())


def note_data_scalar(value):
    """A Python scalar computed from a traced value: made an input where it is used again."""
    from ._compile import note_data_scalar as note
    return note(value)


def materialize(value, reason):
    """The concrete ndarray of a tracer, from the driver (a graph break that continues)."""
    known = value._context.known.get(value.tensor.id) if value._mask is None else None
    if known is not None:  # made by a creation function from static arguments
        return np.asarray(known())
    from ._compile import graph_break as driver_graph_break
    location = user_location()
    full = np.asarray(driver_graph_break(value.tensor, reason, location))
    if value._mask is None:
        return full
    mask = np.asarray(driver_graph_break(value._mask.tensor, reason, location))
    return full[mask]
