"""Loop indices clamped by constants: max(0, i - k + 1), min(i + w, n), np.maximum(i - h, 0) of a
captured loop's index i (kiln._affine_indices.Affine) and Python ints. They are the bounds of a
moving window that starts or stops at an end of its array (a trailing mean's
x[max(0, i - k + 1):i + 1], a centred window's x[max(0, i - h):min(n, i + h + 1)]).

Python's max of traced numbers was a select whose result no rule knew: as a slice bound it was
"computed from data", and the loop unrolled (2,000 points: a 12 MB source past the bound, then
NumPy's loop run eagerly). Kept as Clamped, such a bound is a window's bound like an Affine one
(kiln._windows): the positions outside [start, stop) are masked, and sched/trim_loops.h runs
each reduction over [start, stop) only. Only the window's length varies; two windows meet only
where their bounds are the same (nothing shifts one onto the other: their extents are not
known at trace time, kiln._affine_indices.total answers None).
"""
import builtins
import math

import numpy as np

from ._affine_indices import Affine, is_int
from ._tracer import TracedArray


class Clamped:
    """min(high, max(low, form)) of an Affine form; low or high None where there is no clamp."""
    __slots__ = ("form", "low", "high")

    def __init__(self, form, low, high):
        self.form, self.low, self.high = form, low, high

    def __eq__(self, other):
        return (isinstance(other, Clamped) and other.form == self.form
                and (other.low, other.high) == (self.low, self.high))

    def __hash__(self):
        return hash((self.form, self.low, self.high))

    @property
    def index(self):
        return self.form.index

    def at(self, position):
        """The value at the loop index's value `position`."""
        value = self.form.offset + self.form.scale * position
        value = value if self.low is None else max(self.low, value)
        return value if self.high is None else min(self.high, value)

    def breakpoints(self):
        """The index values (real numbers) where a clamp starts or stops biting."""
        return [(limit - self.form.offset) / self.form.scale
                for limit in (self.low, self.high) if limit is not None]

    def span(self):
        """(low, high) over the loop (a clamped line is monotone: its ends), or None when the
        loop's bounds are traced."""
        known = self.index._range
        if known is None:
            return None
        ends = [self.at(known[0]), self.at(known[1])]
        return min(ends), max(ends)

    def moved_by(self, amount):
        """This plus an int (max(0, i - h) + 1): the same clamp, moved."""
        return Clamped(Affine(self.index, self.form.offset + amount, self.form.scale),
                       None if self.low is None else self.low + amount,
                       None if self.high is None else self.high + amount)

    def offset_from(self, other):
        """The int d where this is other moved by d (other.moved_by(d)), else None."""
        if not isinstance(other, Clamped):
            return None
        amount = self.form.offset - other.form.offset
        return amount if other.moved_by(amount) == self else None

    def value(self):
        """The traced value (NumPy's maximum and minimum of the index's affine value)."""
        value = self.form.value()
        if self.low is not None:
            value = np.maximum(value, self.low)
        return value if self.high is None else np.minimum(value, self.high)


def form_of(value):
    """An int, Affine or Clamped for a Python int or a traced int that follows a loop's index;
    None for anything else."""
    if is_int(value):
        return int(value)
    if not isinstance(value, TracedArray) or value.ndim != 0 or value.dtype.kind not in "iu":
        return None
    if value._clamped is not None:
        return value._clamped
    form = value._affine
    return form if form is not None and form.index is not None else None


def _simplified(form, low, high):
    """Clamped(form, low, high), or the int or Affine it always equals over the loop."""
    if low is not None and high is not None and low >= high:
        return high
    span = form.span()
    if span is not None:
        if low is not None and span[1] <= low:
            return low if high is None else min(high, low)
        if high is not None and span[0] >= high:
            return high
        if low is not None and span[0] >= low:
            low = None
        if high is not None and span[1] <= high:
            high = None
    return form if low is None and high is None else Clamped(form, low, high)


