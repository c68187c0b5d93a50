"""Graph breaks raised by the tracer, and the user's source line they are reported at.

A value the trace cannot know (bool(), float(), .item(), conversion to an ndarray, an
unsupported function) either ends the trace (graph_break: GraphBreakSignal) or is computed by
the driver from the graph so far and tracing goes on with it (materialize). The driver is
reached through the trace context (TraceContext.driver), never imported: this module sits at
the bottom of the package's imports. Errors NumPy raises inside the tracer get the op and the
user's line in front (located).
"""
import dis
import functools
import os
import sys
import threading

import numpy as np

_PACKAGE_DIRECTORY = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIRECTORY = os.path.dirname(os.path.abspath(np.__file__))


# The benchmark's programs (kiln.bench.workloads) are user code that happens to ship with kiln.
_BENCH_DIRECTORY = os.path.join(_PACKAGE_DIRECTORY, "bench") + os.sep


@functools.lru_cache(maxsize=4096)
def is_kiln_code(filename):
    """Code of kiln itself (not its benchmark's programs)."""
    return filename.startswith(_PACKAGE_DIRECTORY + os.sep) and not filename.startswith(
        _BENCH_DIRECTORY)


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
        raised = getattr(_signals, "raised", None)
        if raised is not None:
            raised.append(self)


# The GraphBreakSignals raised during the trace running in this thread (signals_raised).
_signals = threading.local()


class signals_raised:
    """Collects the GraphBreakSignals raised while a trace runs (taken_by_user reads them)."""

    def __enter__(self):
        self.saved = getattr(_signals, "raised", None)
        _signals.raised = self.raised = []
        return self.raised

    def __exit__(self, *exception):
        _signals.raised = self.saved


def raise_taken_signal(context, raised):
    """kiln's own signal that ended the trace, taken by the user's handler (`except
    Exception:` around float(x.sum()) or x.astype(np.longdouble)), raised again: what ran after
    it was not NumPy's run (the handler's value instead of the real one, kept in the graph).
    `context.pending`: a break the driver ended (its kind not yet timed, a dynamic number
    needed); `raised`: the trace's GraphBreakSignals (signals_raised)."""
    if context.pending is not None:
        raise context.pending from None
    signal = taken_by_user(raised)
    if signal is not None:
        raise signal from None


def taken_by_user(raised):
    """The first signal of `raised` that the user's code caught (`except Exception:` around
    x.astype(np.longdouble)), or None: the trace went on past a point it cannot know, with the
    handler's values, a wrong answer kept in the graph. A caught exception's traceback starts
    at the frame that caught it; kiln's own handlers (a loop capture that falls back to
    unrolling) are internal code."""
    for signal in raised:
        traceback = signal.__traceback__
        if traceback is not None and not is_internal(traceback.tb_frame.f_code.co_filename):
            return signal
    return None


def graph_break(reason):
    """Raises the signal: the trace cannot go on past this point."""
    raise GraphBreakSignal(reason, user_location())


def opaque_value(context, reason):
    """Code the tracer cannot follow makes a value of this call (a random draw, a clock): the
    driver traces the function again on every call; without one (a loop body being captured,
    which no graph break may cut), the trace cannot go on."""
    if context.driver is None:
        graph_break(reason)
    context.driver.opaque_call(reason, user_location())


def materialize(value, reason):
    """The concrete ndarray of a tracer, from the driver (a graph break that continues)."""
    context = value._context
    known = context.known.get(value.tensor.id) if value._selection is None else None
    if known is not None:  # made by a creation function from static arguments
        return _handed_out(context, np.asarray(known()), value)
    driver = context.driver
    location = user_location()
    if driver is None:  # traced without a driver that can run the graph so far
        raise GraphBreakSignal(reason, location)
    full = np.asarray(driver.graph_break(value._unmasked(), reason, location))
    if value._selection is None:
        return _handed_out(context, full, value)
    mask = np.asarray(driver.graph_break(value._selection.tensor, reason, location))
    return full[mask]


def _handed_out(context, array, value):
    """`array`, noted as the memory of `value` (NumPy's np.asarray(x) is x: code that asks
    np.may_share_memory(np.asarray(x), x) must hear yes; kiln._numpy_memory)."""
    context.handed_out.append((array, value))
    return array


