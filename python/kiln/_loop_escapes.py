"""State a captured loop body may change without a variable: arrays made before the loop that
it writes in place, and attributes it assigns, both reached through `self` or an object it was
handed (an RNN layer's `self.states[:, t] = h` through a local name, a method's `self.s =
self.s * 0.5`). The loop carries its variables only: such a write left a value of the body in
the array or attribute, used after the loop (an internal error) or read stale by the next
iteration (a wrong answer). The body is checked after its trace; a loop that changed such state
runs as Python, everything put back as it was."""
from ._loop_types import CaptureFailed


class Escapes:
    def __init__(self, context, carried, attribute_dicts):
        """carried: the ids of the arrays the loop carries; attribute_dicts: the attribute dicts
        of self, global objects and the objects among the arguments (the trace's copies)."""
        arrays = (reference() for reference in context.arrays)
        # Views write through to their roots, which are listed.
        self.arrays = [(array, array._tensor, array._scalar) for array in arrays
                       if array is not None and array._root is None and id(array) not in carried]
        self.attributes = [(attributes, dict(attributes)) for attributes in attribute_dicts]

    def check(self):
        if any(array._tensor is not tensor for array, tensor, _ in self.arrays):
            raise CaptureFailed("the body writes an array made before the loop that no "
                                "variable holds (`self.h[t] = ...` through a method or alias)")
        for attributes, before in self.attributes:
            if attributes.keys() != before.keys() or any(
                    attributes[name] is not value for name, value in before.items()):
                raise CaptureFailed("the body assigns an attribute (of self or of an object "
                                    "it was handed)")

    def restore(self):
        for array, tensor, scalar in self.arrays:
            if array._tensor is not tensor:
                array._tensor, array._scalar, array._version = tensor, scalar, array._version + 1
        for attributes, before in self.attributes:
            if attributes != before:
                attributes.clear()
                attributes.update(before)