def extremum(largest, forms, simplify=True):
    """max (largest) or min of int, Affine and Clamped forms as one form, or None where they
    are not one index clamped by constants (two moving operands: max(i - 3, 2 * i)).
    simplify: a clamp that never bites is dropped (then the form may be an int or Affine)."""
    moving = [f for f in forms if not isinstance(f, int)]
    if len(moving) != 1 or None in forms:
        return None
    constants = [f for f in forms if isinstance(f, int)]
    if not constants:
        return moving[0]
    limit = (builtins.max if largest else builtins.min)(constants)
    bounded = moving[0]
    form, low, high = ((bounded.form, bounded.low, bounded.high) if isinstance(bounded, Clamped)
                       else (bounded, None, None))
    if largest:  # max(c, min(h, max(l, f))) = min(max(c, h), max(max(c, l), f))
        low = limit if low is None else builtins.max(limit, low)
        high = None if high is None else builtins.max(limit, high)
    else:  # min(c, min(h, max(l, f))) = min(min(c, h), max(l, f))
        high = limit if high is None else builtins.min(limit, high)
    return _simplified(form, low, high) if simplify else Clamped(form, low, high)


def ufunc_result(ufunc, inputs):
    """The Clamped form of np.maximum / np.minimum of a loop's index and ints, or of a Clamped
    form plus or minus an int; None otherwise."""
    if ufunc not in (np.maximum, np.minimum, np.add, np.subtract) or len(inputs) != 2:
        return None
    forms = [form_of(x) for x in inputs]
    if ufunc in (np.maximum, np.minimum):
        if not any(isinstance(x, TracedArray) and x._clamped is not None or isinstance(f, Affine)
                   for x, f in zip(inputs, forms)):
            return None
        # kept whole: the traced result is NumPy's maximum itself, not an operand
        result = extremum(ufunc is np.maximum, forms, simplify=False)
        return result if isinstance(result, Clamped) else None
    if isinstance(forms[0], Clamped) and isinstance(forms[1], int):
        return forms[0].moved_by(forms[1] if ufunc is np.add else -forms[1])
    if ufunc is np.add and isinstance(forms[1], Clamped) and isinstance(forms[0], int):
        return forms[1].moved_by(forms[0])
    return None


def traced_extremum(largest, operands):
    """Python's max / min of a loop's index and ints (kiln._loop_expressions.extremum): the
    operand that wins on every iteration where one does, else the traced clamp holding its
    Clamped form; None where the operands are not one index clamped by constants."""
    forms = [form_of(o) for o in operands]
    result = extremum(largest, forms)
    if result is None:
        return None
    for operand, form in zip(operands, forms):
        if type(form) is type(result) and form == result:
            return operand  # Python's max is that operand itself
    if isinstance(result, int):
        return result
    value = result.value()
    value._scalar, value._weak, value._clamped = True, int, result
    value._range = result.span()
    return value


def lowest_extent(start, stop):
    """The least of stop - start over the loop, bounds int, Affine or Clamped of one index;
    None where that is not known at trace time. Both are piecewise linear in the index: the
    least is at an end of the loop's range or next to where a clamp starts to bite."""
    if start is None or stop is None:
        return None
    indices = {id(f.index): f.index for f in (start, stop) if not is_int(f)}
    if not indices:
        return int(stop) - int(start)
    if len(indices) != 1:
        return None
    known = next(iter(indices.values()))._range
    if known is None:
        return None
    candidates = {known[0], known[1]}
    for form in (start, stop):
        for point in form.breakpoints() if isinstance(form, Clamped) else ():
            candidates.update((math.floor(point), math.ceil(point)))
    return min(_at(stop, i) - _at(start, i) for i in candidates if known[0] <= i <= known[1])


def _at(form, position):
    if is_int(form):
        return int(form)
    if isinstance(form, Affine):
        return form.offset + form.scale * position
    return form.at(position)
