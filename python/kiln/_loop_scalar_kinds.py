"""Numbers a captured loop carries whose kind a branch of its body picks: NumPy's scalar on one
side, a Python number written in the code on the other (a hysteresis detector's `state = x[0]
> high`, then `state = True` where it crosses: np.bool_ before, Python's bool after; `level =
0.0` beside `level = x[i]`; `best = -1` beside `best = np.int64(i)`). The branch's value is an
AssumedNumber (kiln._assumed_numbers); carried as a plain value it was committed, a check that
reran the call eagerly wherever a Python side was taken once: the detector ran as Python on
every call with a crossing, slower than NumPy.

Such a number is carried with its kind: a bool beside its value, whether it is NumPy's scalar
now (as BranchRetyping carries whether a branch made a Python number NumPy's,
kiln._loop_number_types). The body reads it as an AssumedNumber of that bool, so a read that
tells the kinds apart (`level * np.float32(2)`) is a check of the iterations that read the
Python number, and reads both kinds answer alike (`x[i] > level`, `not state`) are none; after
the loop it is an AssumedNumber again, NumPy's scalar or the Python number as the call went
(its return gives NumPy's run's type)."""
import numpy as np

from . import _assumed_numbers
from ._assumed_numbers import AssumedNumber
from ._loop_types import CaptureFailed
from ._tracer import TracedArray, cast


class CarriedKind:
    """A name's kind in kiln._loop_capture's `types`: a 0-d number of `dtype` carried with
    whether it is NumPy's scalar, else the Python number of type `python`."""

    def __init__(self, dtype, python):
        self.dtype, self.python = np.dtype(dtype), python

    def __repr__(self):
        return f"CarriedKind({self.dtype.name} or {self.python.__name__})"


def kind_of(context, new, old, side):
    """The CarriedKind of a name whose value after the loop body is `new` and before the loop
    `old`: where `new` is an AssumedNumber of this body's branches (not committed for the
    whole call) and `old` a number of one of its kinds. None otherwise (a use that commits
    it, as before). Not for a branch's sides traced as bodies (side)."""
    if (side or not isinstance(new, AssumedNumber) or new._committed is True
            or new._depth != context.in_body):
        return None
    kind = CarriedKind(new._tensor.dtype, new._python)
    return kind if _parts(context, kind, old) is not None else None


def _parts(context, kind, value):
    """(its tensor, whether it is NumPy's: a bool 0-d tensor) of a number of one of `kind`'s
    kinds, an AssumedNumber of them (one a read committed in the body too: a check holds it
    there); None for any other value."""
    if isinstance(value, AssumedNumber):
        if value._python is not kind.python or np.dtype(value._tensor.dtype) != kind.dtype:
            return None
        return value._tensor, cast(value._taken.tensor, "bool")
    return _assumed_numbers.as_kind(context, value, kind.dtype, kind.python) or None


class KindCarry:
    """The numbers of one traced loop body carried with their kinds (the CarriedKinds among
    `types`): a bool each, carried after the slots and before BranchRetyping's."""

    def __init__(self, context, types, variables, side):
        self.context = context
        self.kinds = {} if side else {name: kind for name, kind in types.items()
                                      if isinstance(kind, CarriedKind) and name in variables}
        for name, value in variables.items():
            if (not side and isinstance(value, AssumedNumber) and value._committed in (False, None)
                    and name not in self.kinds):
                # one from before the loop (an inner loop's `total`): its kind too, where a
                # placeholder standing in for its tensor committed it (a kind of `types`, for
                # the traces again)
                self.kinds[name] = types[name] = CarriedKind(value._tensor.dtype, value._python)
        self.names = set(self.kinds)
        self.flags = {}  # name: (its kind before the loop, its placeholder)

    def others(self, names):
        """`names` without those carried with their kinds."""
        return set(names) - self.names

    def slots(self, variables, rebound):
        """The slots of the names carried with their kinds, made after the loop's others (the
        placeholders of the loop's carried values come in order: values, then kinds): their
        values before the loop are `variables`', and the AssumedNumbers the body reads go into
        `rebound` (by name)."""
        context, slots = self.context, []
        for name, kind in self.kinds.items():
            parts = _parts(context, kind, variables[name])
            if parts is None:
                raise CaptureFailed(f"`{name}` is no longer a {kind.dtype.name} or a Python "
                                    f"{kind.python.__name__} before the loop")
            placeholder = context.trace.loop_placeholder(kind.dtype.name, [])
            rebound[name] = _assumed_numbers.assumed(context, placeholder, None, kind.python)
            self.flags[name] = (parts[1], None)
            slots.append(([name], None, parts[0], placeholder))
        for name in self.kinds:
            flag = context.trace.loop_placeholder("bool", [])
            rebound[name]._taken = TracedArray(context, flag)
            self.flags[name] = (self.flags[name][0], flag)
        return slots

    def value(self, name, new):
        """The tensor the slot of `name` holds after an iteration that leaves it `new`."""
        return self._after(name, new)[0]

    def _after(self, name, new):
        kind = self.kinds[name]
        parts = _parts(self.context, kind, new)
        if parts is None:
            raise CaptureFailed(f"`{name}` is a {kind.dtype.name} or a Python "
                                f"{kind.python.__name__} as a branch picks, and the loop makes "
                                "it another type")
        return parts

    def initial(self):
        return [before for before, _ in self.flags.values()]

    def results(self, after):
        """The kinds after an iteration that leaves the names `after` ({name: value})."""
        return [self._after(name, after[name])[1] for name in self.flags]

    def split(self, values):
        """(the loop's other values, {name: whether NumPy's after the loop})."""
        count = len(self.flags)
        if not count:
            return values, {}
        return values[:-count], dict(zip(self.flags, values[-count:]))

    def settle(self, kinds, names, get, set_, keep):
        """The names after the loop node: AssumedNumbers of their kinds after it."""
        if not kinds:
            return
        now = dict(zip(names, get()))
        values = {name: _assumed_numbers.assumed(
            self.context, now[name].tensor, TracedArray(self.context, kinds[name]),
            self.kinds[name].python) for name in kinds}
        set_(tuple(values.get(name, keep) for name in names))
