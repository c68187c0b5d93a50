"""`items.append(value)` in the body of a for loop kiln captures (kiln._loop_transform rewrites
it to `items = HELPER.appended(items, value, aliased)`): the values are stacked. The body is traced
once; its first trace finds what each iteration appends (Appended: dtype, shape, Python
type), and the next one carries a (count, *shape) array in which iteration k writes row k
(Stack). After the loop the list holds its rows, as eager appends would have made it
(_loop_capture.LoopCapture._apply), each taken from the stack when read (kiln._stacked_rows).
Appends under a traced condition (an `if` of the body, after a break's test) also carry their
count, and the list gets the first `count` rows (kiln._conditional_appends).
A loop whose count is known only when it runs, a list appended to twice in an iteration, or
used otherwise in the body, runs as Python, except reads of its last items (`xs[-1]`: a
recurrence `xs.append(r * xs[-1] * (1 - xs[-1]))`, the SIR model's `s = S[-1]`), which read the
stack's row of an earlier iteration or the list's item from before the loop (it was unrolled:
2,000 steps of the logistic map compiled in 3.7 s)."""
import copy

import numpy as np

from . import _assumed_numbers, _conditional_appends, _stacked_rows, _while_bounds
from ._loop_types import AppendsUnderCondition, CaptureFailed
from ._tracer import TracedArray, backend, cast, to_tensor


def _back(key):
    """j of `items[-j]`, the only reads of a list the body appends to that it captures."""
    if type(key) is not int or key >= 0:
        raise CaptureFailed("a list the loop appends to is read other than by a constant "
                            "negative index (items[-1])")
    return -key


class Appended:
    """What the first trace of a body leaves in a list it appends to: the list, and the values
    of the iteration's appends (a predictor's and a corrector's: rows 2k and 2k + 1);
    conditional: made under a traced condition (an `if` of the body, or a jump's flag:
    kiln._conditional_appends), which some iterations do not take."""

    def __init__(self, items, values, depth, conditional=False):
        self.items, self.values, self.depth = items, list(values), depth
        self.conditional = conditional

    @property
    def value(self):
        return self.values[-1]

    def again(self, value, depth):
        """This list, `value` appended again in the iteration (of the first one's type)."""
        if depth != self.depth:
            raise CaptureFailed("a list is appended to in a loop and in a loop it holds")
        if _kind_of_rows(Stacked(Appended(None, [value], depth))) != _kind_of_rows(
                Stacked(self)):
            raise CaptureFailed("a list is appended values of different types in an iteration")
        return Appended(self.items, self.values + [value], depth, self.conditional)

    def __getitem__(self, key):
        """`items[-j]` after the first trace's appends: their values, or an item before."""
        back = _back(key)
        if self.conditional:
            raise CaptureFailed("a list the loop appends to under a condition is read in it")
        values = self.values
        return values[-back] if back <= len(values) else self.items[len(values) - back]


class Stacked:
    """A carried list's type: rows of (dtype, shape), each row (NumPy scalar?, weak type);
    `appends` of them an iteration (at most, where conditional)."""

    def __init__(self, appended):
        value = appended.value
        self.conditional = appended.conditional
        self.appends = len(appended.values)
        if isinstance(value, TracedArray):
            self.dtype, self.shape = value.dtype.name, tuple(value.shape)
            self.flags = (value._scalar, value._weak)
        elif type(value) in (float, int) or isinstance(value, (np.floating, np.integer)):
            number = np.asarray(value)
            self.dtype, self.shape = number.dtype.name, ()
            python = type(value) in (float, int)  # (np.float64 is a float subclass)
            self.flags = (not python, type(value) if python else None)
        else:
            raise CaptureFailed(f"a {type(value).__name__} is appended to a list")

    def as_conditional(self):
        """This type, of a list appended to under a traced condition (a `count` carried)."""
        kind = copy.copy(self)
        kind.conditional = True
        return kind


