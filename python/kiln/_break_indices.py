"""Integer indices after a graph break as graph inputs. A function with a graph break is traced
again on every call, and at each break the graph traced since the last one runs (_retrace.py);
a loop kiln unrolls around a break (`if avg_l == 0:` on data) makes one such segment per
iteration. With `x[i]` traced as a constant slice, each segment's text held its own `i` and
compiled its own graph (RSI over 2000 prices: a graph per price, until the segment limit sent
the calls to NumPy). After a break, an in-range Python int index is fed as a 0-d int64 graph
input instead (read through take, written through scatter): the segments of the iterations
are one text, compiled once. Its value is this call's and is bound-checked here, in Python,
on every trace; the graph needs no check."""
import numpy as np

from ._tracer import TracedArray


def lifted_entries(x, entries, shape):
    """`entries` (kiln._indexing._expand's: ints, slices, None, arrays) with each in-range int
    made a traced 0-d int64 graph input, where the trace has broken already; else unchanged.
    Only keys of ints and slices: among None or arrays, an int is placed by NumPy's rules for
    scalars (basic indexing), which a 0-d array would not keep."""
    context = x._context
    driver = context.driver
    if driver is None or not driver.broke or context.in_body:
        return entries
    if not any(isinstance(e, int) for e in entries) or not all(
            isinstance(e, (int, slice)) for e in entries):
        return entries
    lifted = list(entries)
    for axis, entry in enumerate(entries):  # (no None: each entry is one axis)
        size = shape[axis]
        if not isinstance(entry, int) or not -size <= entry < size:
            continue  # (out of range: NumPy's IndexError, raised by the constant's path)
        tensor = context.data_input(np.array(entry % size, np.int64))
        index = TracedArray(context, tensor)
        index._scalar = True
        index._range = (0, size - 1)  # wrapped and checked: _position adds neither
        lifted[axis] = index
    return lifted
