"""`for j in range(start, stop, step)` whose step is traced: a sieve's `range(i * i, n, i)`
over an outer loop's index i, a stride read from the data.

kiln's loop node takes a step known at the trace, so such a loop counts its iterations
instead: t over range(count), count Python's len(range(start, stop, step)) computed in the
graph (-((start - stop) // step), at least 0: a trip count from the data, as a while loop
has), and the body's j = start + t * step, a traced Python int. Where the step's sign is
known (its range: a loop index's), j's range is the bounds' (index checks fold away); a step
that may be zero raises Python's ValueError when the graph runs. Before, range() asked the
step's value (a traced array used as a Python integer): a graph break that unrolled the
loop around it (a sieve of 3,000 took 13-22 s to compile).
"""
import numpy as np

from . import _loop_extents
from ._loop_types import CaptureFailed
from ._tracer import TracedArray, backend, cast, to_tensor


def is_traced_step(step):
    return isinstance(step, TracedArray) and step.ndim == 0 and step.dtype.kind in "iu"


def _integer(context, value):
    return cast(to_tensor(context, value), "int64")


def _python_int(context, tensor, known_range=None):
    number = TracedArray(context, tensor)
    number._scalar, number._weak, number._range = True, int, known_range
    return number


def capture(loop, bounds, body, get, set_, names, live, location, condition):
    """LoopCapture.for_range's capture of a range whose step is traced (bounds: start, stop,
    step); raises CaptureFailed as _capture does."""
    context, k = loop.context, backend()
    start, stop, step = bounds
    for bound in (start, stop):
        if isinstance(bound, TracedArray) and (bound.ndim != 0 or bound.dtype.kind not in "iu"):
            raise CaptureFailed("a loop bound is not an integer")
    first, end, stride = (_integer(context, b) for b in (start, stop, step))
    zero, one = (context.constant(v, np.dtype(np.int64)) for v in (0, 1))
    steps = step._range
    if steps is None or steps[0] <= 0 <= steps[1]:
        k.check_flag(k.equal(stride, zero), context.constant(0, np.dtype(np.int64), (0,)),
                     "range() arg 3 must not be zero", "", "range")
    safe = k.where(k.equal(stride, zero), one, stride)
    count = _python_int(context, k.maximum(
        k.negative(k.floor_divide(k.subtract(first, end), safe)), zero))
    # The bounds' range where the sign is known (index_range reads only the step's sign).
    sign = None if steps is None else 1 if steps[0] > 0 else -1 if steps[1] < 0 else None
    known = None if sign is None else _loop_extents.index_range((start, stop, sign))

    def counted(t):
        j = _python_int(context, k.add(first, k.multiply(cast(t.tensor, "int64"), stride)), known)
        body(j)
    loop._capture((count,), None, counted, get, set_, names, live, location, condition,
                  indexed=True)
    after = get()[-1]  # the count's last t (or the target's value from before): j's
    if isinstance(after, TracedArray):
        last = k.where(k.greater(count.tensor, zero),
                       k.add(first, k.multiply(_integer(context, after), stride)),
                       _integer(context, after))
        set_(tuple(_python_int(context, last) if name == names[-1] else loop.KEEP
                   for name in names))
