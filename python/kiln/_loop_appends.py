"""`items.append(value)` in the body of a for loop kiln captures (kiln._loop_transform rewrites
it to `items = HELPER.appended(items, value)`): the values are stacked. The body is traced
once; its first trace finds what each iteration appends (Appended: dtype, shape, Python
type), and the next one carries a (count, *shape) array in which iteration k writes row k
(Stack). After the loop the list holds its rows, as eager appends would have made it
(_loop_capture.LoopCapture._apply), each taken from the stack when read (kiln._stacked_rows).
A loop whose count is known only when it runs, a list appended to twice in an iteration, or
used otherwise in the body, runs as Python."""
import numpy as np

from . import _stacked_rows
from ._loop_types import CaptureFailed
from ._tracer import TracedArray, backend


class Appended:
    """What the first trace of a body leaves in a list it appends to: the list, and the value
    of the iteration's append."""

    def __init__(self, items, value, depth):
        self.items, self.value, self.depth = items, value, depth


class Stacked:
    """A carried list's type: rows of (dtype, shape), each row (NumPy scalar?, weak type)."""

    def __init__(self, appended):
        value = appended.value
        if isinstance(value, TracedArray):
            self.dtype, self.shape = value.dtype.name, tuple(value.shape)
            self.flags = (value._scalar, value._weak)
        elif type(value) in (float, int) or isinstance(value, (np.floating, np.integer)):
            number = np.asarray(value)
            self.dtype, self.shape = number.dtype.name, ()
            self.flags = (not isinstance(value, (float, int)), type(value)
                          if isinstance(value, (float, int)) else None)
        else:
            raise CaptureFailed(f"a {type(value).__name__} is appended to a list")


class Stack:
    """A list the body appends to, in the trace that carries its rows: `buffer` (the loop's
    placeholder) gets row `position` (the iteration's number)."""

    def __init__(self, items, buffer, stacked, depth):
        self.items, self.buffer, self.stacked, self.depth = items, buffer, stacked, depth
        self.position = None
        self.written = False

    def append(self, value, depth):
        if depth != self.depth or self.written:
            raise CaptureFailed("a list is appended to more than once in an iteration")
        self.buffer[self.position] = value
        self.written = True


def appended(items, value, depth):
    """LoopCapture.appended at loop-body depth `depth` (0: no body being traced)."""
    if depth == 0:
        items.append(value)
        return items
    if isinstance(items, Stack):
        items.append(value, depth)
        return items
    if isinstance(items, Appended):
        raise CaptureFailed("a list is appended to more than once in an iteration")
    return Appended(items, value, depth)


def stack_slot(context, trace, items, stacked, count, depth):
    """(initial tensor, placeholder, Stack) of a list the body appends to `count` times."""
    if not isinstance(items, list):
        raise CaptureFailed("a value that is not a list is appended to")
    if depth > 1:
        raise CaptureFailed("values are appended in a loop nested in another kiln captures")
    if count is None:
        raise CaptureFailed("values are appended in a loop whose count is known only when it runs")
    shape = [count, *stacked.shape]
    initial = backend().broadcast_to(context.constant(0, np.dtype(stacked.dtype)), shape)
    placeholder = trace.loop_placeholder(stacked.dtype, shape)
    return initial, placeholder, Stack(items, TracedArray(context, placeholder), stacked, depth)


def rows(context, stack, tensor):
    """The values the loop appended: rows of its final stack, as the appends made them (a
    Python float of float(x) stays a Python float in the result), each read when first used
    (kiln._stacked_rows)."""
    return _stacked_rows.rows(context, tensor, stack.stacked.flags)


def position(index, span):
    """The iteration's number of the loop index `index` over `span` (a range)."""
    if span.start == 0 and span.step == 1:
        return index
    return (index - span.start) // span.step

