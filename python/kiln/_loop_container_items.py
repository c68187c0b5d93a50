"""Items of Python lists and dicts that a loop body replaces, carried by the loop as variables
(kiln._loop_capture).

`xs[k] = xs[k] * 0.9 + 0.1 * xs[(k + 1) % len(xs)]` over a list of arrays, `layers[i] =
np.tanh(W[i] @ layers[i - 1])`, a time step's `state["vel"] = state["vel"] - dt * state["pos"]`:
the body, traced once, replaced the container's items once, not once per iteration, so
kiln._loop_escapes refused the loop ("a Python list, dict or set changes") and tracing unrolled
it (a graph per step: 300 steps of a three-array list took 0.6 s to trace, a list of layers
~3 s). The items are the loop's state as a variable's value is: each joins the loop's variables
under a name no Python variable can have (`<xs[0]>`), get() reads it from the container and
set_() stores it there, so the loop puts placeholders in the container for the body's trace and
the values the loop computes in it after the loop, in the same container object (whatever
else names it sees what Python's loop would have left: nothing but the traced body runs while
the loop does).

Carried are the containers of the names the loop's statements assign items of and do not
rebind (kiln._loop_transform: `items`), where every item is a traced array or a number (an
item that is itself a container, or a NumPy array, leaves the loop as before). Their structure
must stay what it was: a body that adds, removes or reorders items is still refused
(kiln._loop_escapes.Containers checks the keys and lengths of carried containers). Two items
holding one array are two names of it, as `h = x` is: the loop gives up where the body rebinds
one of them only."""
import numpy as np

from ._loop_object_attributes import attribute_slots
from ._tracer import TracedArray


def _is_leaf(value):
    if isinstance(value, TracedArray):
        return value._selection is None
    return isinstance(value, (int, float, complex, np.number)) and not isinstance(value, bool)


def _keys(container):
    return list(container.keys()) if isinstance(container, dict) else range(len(container))


def _carried(value):
    """Whether a container's items can be carried: a non-empty list or dict of leaves."""
    if type(value) is dict:
        return len(value) > 0 and all(_is_leaf(item) for item in value.values())
    return type(value) is list and len(value) > 0 and all(_is_leaf(item) for item in value)


def with_container_items(names, get, set_, live, count, item_names, attribute_names,
                         markers):
    """(names, get, set_, live) with the items of the lists and dicts held by `item_names`
    among the first `count` names, and the attributes `attribute_names` of the objects among
    the first `count` values and their items (kiln._loop_object_attributes), added after them
    (those that follow are the loop's target). get.item_containers lists the containers
    carried, get.carried_attributes {id: attributes} of the objects (kiln._loop_escapes
    checks only their structure and their other attributes). markers: the values set_ is
    given for a name it leaves as it is (LoopCapture.KEEP and UNBOUND: never unbound here)."""
    values = get()
    containers, seen = [], set()
    for name, value in zip(names[:count], values[:count]):
        if name in item_names and id(value) not in seen and _carried(value):
            seen.add(id(value))
            containers.append((name, value))
    objects = attribute_slots(values[:count], attribute_names, _is_leaf)
    if not containers and not objects:
        return names, get, set_, live
    slots = [(container.__getitem__, container.__setitem__, key, f"<{name}[{key!r}]>")
             for name, container in containers for key in _keys(container)]
    slots += [(lambda attribute, item=item: getattr(item, attribute),
               lambda attribute, value, item=item: setattr(item, attribute, value),
               attribute, slot_name) for item, attribute, slot_name in objects]

    def get_with_items():
        values = get()
        return (*values[:count], *(read(key) for read, _, key, _ in slots), *values[count:])

    def set_with_items(values):
        for (_, write, key, _), value in zip(slots, values[count:count + len(slots)]):
            if not any(value is marker for marker in markers):
                write(key, value)
        set_((*values[:count], *values[count + len(slots):]))

    get_with_items.item_containers = tuple(container for _, container in containers)
    get_with_items.carried_attributes = {}
    for item, attribute, _ in objects:
        get_with_items.carried_attributes.setdefault(id(item), set()).add(attribute)
    added = tuple(slot_name for *_, slot_name in slots)
    return ((*names[:count], *added, *names[count:]), get_with_items, set_with_items,
            (*live, *added))

