"""Names a captured loop's body binds that are unbound before the loop and read after it
(power iteration: `for ...: lam_new = v @ w; ...; if converged: break`, then `return lam_new`).

Python binds such a name in each iteration that reaches its assignment: after the loop it holds
the last value bound, and it is unbound where no iteration bound it (a NameError at the read).
The loop carries it from zeros of its type (kiln._loop_capture._results). The body's first trace
sees it unbound: a read before its assignment raises there, and a branch that binds it on one
side only refuses the loop. So the first iteration binds it before any read (its Python values
are those of that trace), and every later one reads what an earlier one bound: whenever the loop
runs an iteration, the carried value is Python's.
A body traced again (another variable changed type: a break's flag became traced) starts from
the name bound (BoundInBody), so that a branch that keeps it on one side (`if not stop: ...`,
kiln._loop_jumps, where the break's flag is never set in the first iteration) carries it.
A loop that may run no iteration (a range over a traced bound or a number that changes between
calls, a while loop whose test is traced from its start) is captured as one that runs an
iteration, with a runtime check where it runs none: its error reruns the call eagerly
(kiln._raising_calls; kiln._retrace.RerunEagerly where a graph break's segment runs it), and
Python's run raises at the read, or reads nothing (runs_none). A loop in a body being captured
has no such check: the enclosing loop runs as Python.
"""
import numpy as np

from ._loop_types import (CaptureFailed, is_number, python_type, rerun_note, rerun_where,
                          type_of)
from ._tracer import TracedArray, backend, to_tensor


class BoundInBody:
    """The kind (kiln._loop_capture's `types`) of a name unbound before the loop that the first
    iteration binds: a NumPy scalar or a weak Python number of (dtype, shape) as it was there."""

    def __init__(self, dtype, shape, scalar, weak):
        self.dtype, self.shape, self.scalar, self.weak = dtype, tuple(shape), scalar, weak

    @classmethod
    def of(cls, context, value, kind=None, name=None):
        """`value`'s kind; of (dtype, shape) `kind` where the loop widens it."""
        if kind is not None and not isinstance(kind, tuple):  # an array that grows
            raise CaptureFailed(f"`{name}` changes shape in the loop")
        dtype, shape = kind or type_of(to_tensor(context, value))
        scalar = value._scalar if isinstance(value, TracedArray) else is_number(value)
        return cls(dtype, shape, scalar, python_type(value))

    def carried(self, context):
        """(zeros of the name's type, before the loop; its placeholder; the value the body
        starts from)."""
        initial = backend().broadcast_to(context.constant(0, np.dtype(self.dtype)),
                                         list(self.shape))
        placeholder = context.trace.loop_placeholder(self.dtype, list(self.shape))
        value = TracedArray(context, placeholder)
        value._scalar, value._weak = self.scalar, self.weak
        return initial, placeholder, value

    def __repr__(self):
        return f"BoundInBody({self.dtype}{self.shape})"


def unbound_reads(capture, names, values, live):
    """The names read after the loop (`live`) that hold no value before it."""
    return [name for name, value in zip(names, values)
            if name in live and value is capture.UNBOUND]


def runs_none(capture, runs, names, values, live):
    """Whether a loop that may run no iteration (`runs()`: its traced truth of running one)
    runs none, where that matters: a name read after it is unbound before it. As far as the
    trace tells, it runs one (False): captured so, with a check where it runs none whose error
    reruns the call eagerly (kiln._raising_calls), and Python's run raises at the read, or reads
    nothing. Where no call reruns (kiln.wrap_numpy's), Python's answer: a graph break. In a body
    being captured, neither: the enclosing loop runs as Python (CaptureFailed)."""
    unread = unbound_reads(capture, names, values, live)
    if not unread:
        return False
    message = (f"`{unread[0]}` is read after the loop, which may run no iteration (Python's "
               f"NameError then)")
    if capture.depth > 0:
        raise CaptureFailed(message)
    context = capture.context
    if rerun_note(context) is None:
        return not bool(runs())
    rerun_where(context, np.reshape(np.logical_not(runs()), ()).tensor, message, "loop")
    return False


def for_loop_runs_none(capture, bounds, names, values, live):
    """runs_none of a for loop over a dynamic range (its index too is unbound before it)."""
    def runs():
        start, stop, step = capture._bounds(bounds, None)
        k = backend()
        return TracedArray(capture.context,
                           k.greater(stop, start) if step > 0 else k.less(stop, start))
    return runs_none(capture, runs, names, values, live)


def unbind_held_objects(capture, names, get, set_, temporaries, count):
    """The body's temporaries (kiln._loop_transform: bound before any read, not read after the
    loop) that hold a Python object (a list, a tuple, a string) or a selection, unbound for the
    body's trace (LoopCapture._capture): {position: value}. An iteration that ran as Python
    before it (the first one, on its own where a Python float became np.float64:
    kiln._loop_peeling; a while loop's first ones) left there the body's temporary (`head,
    *tail = row`, `parts = list(row)`, `sel = x[i][x[i] > t]`), and a Python value that
    changes, or a selection whose length the data decide, refused the loop (it unrolled). They
    are put back after it (a `del` of one after the loop)."""
    values = get()
    held = {position: value for position, (name, value) in enumerate(zip(names[:count], values))
            if name in temporaries and value is not capture.UNBOUND
            and (value._selection is not None if isinstance(value, TracedArray)
                 else not is_number(value))}
    if held:
        set_(tuple(capture.UNBOUND if position in held else capture.KEEP
                   for position in range(len(names))))
    return held


def restore_held_objects(capture, held, names, get, set_):
    """unbind_held_objects' values put back where a body's trace left them unbound."""
    if held:
        values = get()
        set_(tuple(held[position] if values[position] is capture.UNBOUND and position in held
                   else capture.KEEP for position in range(len(names))))