class Stack:
    """A list the body appends to, in the trace that carries its rows: `buffer` (the loop's
    placeholder) gets row `position` (the iteration's number). A list appended to under a
    traced condition also carries `count` (kiln._conditional_appends): its rows so far, the
    row an append writes; its appends make a new Stack (a branch selects between the sides')."""

    def __init__(self, items, buffer, stacked, depth, name=None, sides=0):
        self.items, self.buffer, self.stacked, self.depth = items, buffer, stacked, depth
        self.name, self.sides = name, sides  # sides: branch sides traced around the loop
        self.position = None
        self.written = 0  # appends of the iteration so far
        self.count = self.count_placeholder = None
        self.before = None  # the Stack an append made this one from (conditional only)

    def append(self, value, depth):
        if depth != self.depth or self.written >= self.stacked.appends:
            raise CaptureFailed("a list is appended to more times in an iteration than its "
                                "first trace found (or in a loop nested in the loop)")
        if _assumed_numbers.is_open(value):  # the row keeps its type: the choice is checked
            _assumed_numbers.commit(value)
        if self.count is not None:
            return _conditional_appends.appended(self, value)
        if self.buffer._context.branch_sides > self.sides:
            # under a traced condition its first trace ran as Python (a jump's flag, False
            # until the body sets it): traced again with a count (kiln._conditional_appends)
            raise AppendsUnderCondition({self.name: self.stacked.as_conditional()})
        self.buffer[self.position * self.stacked.appends + self.written] = value
        self.written += 1
        return self

    def __getitem__(self, key):
        """`items[-j]`: the row appended j iterations back (this iteration's, after its
        append), or, in the first iterations, the list's item from before the loop."""
        if self.count is not None:
            raise CaptureFailed("a list the loop appends to under a condition is read in it")
        if self.stacked.appends > 1:
            raise CaptureFailed("a list the loop appends to more than once an iteration is "
                                "read in it")
        back = _back(key) - self.written
        position = self.position
        if back == 0:
            return self._row(self.buffer[position].tensor)
        before = self.items[-back:] if back <= len(self.items) else []
        if len(before) != back or any(_kind(item) != _kind_of_rows(self.stacked)
                                      for item in before):
            raise CaptureFailed("a list the loop appends to is read at an item from before "
                                "the loop of another type (or one it does not have)")
        k, context = backend(), self.buffer._context
        dtype = np.dtype(self.stacked.dtype)
        if not isinstance(position, TracedArray):  # a probe's Python int (_loop_extents)
            return self._row(self.buffer[position - back].tensor if position >= back
                             else to_tensor(context, before[position], dtype))
        earlier = self.buffer[np.maximum(position - back, 0)].tensor
        first = k.stack([to_tensor(context, item, dtype) for item in before], 0)
        first = TracedArray(context, first)[np.minimum(position, back - 1)].tensor
        taken = cast(np.greater_equal(position, back).tensor, "bool")
        return self._row(k.where(taken, earlier, first))

    def _row(self, tensor):
        row = TracedArray(self.buffer._context, tensor)
        row._scalar, row._weak = self.stacked.flags
        return row


def _kind(value):
    """(dtype, shape, Python type or NumPy scalar?) of an item of a list, as _kind_of_rows
    gives its rows'; None for a value that is no number or array."""
    if isinstance(value, TracedArray):
        weak = value._weak
        return value.dtype.name, tuple(value.shape), weak if weak is not None else value._scalar
    if isinstance(value, np.generic):
        return value.dtype.name, (), True
    if type(value) in (bool, int, float, complex):
        return np.asarray(value).dtype.name, (), type(value)
    if isinstance(value, np.ndarray):
        return value.dtype.name, value.shape, False
    return None


def _kind_of_rows(stacked):
    scalar, weak = stacked.flags
    return stacked.dtype, tuple(stacked.shape), weak if weak is not None else scalar


