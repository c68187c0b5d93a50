"""State a captured loop body may change without a variable: arrays made before the loop that
it writes in place, and attributes it assigns, both reached through `self` or an object it was
handed (an RNN layer's `self.states[:, t] = h` through a local name, a method's `self.s =
self.s * 0.5`). The loop carries its variables only: such a write left a value of the body in
the array or attribute, used after the loop (an internal error) or read stale by the next
iteration (a wrong answer). The body is checked after its trace; a loop that changed such state
runs as Python, everything put back as it was.

Python containers (lists, dicts, sets) the body can reach are such state too: the trace runs the
body once, so `c[0] = c[0] + 1`, `d["n"] += v` or a helper's `items.append(v)` happened once
instead of once per iteration (and on both sides of a branch, which traces both); and so are
the attributes of the user's objects it reaches (a local `p = Particle(x, v)` whose
`p.step(dt)` assigns `self.x`)."""
import argparse
import collections
import types

from ._loop_helpers import _is_user_function
from ._loop_types import CaptureFailed
from ._stand_ins import _slot_names
from ._tracer import TracedArray
from ._user_code import _is_user_class


class Escapes:
    def __init__(self, context, carried, attribute_dicts, values=(), item_containers=(),
                 carried_attributes=None):
        """carried: the ids of the arrays the loop carries; attribute_dicts: the attribute dicts
        of self, global objects and the objects among the arguments (the trace's copies);
        values: those of the names the body reads or assigns, before it; item_containers: the
        lists and dicts whose items the loop carries (kiln._loop_container_items);
        carried_attributes: {id: names} of the objects' attributes it carries."""
        arrays = (reference() for reference in context.arrays)
        # Views write through to their roots, which are listed.
        self.arrays = [(array, array._tensor, array._scalar) for array in arrays
                       if array is not None and array._root is None and id(array) not in carried]
        self.attributes = [(attributes, dict(attributes)) for attributes in attribute_dicts]
        self.containers = Containers([*values, *(value for attributes in attribute_dicts
                                                 for value in attributes.values())],
                                     item_containers, carried_attributes)

    def check(self):
        if any(array._tensor is not tensor for array, tensor, _ in self.arrays):
            raise CaptureFailed("the body writes an array made before the loop that no "
                                "variable holds (`self.h[t] = ...` through a method or alias)")
        for attributes, before in self.attributes:
            if attributes.keys() != before.keys() or any(
                    attributes[name] is not value for name, value in before.items()):
                raise CaptureFailed("the body assigns an attribute (of self or of an object "
                                    "it was handed)")
        self.containers.check()

    def restore(self):
        for array, tensor, scalar in self.arrays:
            if array._tensor is not tensor:
                array._tensor, array._scalar, array._version = tensor, scalar, array._version + 1
        for attributes, before in self.attributes:
            if _state_changed(attributes, before):  # (by identity: `!=` asks bool() of arrays)
                attributes.clear()
                attributes.update(before)
        self.containers.restore()


_SEQUENCES = (list, set, collections.deque)


class Containers:
    """The lists, dicts, sets and deques reachable from `values` (through containers, tuples, and
    the globals and closure cells of the user's functions among them: a helper's own list),
    with their items, to tell whether a body or a branch side changed them."""

    def __init__(self, values, item_containers=(), carried_attributes=None):
        """item_containers: those whose items the loop carries: changed where their keys or
        length change (an item replaced is the loop's to carry); carried_attributes: {id:
        names} of objects' attributes the loop carries (one assigned is not a change)."""
        found = list(reachable(values))
        self.saved = [(value, list(value.items()) if isinstance(value, dict) else list(value))
                      for value in found if isinstance(value, (dict, *_SEQUENCES))]
        self.carried_items = {id(container) for container in item_containers}
        self.carried_attributes = carried_attributes or {}
        self.objects = [(value, _object_state(value)) for value in found
                        if _is_user_object(value)]

    def changed(self):
        return [(container, items) for container, items in self.saved
                if _changed(container, items, id(container) in self.carried_items)]

    def changed_objects(self):
        return [(value, state) for value, state in self.objects
                if _state_changed(_object_state(value), state,
                                  self.carried_attributes.get(id(value), ()))]

    def check(self):
        if self.changed():
            raise CaptureFailed("a Python list, dict or set changes (traced once, a loop body "
                                "would change it once, not once per iteration; a branch on "
                                "both sides, not on the one taken)")
        if self.changed_objects():
            raise CaptureFailed("an attribute of an object the body reaches changes (a method "
                                "call's `self.x = ...`: once, not once per iteration; in a "
                                "branch, on both sides)")

    def restore(self):
        for value, state in self.changed_objects():
            _set_object_state(value, state)
        for container, items in self.changed():
            if isinstance(container, list):
                container[:] = items
                continue
            container.clear()
            if isinstance(container, collections.deque):
                container.extend(items)
            else:
                container.update(items)  # a dict's (key, value) pairs, or a set's items


