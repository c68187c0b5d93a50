"""Numbers a captured loop that may run no iteration gives another type. `s = 0; for i in
range(n): s += x[i]` leaves NumPy's float64 where the loop runs an iteration and Python's int 0
where it runs none (n = 0, a while loop whose test fails at once); `x = 1; ...: x = x * 1.5`
a Python float or that int. The loop node's value is one tensor of the body's type, typed as
the body leaves it: with no iteration, the function returned 0.0 for 0, and what NumPy made of
it next followed the wrong type (`s * np.int8(3)`: float64 for NumPy's int8).

After such a loop, a NumPy scalar that was a Python int or float written in the code is an
AssumedNumber (kiln._assumed_numbers), the NumPy side taken where the loop ran an iteration:
the ops that resolve alike for both types keep it (`s / n`), any other use (a return) checks
that reruns the call eagerly where the loop ran none. Other changes (a Python int the body
makes a float, a traced number, a NumPy scalar made a Python one) are that check at once.
Where no call reruns (kiln.wrap_numpy's), the loop runs as Python.

So does a branch of the body that alone makes the number NumPy's (`s = 0; for ...: if x[i] > t:
s = x[i]`): where it is never taken, the number stays Python's 0, and kiln returned 0.0
(BranchRetyping: the loop carries whether it was taken).

A branch's side run as a loop of 0 or 1 iterations (kiln._branch_capture) runs where the side
is taken: there a NumPy scalar the side makes a Python number (`d = 1.0` beside the other side's
float64) is an AssumedNumber too, NumPy's where the side is not taken. Any other change refuses
that form: the check, conditioned on the side as its checks are, could never fire (a Python
float kept as the other side's int, its value truncated, with no error)."""
import contextlib

import numpy as np

from . import _assumed_numbers
from ._loop_types import CaptureFailed, is_number, python_type, rerun_note, rerun_where
from ._tracer import TracedArray, backend


def retyped(capture, slots, flags, variables, live, side_loop=False):
    """[(names, value before the loop, kind)] of the slots read after the loop (`live`) whose
    0-d value has another type (NumPy scalar?, Python type) after an iteration (`flags`, as
    LoopResults._final_flags gives them) than before it; kind: how settle keeps the type of
    either outcome (_kind), None where it cannot. side_loop: the loop is a branch's side (of
    0 or 1 iterations). Refused where no call reruns."""
    changed = []
    for (names, array, _, placeholder), flag in zip(slots, flags):
        old = variables.get(names[0], capture.UNBOUND)
        if (old is capture.UNBOUND or tuple(placeholder.shape)
                or not any(name in live for name in names)):
            continue  # unbound before (kiln._loop_first_bindings), an array or a temporary
        if isinstance(old, TracedArray):
            before = (old._scalar, old._weak)
        else:
            before = (is_number(old), python_type(old))
        if before != tuple(flag):
            kind = _kind(old, tuple(flag), np.dtype(placeholder.dtype), side_loop)
            if kind is None and side_loop:  # its check would apply where the side is taken,
                # where the loop runs: never
                raise CaptureFailed(f"`{names[0]}` changes type in a side of the branch")
            changed.append((names, old, kind))
    if changed and rerun_note(capture.context) is None:
        raise CaptureFailed(f"`{changed[0][0][0]}` changes type in the loop, which keeps its "
                            "type when the loop runs no iteration")
    return changed


def _kind(old, after, dtype, side_loop):
    """"numpy" where an iteration makes the Python number `old` a NumPy scalar of `dtype`
    (`s = 0.0; ... s += x[i]`), "python" where a branch's side run as a loop makes the NumPy
    scalar `old` a Python number (`d = 1.0` where the other side left NumPy's float64), the
    number carried as `dtype` either way and holding both values exactly; None for any other
    change (a Python int made a float; NumPy's scalar made a Python number by a loop that
    mostly runs: its check, where the loop ran none, rarely fires, while an AssumedNumber's
    commit reruns every call where it ran)."""
    scalar, weak = after
    if type(old) in (int, float) and scalar and weak is None and dtype.kind in "iuf":
        return "numpy" if _assumed_numbers.holds(dtype, old) else None
    if (isinstance(old, TracedArray) and not isinstance(old, _assumed_numbers.AssumedNumber)
            and old._weak in (int, float) and old.ndim == 0 and scalar and weak is None
            and np.dtype(old.dtype) == dtype):
        return "numpy"  # a traced Python number (a counter, a side's `d = 0.5` as a loop)
    if (side_loop and isinstance(old, TracedArray)
            and not isinstance(old, _assumed_numbers.AssumedNumber)
            and old._scalar and old._weak is None and old.ndim == 0
            and weak in (bool, int, float) and np.dtype(old.dtype) == dtype):
        return "python"
    return None


