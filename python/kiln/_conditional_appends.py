"""`items.append(value)` under a traced condition in a captured for loop's body: an `if` of
the body (BiCGSTAB's residual history every few iterations, RKF45's accepted steps, a
perceptron's mistakes), or after a `break`'s or `continue`'s test (`hist.append(r); if r <
tol: break`: kiln._loop_jumps puts what follows a jump under its flag). Each was unrolled: a
branch whose side appends changes Python state, so it was a graph break per iteration.

The loop carries, besides the (trip count, *row) stack of kiln._loop_appends, `count`: the rows
appended so far. An append writes row `count` of a new stack and adds one to a new count; the
branch selects the count of the side taken (kiln._branch_capture._merge: `merged`) and keeps
the appending side's stack: the row it wrote is past the count where the other side was taken,
and the next append writes it again. At most one append per iteration: `count` never passes
the iteration's number, so the stack has the row. After the loop the list gets the first
`count` rows: the count is read from the graph so far (a graph break that goes on), as the
list's length is Python's to know.

The first trace finds a conditional append where a branch merges an Appended with the list
(an Appended whose `conditional` is set); a second trace whose Stack was not conditional (its
first trace ran the branch as Python: a jump's flag, False until the body sets it) is traced
again with it conditional (LoopCapture.appended raises _Retype).
"""
import copy

import numpy as np

from . import _loop_appends
from ._graph_breaks import materialize
from ._loop_types import CaptureFailed
from ._tracer import TracedArray, backend, cast, to_tensor


def carry_count(context, trace, stack):
    """Gives `stack` its carried count (from 0): its placeholder and (initial, placeholder)
    as `count_slot`. Refused in a branch side or a body of another loop: the list's length is
    read when the loop ends, a graph break, which neither may hold."""
    if context.branch_sides:
        raise CaptureFailed("values are appended under a condition in a loop inside a branch "
                            "on a traced value")
    placeholder = trace.loop_placeholder("int64", [])
    stack.count = TracedArray(context, placeholder)
    stack.count._scalar, stack.count._weak = True, int
    stack.count_placeholder = placeholder
    stack.count_slot = (context.constant(0, np.dtype(np.int64)), placeholder)


def appended(stack, value):
    """A new Stack: `value` in row `count` of a new buffer, count + 1 (LoopCapture.appended)."""
    context = stack.buffer._context
    shape = tuple(np.shape(value)) if not isinstance(value, TracedArray) else tuple(value.shape)
    if shape != tuple(stack.stacked.shape):
        raise CaptureFailed("a list is appended values of different shapes in the loop")
    new = copy.copy(stack)
    new.base_buffer, new.base_count = stack.buffer, stack.count
    new.buffer = TracedArray(context, stack.buffer.tensor)
    new.row = cast(to_tensor(context, value, np.dtype(stack.stacked.dtype)), stack.stacked.dtype)
    new.buffer[stack.count] = TracedArray(context, new.row)
    new.count = stack.count + 1
    new.written = True
    return new


def merged(context, predicate, name, a, b):
    """The list `name` after a branch on `predicate` whose sides left `a` and `b`: the first
    trace's Appended (conditional), or the Stack of the side taken (its count selected)."""
    Appended, Stack = _loop_appends.Appended, _loop_appends.Stack
    if isinstance(a, Stack) or isinstance(b, Stack):
        if not (isinstance(a, Stack) and isinstance(b, Stack) and a.items is b.items
                and a.count is not None and b.count is not None):
            raise CaptureFailed(f"`{name}` is a list appended to on one side of the branch and "
                                "something else on the other")
        return _merged_stacks(context, predicate, a, b)
    items = [value.items if isinstance(value, Appended) else value for value in (a, b)]
    if items[0] is not items[1] or not isinstance(items[0], list):
        raise CaptureFailed(f"`{name}` is a list appended to on one side of the branch and "
                            "something else on the other")
    appends = [value for value in (a, b) if isinstance(value, Appended)]
    kinds = {_kind(_loop_appends.Stacked(value)) for value in appends}
    if len(kinds) != 1:
        raise CaptureFailed(f"`{name}` is appended values of different types on the two sides "
                            "of the branch")
    return Appended(items[0], appends[0].value, appends[0].depth, conditional=True)


def _kind(stacked):
    return stacked.dtype, tuple(stacked.shape), stacked.flags


def _merged_stacks(context, predicate, a, b):
    k = backend()
    new = copy.copy(a if a.written else b)
    new.count = TracedArray(context, k.where(predicate, a.count.tensor, b.count.tensor))
    new.count._scalar, new.count._weak = True, int
    new.written = a.written or b.written
    if a.written and b.written:  # both wrote row base_count: the side taken's row there
        if a.base_buffer is not b.base_buffer:
            raise CaptureFailed("a list is appended to more than once in an iteration")
        new.row = k.where(predicate, a.row, b.row)
        new.buffer = TracedArray(context, a.base_buffer.tensor)
        new.buffer[a.base_count] = TracedArray(context, new.row)
    return new


def first_rows(context, tensor, count_tensor):
    """The first `count` rows of a conditional list's final stack; the count is read from the
    graph so far (a graph break that goes on)."""
    count = TracedArray(context, cast(count_tensor, "int64"))
    count = int(materialize(count, "the length of a list a loop appends to under a condition"))
    shape = list(tensor.shape)
    return backend().slice(tensor, [(0, count, 1)] + [(0, n, 1) for n in shape[1:]])
