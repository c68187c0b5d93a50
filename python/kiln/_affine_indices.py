"""Loop indices in affine form (kiln._windows): offset + scale * i of a captured loop's traced
index i, tracked through +, - and * by Python ints, so that two slices are known to have the
same bounds at trace time, with no run-time check."""
import numpy as np

from ._tracer import TracedArray


class Affine:
    """offset + scale * index, index a captured loop's traced index."""
    __slots__ = ("index", "offset", "scale")

    def __init__(self, index, offset, scale):
        self.index, self.offset, self.scale = index, offset, scale

    def __eq__(self, other):
        return (isinstance(other, Affine) and other.index is self.index
                and (other.offset, other.scale) == (self.offset, self.scale))

    def __hash__(self):
        return hash((id(self.index), self.offset, self.scale))

    def span(self):
        """(low, high) over the loop, or None when the loop's bounds are traced."""
        known = self.index._range
        if known is None:
            return None
        ends = [self.offset + self.scale * known[0], self.offset + self.scale * known[1]]
        return min(ends), max(ends)

    def value(self):
        value = self.index if self.scale == 1 else self.index * self.scale
        return value + self.offset if self.offset else value


def is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def affine_result(ufunc, inputs):
    """The Affine of a ufunc's result on Affine indices and Python ints (None: not affine)."""
    forms = [x._affine if isinstance(x, TracedArray) else x if is_int(x) else None
             for x in inputs]
    if any(f is None for f in forms) or not any(isinstance(f, Affine) for f in forms):
        return None
    as_affine = [f if isinstance(f, Affine) else Affine(None, int(f), 0) for f in forms]
    indices = {id(f.index): f.index for f in as_affine if f.scale}
    if len(indices) > 1:
        return None
    index = next(iter(indices.values()), None)
    if ufunc is np.negative:
        return Affine(index, -as_affine[0].offset, -as_affine[0].scale)
    if ufunc in (np.add, np.subtract) and len(forms) == 2:
        sign = 1 if ufunc is np.add else -1
        a, b = as_affine
        return Affine(index, a.offset + sign * b.offset, a.scale + sign * b.scale)
    if ufunc is np.multiply and len(forms) == 2 and sum(isinstance(f, Affine) for f in forms) == 1:
        form, factor = (forms[0], forms[1]) if isinstance(forms[0], Affine) else forms[::-1]
        return Affine(index, form.offset * int(factor), form.scale * int(factor))
    return None


def _linear(value):
    return value if isinstance(value, Affine) else Affine(None, int(value), 0)


def total(a, b, sign=1):
    """a + sign * b of Affines and ints: an int when the index cancels, None when a and b follow
    different loops' indices (or either is None; a clamped index plus an int is one, and the
    difference of one and itself moved is an int; any other sum of a clamped index is None:
    the clamps need not bite at the same iterations)."""
    if is_int(b) and hasattr(a, "moved_by"):  # a clamped index (kiln._clamped_bounds) moved
        return a.moved_by(sign * int(b))
    if sign == 1 and is_int(a) and hasattr(b, "moved_by"):
        return b.moved_by(int(a))
    if sign == -1 and hasattr(a, "offset_from") and hasattr(b, "offset_from"):
        return a.offset_from(b)  # lo + 3 - lo of a clamped lo: 3
    if not all(isinstance(x, Affine) or is_int(x) for x in (a, b)):
        return None
    a, b = _linear(a), _linear(b)
    if a.scale and b.scale and a.index is not b.index:
        return None
    scale = a.scale + sign * b.scale
    if scale == 0:
        return a.offset + sign * b.offset
    return Affine(a.index if a.scale else b.index, a.offset + sign * b.offset, scale)


def difference(a, b):
    return total(a, b, -1)


def extent(bound):
    """The count of positions of a (start, stop) bound."""
    return difference(bound[1], bound[0])


def lowest(form):
    """The least value of an Affine, int or clamped index over its loop, or None when the
    loop's bounds are traced."""
    if form is None:
        return None
    if is_int(form):
        return int(form)
    span = form.span()
    return None if span is None else span[0]
