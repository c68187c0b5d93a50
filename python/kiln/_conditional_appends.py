"""`items.append(value)` under a traced condition in a captured for loop's body: an `if` of
the body (BiCGSTAB's residual history every few iterations, RKF45's accepted steps, a
perceptron's mistakes), or after a `break`'s or `continue`'s test (`hist.append(r); if r <
tol: break`: kiln._loop_jumps puts what follows a jump under its flag). Each was unrolled: a
branch whose side appends changes Python state, so it was a graph break per iteration.

The loop carries, besides the (trip count, *row) stack of kiln._loop_appends, `count`: the rows
appended so far. An append writes row `count` of a new stack and adds one to a new count; the
branch selects the count of the side taken (kiln._loop_appends.merged, from
kiln._branch_capture._merge; always a select: both sides computed) and keeps the appending side's
stack: the row it wrote is past the count where the other side was taken,
and the next append writes it again. At most one append per iteration: `count` never passes
the iteration's number, so the stack has the row. After the loop the list gets the first
`count` rows: the counts of all its lists are read from the graph so far in one graph break
that goes on (read_counts), as a list's length is Python's to know.

The first trace finds a conditional append where a branch merges an Appended with the list
(an Appended whose `conditional` is set); a second trace whose Stack was not conditional (its
first trace ran the branch as Python: a jump's flag, False until the body sets it) is traced
again with it conditional (Stack.append raises AppendsUnderCondition, a _Retype). A for
loop that may break carries a count from its first trace (its flag may end it early).
"""
import copy

import numpy as np

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
    # an append writes row `count`: fewer than (appends an iteration) * (the iteration's
    # number + 1), a row of the stack (no index check)
    stack.count._range = (0, int(stack.buffer.shape[0]) - 1)
    stack.count_placeholder = placeholder
    stack.count_slot = (context.constant(0, np.dtype(np.int64)), placeholder)


def appended(stack, value):
    """A new Stack: `value` in row `count` of a new buffer, count + 1 (LoopCapture.appended)."""
    context = stack.buffer._context
    shape = tuple(np.shape(value)) if not isinstance(value, TracedArray) else tuple(value.shape)
    if shape != tuple(stack.stacked.shape):
        raise CaptureFailed("a list is appended values of different shapes in the loop")
    new = copy.copy(stack)
    new.before = stack
    new.buffer = TracedArray(context, stack.buffer.tensor)
    new.row = cast(to_tensor(context, value, np.dtype(stack.stacked.dtype)), stack.stacked.dtype)
    new.buffer[stack.count] = TracedArray(context, new.row)
    new.count = stack.count + 1
    new.written = stack.written + 1
    return new


def merged_stacks(context, predicate, a, b):
    """The Stack after a branch on `predicate` whose sides left Stacks `a` and `b` (one
    list): the count of the side taken; the rows each side appended since the Stack before
    the branch (a chain of `before`s), row by row the side taken's, where it wrote one (past
    its count otherwise: the next append writes it again)."""
    k = backend()
    chain = []
    stack = a
    while stack is not None:
        chain.append(stack)
        stack = stack.before
    start = b
    while start is not None and all(start is not stack for stack in chain):
        start = start.before
    if start is None:
        raise CaptureFailed("a list is appended to on the sides of a branch from other lists")
    rows_a, rows_b = _rows_since(a, start), _rows_since(b, start)
    new = copy.copy(a if len(rows_a) >= len(rows_b) else b)
    if rows_a and rows_b:
        new.buffer, previous = TracedArray(context, start.buffer.tensor), start
        for j in range(max(len(rows_a), len(rows_b))):
            row_a = rows_a[j] if j < len(rows_a) else rows_b[j]
            row_b = rows_b[j] if j < len(rows_b) else rows_a[j]
            step = copy.copy(start)  # the chain of the rows, for a branch around this one
            step.before, step.row = previous, k.where(predicate, row_a, row_b)
            new.buffer[start.count + j] = TracedArray(context, step.row)
            previous = step
        new.before, new.row = previous.before, previous.row
    new.count = TracedArray(context, k.where(predicate, a.count.tensor, b.count.tensor))
    new.count._scalar, new.count._weak = True, int
    new.written = max(a.written, b.written)
    return new


def _rows_since(stack, start):
    """The rows appended from Stack `start` to `stack`, in order."""
    rows = []
    while stack is not start:
        rows.append(stack.row)
        stack = stack.before
    return rows[::-1]


def read_counts(context, values, counts):
    """{position: count} of the final counts at `counts` (positions in `values`, the loop's
    results), read in one graph break. Every result is held across it: a break's graph keeps
    only what the trace still holds, so a stack not yet wrapped was computed again after it, a
    loop appending to two lists under a condition ran three times."""
    if not counts:
        return {}
    k = backend()
    held = [TracedArray(context, tensor) for tensor in values]  # noqa: F841 (kept alive)
    both = k.stack([cast(values[p], "int64") for p in counts], 0)
    read = materialize(TracedArray(context, both),
                       "the length of a list a loop appends to under a condition")
    return {p: int(n) for p, n in zip(counts, np.asarray(read).reshape(-1))}


def first_rows(tensor, count):
    """The first `count` rows (read_counts) of a conditional list's final stack."""
    shape = list(tensor.shape)
    return backend().slice(tensor, [(0, count, 1)] + [(0, n, 1) for n in shape[1:]])
