"""Attributes of the user's objects that a loop body assigns through names it does not carry
(`for p in particles: p.x = p.x + p.v * dt` inside a time loop), carried by the loop as
variables (kiln._loop_container_items adds them to the loop's variables with the items).

kiln._loop_attribute_updates carries `obj.x` where `obj` is a name the loop never binds; an
inner loop's target is one it binds, so the objects a list holds changed in the traced body,
once, and kiln._loop_escapes refused the loop ("an attribute of an object the body reaches
changes"): it unrolled. Carried are, for each object among the loop's variables or the items of
a list, tuple or dict among them, the attributes of the names the loop's statements assign as
attributes (kiln._loop_transform: `attributes`) that the object holds in a plain slot (no
property, no __setattr__ or __getattr__ of its class: kiln._loop_attribute_checks) with a
traced array or a number. get() reads them from the object and set_() assigns them there, so
whatever reaches the object sees what Python's loop leaves in it; kiln._loop_escapes still
refuses a body that changes any other attribute of the objects or adds one.

The same holds at the loop's own level for an item's attribute (`particles[0].x = ...`,
`objs[k].v = ...`: kiln._loop_refusals lets one subscript of a name through), which was refused
before tracing ("an assignment to an attribute or a subscript of one"). Objects deeper in a
container (`grid[1][0].x`) are no slots here and kiln._loop_escapes refuses their loop."""
from ._loop_attribute_checks import _plain_object, _plain_slot
from ._loop_escapes import _is_user_object


def attribute_slots(values, attribute_names, is_leaf):
    """[(object, attribute, the slot's name)] of the objects among `values` and their items."""
    if not attribute_names:
        return []
    slots, seen = [], set()
    for value in values:
        items = (value.values() if type(value) is dict else value
                 if type(value) in (list, tuple) else [value])
        for item in items:
            if id(item) in seen or not (_is_user_object(item) and _plain_object(item)):
                continue
            seen.add(id(item))
            for attribute in attribute_names:
                if (_plain_slot(item, attribute) and hasattr(item, attribute)
                        and is_leaf(getattr(item, attribute))):
                    slots.append((item, attribute,
                                  f"<{type(item).__name__} {id(item):x}.{attribute}>"))
    return slots