def settle(capture, runs, changed, names, get, set_):
    """The values of `changed` (retyped's) after the loop node: AssumedNumbers of the type
    either outcome gives, NumPy's scalar where the loop ran an iteration (`runs`, a bool 0-d
    tensor) or where it ran none, as the iteration made it; others keep the body's type, a
    check that reruns the call eagerly where the loop ran none."""
    context = capture.context
    now = dict(zip(names, get()))
    values = {}
    for slot_names, old, kind in changed:
        new = now[slot_names[0]]
        if kind == "numpy" and isinstance(old, TracedArray):
            value = _assumed_numbers.assumed(context, new.tensor, TracedArray(context, runs),
                                             old._weak)
            value._by_run = True
        elif kind == "numpy":
            value = _assumed_numbers.select(context, TracedArray(context, runs), new, old)
            value._by_run = True
        elif kind == "python":
            value = _assumed_numbers.assumed(
                context, new.tensor, TracedArray(context, backend().logical_not(runs)),
                new._weak)
        else:
            rerun_where(context, backend().logical_not(runs),
                        f"`{slot_names[0]}` changes type in a loop that ran no iteration (the "
                        "call runs again eagerly)", "loop")
            continue
        values.update((name, value) for name in slot_names)
    if values:
        set_(tuple(values.get(name, capture.KEEP) for name in names))


@contextlib.contextmanager
def assumed_where_running(capture, names, get, set_, before):
    """Around the loop of the iterations after a first one run on its own (kiln._loop_peeling:
    `s = 0.0` that `s += x[i]` makes NumPy's), which runs only where the first one ran. The
    numbers the first one left AssumedNumbers of its running (settle; not those of `before`,
    the values before it) are NumPy's wherever this loop runs, so it reads them so with no
    check: the check reran every call of a triangular loop eagerly (`for i in range(n): s =
    0.0; for k in range(i): s += L[i, k] * y[k]` runs none at i = 0), slower than NumPy. After
    it they are AssumedNumbers of the first one's running again."""
    implied = {name: value for name, value in zip(names, get())
               if _assumed_numbers.is_open(value) and value._by_run
               and not any(value is old for old in before)}
    for number in implied.values():
        number._committed = "implied"  # read as NumPy's, no check (not open, not None)
    try:
        yield
    finally:
        for number in implied.values():
            number._committed = False
    now, values = dict(zip(names, get())), {}
    for name, number in implied.items():
        new = now[name]
        if new is number:
            continue
        if (isinstance(new, TracedArray) and new._scalar and new._weak is None
                and not isinstance(new, _assumed_numbers.AssumedNumber)
                and new.dtype == np.dtype(number._tensor.dtype)):
            values[name] = _assumed_numbers.assumed(capture.context, new.tensor, number._taken,
                                                    number._python)
            values[name]._by_run = True
        else:  # another type after the loop: the first one ran, or the call runs again
            _assumed_numbers.commit(number)
    if values:
        set_(tuple(values.get(name, capture.KEEP) for name in names))


def runs_tensor(start, stop, step):
    """Whether range(start, stop, step) of int64 0-d tensors runs an iteration."""
    k = backend()
    return k.greater(stop, start) if step > 0 else k.less(stop, start)



class BranchRetyping:
    """The Python numbers of a loop (bound before it, read after it) that a branch of its body
    makes NumPy scalars (kiln._branch_capture records the NumPy side's test): the loop carries
    one bool each, whether that side was ever taken. After the loop the number is an
    AssumedNumber, the NumPy scalar where it was taken: a use that tells the types apart
    reruns the call eagerly where it was not (Python's number, as NumPy's run makes it)."""

    def __init__(self, capture, variables, live, side):
        depth, self.capture = capture.depth, capture
        mine = [entry for entry in capture.numpy_sides if entry[0] == depth]
        capture.numpy_sides = [entry for entry in capture.numpy_sides if entry[0] != depth]
        self.taken = {}
        for _, name, taken in mine:
            if side or name not in live or type(variables.get(name)) not in (int, float):
                continue
            earlier = self.taken.get(name)
            self.taken[name] = taken if earlier is None else backend().logical_or(earlier, taken)
        if self.taken and rerun_note(capture.context) is None:
            raise CaptureFailed(f"`{next(iter(self.taken))}` is made a NumPy scalar by a branch "
                                "that may never be taken")
        trace = capture.context.trace
        self.placeholders = [trace.loop_placeholder("bool", []) for _ in self.taken]
        self.before = {name: variables[name] for name in self.taken}

    def initial(self):
        return [self.capture.context.constant(False, np.dtype(bool)) for _ in self.taken]

    def results(self):
        k = backend()
        return [k.logical_or(placeholder, taken)
                for placeholder, taken in zip(self.placeholders, self.taken.values())]

    def split(self, values):
        """(the loop's values of its variables, {name: whether the NumPy side was taken})."""
        count = len(self.taken)
        if not count:
            return values, {}
        return values[:-count], dict(zip(self.taken, values[-count:]))

    def settle(self, taken, names, get, set_):
        if not taken:
            return
        context = self.capture.context
        now = dict(zip(names, get()))
        values = {}
        for name, ever in taken.items():
            new = now[name]
            if not (isinstance(new, TracedArray) and new._scalar and new._weak is None
                    and new.dtype.kind in "iuf"):
                continue
            values[name] = _assumed_numbers.assumed(context, new.tensor,
                                                    TracedArray(context, ever),
                                                    type(self.before[name]))
        if values:
            set_(tuple(values.get(name, self.capture.KEEP) for name in names))
