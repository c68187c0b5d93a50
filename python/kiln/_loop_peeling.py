"""A captured loop's first iteration run on its own (kiln._loop_capture's for_range): a number
the loop carries is another kind of number after an iteration than before it (`total = 0.0`
that `total += x[i]` makes NumPy's float64, or float32 of a float32 x). The body's traced
iteration sees the number as it was before the loop, which in NumPy only the first iteration
does (`total * np.float32(2)` is float32 there and float64 after: every traced iteration's was
float32, a wrong answer), and an inner loop that ran none (`for j in range(i + 1, n)` at the
last i) left the Python number's check to rerun every call eagerly. So the first iteration runs
first, on its own: as Python for a static range, as a loop of at most one iteration for a
dynamic one (its numbers NumPy's where it ran one); the loop after it sees NumPy's numbers. A
number that changes kind every iteration (`a, b = b, a` of a Python and a NumPy number) leaves
its loop as written once PEELS_AT_MOST first iterations ran on their own."""
import numpy as np

from . import _loop_number_types
from ._tracer import TracedArray, backend

PEELS_AT_MOST = 2


class PeelFirst(Exception):
    """A carried number's kind changes in the traced iteration: the first runs on its own."""


def retyped_numbers(capture, slots, names, after, saved, variables, seen_flags, branches):
    """Whether a number the loop carries is another kind of number (NumPy's or Python's, of
    another Python type) after an iteration than the body saw it as (`seen_flags`: by
    placeholder id, the flags of the numbers the body saw rebound). A 0-d array and NumPy's
    scalar promote alike: the flags after the loop tell them apart. `branches`: names only a
    branch retypes, carried with whether it was taken (kiln._loop_number_types'
    BranchRetyping)."""
    after_one = capture._final_flags(slots, names, after, range(1), saved, variables)
    for (slot_names, array, _, placeholder), flags in zip(slots, after_one):
        if branches.intersection(slot_names):
            continue
        seen = ((saved[id(array)][2], array._weak) if array is not None
                else seen_flags.get(placeholder.id))
        if seen is not None and not tuple(placeholder.shape) and flags[1] != seen[1]:
            return True
    return False


def split_first(capture, bounds, span):
    """(the bounds of the loop's first iteration, of the others): a static range's as Python
    ints, a dynamic one's as traced ints (the first a range of at most one)."""
    if span is not None:
        first = (span.start, min(span.start + span.step, span.stop) if span.step > 0 else
                 max(span.start + span.step, span.stop), span.step)
        return first, (span.start + span.step, span.stop, span.step)
    k, context = backend(), capture.context
    start, end, step = capture._bounds(bounds, span)
    next_start = k.add(start, context.constant(step, np.dtype(np.int64)))
    first_end = (k.minimum if step > 0 else k.maximum)(end, next_start)

    def integer(tensor):
        value = TracedArray(context, tensor)
        value._scalar, value._weak = True, int
        return value
    return (integer(start), integer(first_end), step), (integer(next_start), integer(end), step)


def run_peeled(capture, first, rest, loop, peels, temporaries):
    """The loop's first iteration (the bounds `first`), then the others (`rest`, not where the
    first broke), which see the numbers the first left NumPy's as NumPy's where they run
    (kiln._loop_number_types.assumed_where_running). loop: for_range's (body, get, set_,
    names, live, location, stop)."""
    body, get, set_, names, live, location, stop = loop
    before = get()
    capture.context.peeling += 1
    try:
        capture.for_range(first, body, get, set_, names, live, location, stop, peels=None,
                          temporaries=temporaries)
    finally:
        capture.context.peeling -= 1
    if stop is not None and broke(stop()):
        return
    with _loop_number_types.assumed_where_running(capture, names, get, set_, before):
        capture.for_range(rest, body, get, set_, names, live, location, stop, peels + 1,
                          temporaries=temporaries)


def broke(flag):
    """Whether a break's flag is set, as Python knows it: a traced flag (set in a branch on
    traced values) leaves the remaining iterations to test it themselves."""
    return flag is True or isinstance(flag, (np.bool_, bool)) and bool(flag)


# ---- which carried Python numbers the body reads as Python's (BranchRetyping's numbers) ----
# A number only a branch of the body makes NumPy's (`m = 0; ... if x[i] > m: m = x[i]`) is
# carried with whether the branch was taken (kiln._loop_number_types' BranchRetyping), and the
# body sees the Python number in every iteration: right for the reads both kinds answer alike
# (`x[i] > m` of float64 data), wrong for one whose loop differs (`m * np.float32(2)`: float32
# of the Python number, float64 of NumPy's). The body's ufuncs and operators note such reads of
# the numbers watched here (and of the Python numbers operators make of them: `t = m + 1`);
# a noted number is peeled like the others.

def watched_numbers(by_object, rebound):
    """{id of the value the body reads: name} of the carried Python numbers of a body."""
    watched = {id(array): names[0] for array, names in by_object.values()
               if array._scalar and array._weak in (int, float, complex) and not array.shape}
    watched.update((id(value), name) for name, value in rebound.items()
                   if isinstance(value, TracedArray) and value._scalar
                   and value._weak in (int, float, complex))
    return watched


def note_kind_reads(context, inputs, types, loop, resolve):
    """Where an input is a watched Python number, whether NumPy's scalar of its dtype would
    take another loop (`resolve`: types -> loop): its name is then noted in
    context.kind_sensitive."""
    watched = getattr(context, "kind_watch", None)
    if not watched:
        return
    for position, value in enumerate(inputs):
        name = watched.get(id(value))
        if name is None or types[position] not in (int, float, complex):
            continue
        strong = types[:position] + (value.dtype,) + types[position + 1:]
        try:
            other = resolve(strong)
        except Exception:  # noqa: BLE001  no loop for NumPy's scalar: another answer
            other = None
        if other != loop:
            context.kind_sensitive.add(name)


def watch_result(result, operands):
    """A Python number an operator made of a watched one (`t = m + 1`) is watched as it."""
    if not isinstance(result, TracedArray) or result._weak is None:
        return
    watched = getattr(result._context, "kind_watch", None)
    if not watched:
        return
    for value in operands:
        name = watched.get(id(value))
        if name is not None:
            watched[id(result)] = name
            return
