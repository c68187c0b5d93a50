"""NumPy arrays the function made that a captured loop body names, read as graph values
(kiln._loop_capture).

`steps = rng.standard_normal(n)` (a draw), `rng.choice([-1, 1], size=n)`, the result of a call
that ran eagerly: a real ndarray, which NumPy's own indexing cannot index by the loop's traced
index (`steps[i]` asked for the index's value: a graph break, so the loop unrolled). For the
body's trace such a name holds the array as a traced one (TraceContext.lift: a graph input
after a graph break, so that a draw of every call feeds the one compiled graph; a constant
otherwise, its value known for Python's uses of it), and the ndarray again after the loop.

The traced stand-in is the body's to read only: a write into it, or a name that holds it or a
view of it after an iteration (an alias NumPy would share the ndarray through), gives the
lifting up, and the loop is traced again with the ndarray as it is (LoopCapture._capture),
read-only for that trace (read_only).
"""
import contextlib

import numpy as np

from ._loop_types import CaptureFailed
from ._tracer import TracedArray
from ._tracer_types import SUPPORTED_DTYPES, dtype_name


def _liftable(value):
    return (type(value) is np.ndarray and value.dtype.kind in "biufc" and value.dtype.isnative
            and dtype_name(value.dtype) in SUPPORTED_DTYPES)


def lift(context, names, get, set_, keep, count):
    """{name: (ndarray, its traced stand-in)} of the first `count` names that hold a NumPy
    array, now rebound to the stand-ins (names the setter cannot rebind are left as they
    are)."""
    lifted = {}
    for name, value in zip(names[:count], get()[:count]):
        if _liftable(value):
            snapshot = np.array(value)  # a copy of its own: lift keeps arrays by identity
            traced = TracedArray(context, context.lift(snapshot).tensor)
            context.known.setdefault(traced.tensor.id, snapshot.copy)
            lifted[name] = (value, traced)
    if not lifted:
        return {}
    set_(tuple(lifted[name][1] if name in lifted else keep for name in names))
    now = dict(zip(names, get()))
    return {name: pair for name, pair in lifted.items() if now[name] is pair[1]}


def check_unshared(stand_ins, slots, names, values):
    """After an iteration: no stand-in written into (by the loop that carries it, `slots`),
    and no name but its own holds one or a view of one. stand_ins: {id: name} of the
    stand-ins of the loops being captured."""
    for array_names, array, _, placeholder in slots:
        if id(array) in stand_ins and array._tensor.id != placeholder.id:
            raise CaptureFailed(f"the body writes into `{stand_ins[id(array)]}`, a NumPy "
                                f"array the function made (NumPy's writes go to it)")
    for name, value in zip(names, values):
        if not isinstance(value, TracedArray):
            continue
        owner = stand_ins.get(id(value), stand_ins.get(id(value._root)))
        if owner is not None and (owner != name or value._root is not None):
            raise CaptureFailed(f"`{name}` holds the NumPy array `{owner}` (or a view of it) "
                                f"after an iteration")


def restore(lifted, names, get, set_, keep):
    """The ndarrays back in the names that still hold their stand-ins."""
    if not lifted:
        return
    now = dict(zip(names, get()))
    set_(tuple(lifted[name][0] if name in lifted and now[name] is lifted[name][1] else keep
               for name in names))


@contextlib.contextmanager
def read_only(values):
    """The NumPy arrays among `values` made read-only while a body is traced with them as they
    are: the trace runs the body once, so NumPy's in-place write into one (`cash *= 0.5`) was
    made once for every iteration of the captured loop, or, the capture given up, once more
    before the Python loop ran the iteration again. NumPy raises at such a write instead, and
    the loop runs as Python."""
    frozen, seen = [], set()
    for value in values:
        if type(value) is np.ndarray and value.flags.writeable and id(value) not in seen:
            seen.add(id(value))
            value.flags.writeable = False
            frozen.append(value)
    try:
        yield
    finally:
        while frozen:  # a view's flag comes back once its base's has
            refused = []
            for array in frozen:
                try:
                    array.flags.writeable = True
                except ValueError:
                    refused.append(array)
            if len(refused) == len(frozen):
                break
            frozen = refused