def located(error):
    """The tracer's error for a bad argument (NumPy's class and message) with the op and the
    user's file:line in front; None if it names them already or the user's code raised it."""
    if type(error) not in (ValueError, TypeError, IndexError) or str(error).startswith("kiln:"):
        return None
    frames, traceback = [], error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        inside = is_internal(code.co_filename)
        frames.append((inside, f"{os.path.basename(code.co_filename)}:{traceback.tb_lineno}",
                       traceback.tb_frame))
        traceback = traceback.tb_next
    users = [index for index, frame in enumerate(frames) if not frame[0]]
    if not users or users[-1] == len(frames) - 1:
        return None
    op = _op_name([frame for _, _, frame in frames[users[-1] + 1:]])
    return type(error)(f"kiln: {op} at {frames[users[-1]][1]}: {error}")


def refused_by_python(error):
    """The user's line where Python's own code refused a traced array that an ndarray passes
    (memoryview(x), bytearray(x), hashlib.sha256(x), struct.pack_into: the buffer protocol,
    which a Python class cannot offer), or None: a TypeError raised in the user's frame that
    names kiln's class or the buffer protocol. NumPy's run gives the result or NumPy's error
    (the call runs eagerly)."""
    if type(error) is not TypeError:
        return None
    message = str(error)
    if message.startswith("kiln:") or not any(
            word in message for word in ("TracedArray", "buffer", "bytes-like")):
        return None
    traceback = error.__traceback__
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    code = traceback.tb_frame.f_code
    if is_internal(code.co_filename):
        return None
    return f"{os.path.basename(code.co_filename)}:{traceback.tb_lineno}"


# The tracer's generic dispatchers: their names say nothing about the user's op.
_DISPATCHERS = {"<lambda>", "method", "forward", "reflected", "inplace", "apply_function",
                "apply_ufunc", "call_ufunc", "call_eagerly", "wrapper"}


def _op_name(internal_frames):
    """The NumPy op an error inside the tracer comes from: the ufunc or function being
    dispatched (`b - b` is subtract, `x.max()` max), else the first tracer function named after
    what it does (getitem, broadcast), else the operator (`len(x)` is len)."""
    for frame in internal_frames:
        for name in ("ufunc", "function"):
            dispatched = getattr(frame.f_locals.get(name), "__name__", "")
            if dispatched.isidentifier():
                return dispatched
    names = [frame.f_code.co_name for frame in internal_frames]
    return next((name for name in names if not name.startswith("_") and
                 name not in _DISPATCHERS),
                next((name.strip("_") for name in names if name.startswith("__")), ""))


class GraphBreak(RuntimeError):
    """Raised with fullgraph=True where the function cannot be captured as one graph."""


# ---- what the user's code is calling (its bytecode) ----

_NAME_LOADS = {"LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST",
               "LOAD_DEREF", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"}


@functools.lru_cache(maxsize=256)
def instructions(code):
    return tuple(dis.get_instructions(code))


# Instructions of a call that share its source span's start but do not produce the callee.
_CALL_PARTS = {"PRECALL", "KW_NAMES", "PUSH_NULL", "CACHE", "EXTENDED_ARG"}


@functools.lru_cache(maxsize=4096)
def callee_instruction(code, offset):
    """The instruction that loads what the call at `offset` calls (`zeros` of np.zeros(3), `z`
    of z(3)); None when the callee is no name or attribute (OPS["z"](3), f(x)(y)) or has no
    position. `offset` may point into the call's inline caches (a frame's f_lasti does): the
    call is the last instruction at or before it. The callee is the value computed last before
    the call's arguments among the instructions whose span starts where the call's does."""
    listing = instructions(code)
    at = max((i for i, instruction in enumerate(listing) if instruction.offset <= offset),
             default=None)
    start = at is not None and listing[at].positions
    if not start or start.lineno is None:
        return None
    start = (start.lineno, start.col_offset)
    # Python 3.13's CALL_KW takes its keywords' names from a LOAD_CONST placed at the
    # callee's span (3.11 and 3.12: KW_NAMES): it is no value the call computed.
    before = at - 1 if listing[at].opname == "CALL_KW" else at
    for instruction in reversed(listing[:before]):
        position = instruction.positions
        if (position is None or (position.lineno, position.col_offset) != start
                or instruction.opname in _CALL_PARTS):
            continue
        return instruction if instruction.opname in _NAME_LOADS else None
    return None


def called_by_a_shuffle():
    """Whether len() of a traced array comes from a shuffle: Generator.shuffle and
    np.random.shuffle (C code: the user's frame is calling `shuffle`), random.shuffle."""
    frame = sys._getframe(2)  # the caller of TracedArray.__len__
    if frame.f_code.co_name == "shuffle" and frame.f_globals.get("__name__") == "random":
        return True
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back   # np.random.shuffle is kiln's wrapper while tracing
    if frame is None:
        return False
    callee = callee_instruction(frame.f_code, frame.f_lasti)
    return callee is not None and callee.argval == "shuffle"