def reachable(values):
    """`values` and what they reach: the items of lists, dicts (their values), sets, deques and
    tuples, and the globals and closure cells of the user's functions among them; each once."""
    seen, pending = set(), list(values)
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, (*_SEQUENCES, tuple)):
            pending.extend(value)
        elif _is_user_object(value):
            pending.extend(_object_state(value).values())
        elif _is_user_function(value):
            pending.extend(_reachable_from(value))


def settle_rows(values, in_body, attribute_dicts=(), reached=True):
    """Before a loop or branch capture traces its body on `values` (its variables) and the
    attributes it may read: the rows of lists loops appended to (kiln._stacked_rows) they reach
    are read now, outside bodies, as values of the graph a body may use (`reached` False: the
    variables' own only, for a select's sides, which read the others outside bodies); inside a
    body (a nested capture), a row not read yet that is itself a variable has no value."""
    if not in_body:
        values = [*values, *(value for attributes in attribute_dicts
                             for value in attributes.values())]
        for value in reachable(values) if reached else values:
            if isinstance(value, TracedArray) and value._tensor is None:
                value.tensor  # noqa: B018 (reads it: the row's slice)
        return
    for value in values:
        if isinstance(value, TracedArray) and value._tensor is None:
            raise CaptureFailed("a row of a list a loop appended to, not read before the loop or "
                                "branch that uses it")


def _is_user_object(value):
    """An instance of a class of the user's code (`p = Particle(x, v)`, a layer with
    __slots__), whose attributes a method called in a body may assign, or of the standard
    library's attribute bags (types.SimpleNamespace, argparse.Namespace): a body's `p.x = v`
    on one of those in an inner loop was done once, not once per iteration (a wrong answer)."""
    return _is_user_class(type(value)) or isinstance(value, _NAMESPACES)


_NAMESPACES = (types.SimpleNamespace, argparse.Namespace)


def _object_state(value):
    """{name: value} of an object's attributes, its __dict__'s and its __slots__'."""
    state = dict(vars(value)) if isinstance(getattr(value, "__dict__", None), dict) else {}
    for slot in _slot_names(value):
        try:
            state[slot] = getattr(value, slot)
        except AttributeError:  # a slot not assigned yet
            pass
    return state


def _set_object_state(value, state):
    for name in _object_state(value).keys() - state.keys():
        delattr(value, name)
    for name, item in state.items():
        object.__setattr__(value, name, item)


def _state_changed(now, before, carried=()):
    return now.keys() != before.keys() or any(now[name] is not item and name not in carried
                                              for name, item in before.items())


def _changed(container, items, structure_only=False):
    if isinstance(container, set):  # unordered: the same objects, by identity
        return (len(container) != len(items)
                or {id(item) for item in container} != {id(item) for item in items})
    now = list(container.items()) if isinstance(container, dict) else list(container)
    if len(now) != len(items):
        return True
    if isinstance(container, dict):
        return any(key is not old_key or value is not old_value and not structure_only
                   for (key, value), (old_key, old_value) in zip(now, items))
    return not structure_only and any(value is not old for value, old in zip(now, items))


def _reachable_from(function):
    """The globals a user's function names and its closure cells' values."""
    globals_ = function.__globals__
    yield from (globals_[name] for name in function.__code__.co_names if name in globals_)
    for cell in function.__closure__ or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            pass
