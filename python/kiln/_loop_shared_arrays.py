"""Names that share an array before a loop that rebinds some of them (`h = x`, then `h =
np.tanh(W @ h + x)` every step): each gets an array object of its own for the loop's trace, so
that the loop carries them apart (kiln._loop_capture).

The loop carries one slot per array object; two names of one object are one slot, and a body
that rebinds one of them left the slot two values ("`h` and `x` share an array the loop
rebinds"): the loop unrolled, a graph per step. Apart, they are exactly NumPy's where:
  - the loop surely runs an iteration (a static range of at least one) and binds the rebound
    names at its top level (a plain assignment, kiln._loop_transform: `rebinds`), so after it
    they hold new arrays in NumPy too, whatever the identity of the one they shared;
  - neither object is written in place in the traced iteration (`x[0] = 0`, `h += 1`, a
    helper's write: NumPy's write through one name is seen through the other until the
    rebinding); checked after the trace (NamesApart.check_unwritten), else the loop runs as
    written.
"""
import ast

from ._loop_types import CaptureFailed
from ._tracer import TracedArray


class SharedArrayRebound(CaptureFailed):
    """kiln._loop_results: names of one array object, of which the body rebinds `rebound`."""

    def __init__(self, message, rebound):
        super().__init__(message)
        self.rebound = rebound


class NamesApart:
    """The names a loop's capture set apart (LoopCapture._capture: one for each loop)."""

    def __init__(self, rebinds):
        self.rebinds = rebinds  # the body's top-level bindings; () where the loop may not run
        self.ids = set()        # the array objects set apart, the shared ones and the new
        self.shared = None      # (set_, the names' values before): rejoin()'s

    def split(self, failure, context, names, values, set_, keep):
        """`values` (of `names`) with a new array object, holding the same tensor, for each
        name `failure` found rebound; set_ binds them. CaptureFailed where they may not be
        apart (or were already)."""
        if self.ids or not all(name in self.rebinds for name in failure.rebound):
            raise CaptureFailed(str(failure)) from None
        new = list(values)
        for index, (name, value) in enumerate(zip(names, values)):
            if name in failure.rebound and isinstance(value, TracedArray):
                clone = TracedArray(context, value.tensor)
                clone._scalar, clone._weak = value._scalar, value._weak
                new[index] = clone
                self.ids.update((id(value), id(clone)))
        # rejoin() binds the split names only (the others may hold what the capture restored)
        self.shared = (set_, tuple(b if a is not b else keep for a, b in zip(new, values)))
        set_(tuple(a if a is not b else keep for a, b in zip(new, values)))
        return tuple(new)

    def check_unwritten(self, slots):
        """After the traced iteration: no object set apart written in place."""
        for array_names, array, _, placeholder in slots:
            if (array is not None and id(array) in self.ids
                    and array._tensor.id != placeholder.id):
                raise CaptureFailed(f"`{array_names[0]}` shares its array with a name the loop "
                                    f"rebinds and is written in place")

    def rejoin(self):
        """The names share their array again (the capture failed: the loop runs as Python)."""
        if self.shared is not None:
            set_, values = self.shared
            set_(values)
            self.shared, self.ids = None, set()


def top_level_bindings(statements):
    """The names plain assignments at the top level of a loop body bind (every iteration
    binds them, where the loop has no jump: those put the later statements under a test)."""
    found = set()
    for statement in statements:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                found.update(element.id for element in elements if isinstance(element, ast.Name))
    return tuple(sorted(found))


def rebinds_argument(statements):
    """`, rebinds=(...)` of a for loop's call (LoopCapture.for_range), or nothing."""
    names = top_level_bindings(statements)
    return f", rebinds={names!r}" if names else ""
