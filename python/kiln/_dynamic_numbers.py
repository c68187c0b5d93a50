"""Which Python numbers of a kiln.compile call are traced as 0-d graph inputs, as Dynamo's
automatic dynamic: floats and ints whose values alone changed since the last entry (a learning
rate, a step count), and those that changed before, per call structure (its pytree spec). A
trace that needs a number's value (a shape, an axis, a graph break) is retried with it static
(fewer). NumPy 1.x promotes by value, so there every number stays static."""
from ._arguments import WEAK_PYTHON_NUMBERS, dynamic_number


class DynamicNumbers:
    def __init__(self):
        self.known = {}         # repr(spec) -> leaf indices traced dynamic, or None: none ever
        self.static_ints = {}   # repr(spec) -> int leaves a trace needed the values of

    def chosen(self, spec, leaves, changed, read_in_place):
        """The leaves to trace as dynamic numbers, given the leaves whose numbers `changed`
        since the last entry (GuardedCache.changed_numbers); `read_in_place` (values the trace
        reads from their object itself: a class's attributes, _environment.py) stay static,
        whatever changes (by identity: a number also passed as an argument stays too)."""
        key = repr(spec)
        known = self.known.get(key, set())
        if known is None or not WEAK_PYTHON_NUMBERS:
            return ()
        static = self.static_ints.get(key, set()) | {
            index for index in changed if any(leaves[index] is value for value in read_in_place)}
        numbers = known | {index for index in changed if index not in static}
        self.known[key] = numbers
        return tuple(index for index in sorted(numbers) if dynamic_number(leaves[index]))

    def fewer(self, spec, leaves, dynamic):
        """After a trace with the numbers `dynamic` needed a value: the ints among them stay
        static from now on (they size arrays and count loops more often than floats); without
        ints, every number of this call structure does."""
        key = repr(spec)
        ints = {index for index in dynamic if type(leaves[index]) is int}
        if not ints:
            self.known[key] = None
            return ()
        self.static_ints[key] = self.static_ints.get(key, set()) | ints
        self.known[key] = (self.known.get(key) or set()) - ints
        return tuple(index for index in dynamic if index not in ints)

    def keep_static(self, spec):
        """Every number of this call structure stays static (its trace broke)."""
        self.known[repr(spec)] = None
