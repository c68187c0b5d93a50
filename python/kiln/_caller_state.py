"""What a trace changes of the caller's state, made to happen as NumPy would make it
(kiln._compile). The trace runs over copies of the caller's containers that hold arrays and
stand-ins for self and global objects (their arrays replaced by tracers): attributes of self
and of global objects it assigns are assigned by every run of the graph; a container it changed
(an appended list, a dict key set, a dataclass attribute), a deleted attribute or a tracer left
in the caller's own containers makes the call run eagerly, after the caller's state is put back
as it was before the trace (Saved)."""
from . import _pytree
from ._graph_breaks import GraphBreakSignal


class ChangesCallerState(GraphBreakSignal):
    """A trace that changed what the caller holds in a way the graph cannot: the call runs
    eagerly, whatever its numbers (no retry with them static)."""


class CallerStateChanges:
    """Call structures (repr of the pytree spec) whose traces changed the caller's state: after
    TRACES_AT_MOST of them, a call of that structure runs eagerly without a trace. Its static
    values change on every call where the function records its progress in the object it is
    handed (Regression.fit appending each step's loss to self.training_errors): each call
    missed the guards, traced the whole fit, gave up and ran it eagerly anyway, about ten times
    NumPy's time until config.recompile_limit."""
    TRACES_AT_MOST = 2

    def __init__(self):
        self.counts = {}

    def note(self, spec):
        key = repr(spec)
        self.counts[key] = self.counts.get(key, 0) + 1

    def settled(self, spec):
        return self.counts.get(repr(spec), 0) >= self.TRACES_AT_MOST


class Saved:
    """The caller's lists, dicts and objects before a trace (the tree its guards read, and the
    attributes of self and global objects): restore() puts them back for the eager run or the
    retried trace that follows a given-up one."""

    def __init__(self, spec, tree, environment):
        self.contents = _pytree.Contents(spec, tree)
        self.attributes = environment.attribute_state()

    def restore(self):
        self.contents.restore()
        self.attributes.restore()


def with_assigned(result, assigned):
    """The tree whose outputs the graph computes: the result, and the values of the attributes
    the trace assigned (Attributes.assigned), if any."""
    return (result, *[value for _, _, value in assigned]) if assigned else result


def checked_output_spec(output_spec, assigned, attributes, copies_changed, location):
    """The output spec of a finished trace (of with_assigned's tree): one whose runs assign the
    attributes the trace assigned; ChangesCallerState where the trace changed the caller's state
    otherwise (`copies_changed`: _pytree.changed_copies)."""
    if copies_changed:
        raise ChangesCallerState("the function changes a list, dict or dataclass that holds "
                                 "arrays, or stores a traced array in one the caller sees",
                                 location)
    if assigned is None:
        raise ChangesCallerState("the function deletes an attribute of self or of a global "
                                 "object", location)
    if not assigned:
        return output_spec
    attributes.restore()  # the caller's objects change when the graph runs
    return _pytree.assigning([(target, name) for target, name, _ in assigned], output_spec)