def appended(items, value, depth, aliased=False):
    """LoopCapture.appended at loop-body depth `depth` (0: no body being traced). aliased: the
    value may be an array the function changes in place later (`rows.append(x[i])`, x written
    after the loop, by a helper too; `hist.append(state)`, `state += 1` next iteration): NumPy's
    item is that array or its view and sees the change, a stacked row would not, so the loop
    runs as Python. Its truth is asked last (it may read the source of functions called)."""
    if depth == 0:
        items.append(value)
        return items
    if isinstance(value, TracedArray) and not value._scalar and aliased:
        raise CaptureFailed("an array appended to a list is changed in place later (the list "
                            "holds that array or a view of it, not a copy)")
    if isinstance(items, Stack):
        return items.append(value, depth)
    if isinstance(items, Appended):
        return items.again(value, depth)
    return Appended(items, [value], depth)


def merged(context, predicate, name, a, b):
    """The list `name` after a branch on `predicate` whose sides left `a` and `b`, one of them
    appended to: the first trace's Appended (conditional), or the Stack of the side taken
    (kiln._conditional_appends)."""
    if isinstance(a, Stack) or isinstance(b, Stack):
        if not (isinstance(a, Stack) and isinstance(b, Stack) and a.items is b.items
                and a.count is not None and b.count is not None):
            raise CaptureFailed(f"`{name}` is a list appended to on one side of the branch and "
                                "something else on the other")
        return _conditional_appends.merged_stacks(context, predicate, a, b)
    items = [value.items if isinstance(value, Appended) else value for value in (a, b)]
    if items[0] is not items[1] or not isinstance(items[0], list):
        raise CaptureFailed(f"`{name}` is a list appended to on one side of the branch and "
                            "something else on the other")
    appends = [value for value in (a, b) if isinstance(value, Appended)]
    if len({_kind_of_rows(Stacked(value)) for value in appends}) != 1:
        raise CaptureFailed(f"`{name}` is appended values of different types on the two sides "
                            "of the branch")
    most = max(appends, key=lambda value: len(value.values))  # the rows an iteration may add
    return Appended(items[0], most.values, most.depth, conditional=True)


def stack_slot(context, trace, items, stacked, span, condition, depth, name):
    """(Stack, its slots: (names, None, initial tensor, placeholder)) of a list the body appends
    to `stacked.appends` times an iteration of the loop over `span` (at most, where
    conditional: its count is carried too). condition: the loop's (a for loop that may break,
    a while loop: it may end before its range does, so its rows are counted), None for a
    plain for loop."""
    if not isinstance(items, list):
        raise CaptureFailed("a value that is not a list is appended to")
    if depth > 1:
        raise CaptureFailed("values are appended in a loop nested in another kiln captures")
    if span is None:
        raise CaptureFailed("values are appended in a loop whose count is known only when it runs")
    if len(span) > _while_bounds.ROWS_AT_MOST:
        raise CaptureFailed("values are appended in a while loop whose test bounds no counter "
                            "(`while ... and k < maxit`, `k += 1` in the body) when it starts")
    if condition is not None:
        stacked = stacked.as_conditional()
    shape = [len(span) * stacked.appends, *stacked.shape]
    initial = backend().broadcast_to(context.constant(0, np.dtype(stacked.dtype)), shape)
    placeholder = trace.loop_placeholder(stacked.dtype, shape)
    stack = Stack(items, TracedArray(context, placeholder), stacked, depth, name,
                  context.branch_sides)
    slots = [([name], None, initial, placeholder)]
    if stacked.conditional:  # its count: the slot after its rows'
        _conditional_appends.carry_count(context, trace, stack)
        slots.append(([name], None, *stack.count_slot))
    return stack, slots


def rows(context, stack, tensor, count=None):
    """The values the loop appended: rows of its final stack, as the appends made them (a
    Python float of float(x) stays a Python float in the result), each read when first used
    (kiln._stacked_rows); count: the final count of a conditional list, read (its first rows:
    kiln._conditional_appends.read_counts)."""
    if count is not None:
        tensor = _conditional_appends.first_rows(tensor, count)
    return _stacked_rows.rows(context, tensor, stack.stacked.flags)


def position(index, span):
    """The iteration's number of the loop index `index` over `span` (a range)."""
    if span.start == 0 and span.step == 1:
        return index
    return (index - span.start) // span.step

