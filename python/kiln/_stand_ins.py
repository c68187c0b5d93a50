"""Stand-ins for the objects a trace reads attributes of (self, global objects, a user's
modules): objects of the same class over a copy of their attributes holding tracers, and what
the trace assigned to them (Attributes). kiln._environment decides which objects are read."""
import copy
import types

import numpy as np


class Attributes:
    """The attribute dicts of the objects a trace reads attributes of, self's and global
    objects', as they were before it: `objects` pairs each caller's object with the one the
    trace runs over (a stand-in over a copy of its attributes, or itself). What the trace
    assigns (`self.t += dt`, `self.m = b1 * self.m + g`) reached a copy the caller never sees,
    or left tracers in the caller's object: assigned() lists it, to be assigned by each run of
    the graph (kiln._compile), and restore() undoes the trace's own changes."""

    def __init__(self, objects, copies=None):
        self.copies = copies or {}  # id(a globals dict) -> the copy the trace runs over
        self.saved = [(_attributes_of(caller), _attributes_of(traced),
                       dict(_attributes_of(traced).items()))
                      for caller, traced in objects
                      if _is_plain_object(traced) or _has_slots(traced)
                      or isinstance(traced, types.ModuleType) and traced is not caller]

    def assigned(self):
        """[(the caller's attribute dict, name, the value the trace assigned)], or None where
        the trace deleted an attribute."""
        assignments = []
        for target, current, before in self.saved:
            if not current.keys() >= before.keys():
                return None
            assignments += [(target, name, value) for name, value in current.items()
                            if name not in before or before[name] is not value]
        return assignments

    def traced_dicts(self):
        """The attribute dicts the trace runs over (a loop body's changes: kiln._loop_escapes)."""
        return [current for _, current, _ in self.saved if type(current) is dict]

    def restore(self):
        for _, current, before in self.saved:
            current.clear()
            current.update(before)


def _is_plain_object(value):
    """An instance whose attributes live in its __dict__ (a config namespace, a user class's
    object): not a module, class, function or array."""
    return (isinstance(getattr(value, "__dict__", None), dict)
            and not isinstance(value, (types.ModuleType, type, types.FunctionType,
                                       types.MethodType, types.BuiltinFunctionType, np.ndarray)))


def _has_slots(value):
    """An object with __slots__ attributes (read by getattr): not a class, module or array."""
    return (value is not None and bool(_slot_names(value))
            and not isinstance(value, (types.ModuleType, type, np.ndarray, np.generic)))


def _slot_names(value):
    """{name as code spells it: name getattr reads} of the __slots__ of value's class."""
    names = {}
    for klass in type(value).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if not isinstance(slot, str) or slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):  # self.__w: mangled
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            names.setdefault(slot, slot)
    return names


def _attributes_of(value):
    """vars(value), or for an object with __slots__ a dict-like view of them (and of its
    __dict__, if it has one), as Attributes reads and assigns them."""
    return _SlotView(value) if _has_slots(value) else vars(value)


class _SlotView:
    """The attributes of an object with __slots__ as a dict: items() the set ones, assignment
    by setattr (object's, past a frozen class's __setattr__ as the stand-in's own are set)."""

    def __init__(self, value):
        self.value, self.slots = value, _slot_names(value)
        dict_ = getattr(value, "__dict__", None)
        self.dict = dict_ if isinstance(dict_, dict) else None

    def items(self):
        found = [(name, getattr(self.value, name)) for name in self.slots
                 if hasattr(self.value, name)]
        return found + list(self.dict.items() if self.dict is not None else ())

    def keys(self):
        return dict(self.items()).keys()

    def __setitem__(self, name, value):
        if name in self.slots or self.dict is None:
            object.__setattr__(self.value, name, value)
        else:
            self.dict[name] = value

    def clear(self):
        for name in self.slots:
            if hasattr(self.value, name):
                object.__delattr__(self.value, name)
        if self.dict is not None:
            self.dict.clear()

    def update(self, values):
        for name, value in values.items():
            self[name] = value


def _with_methods(instance, methods):
    """instance as an object of a subclass of its class whose methods are `methods` (a class
    with __slots__ has no __dict__ for them)."""
    subclass = type(type(instance).__name__, (type(instance),), {**methods, "__slots__": ()})
    try:
        instance.__class__ = subclass
    except TypeError:
        pass
    return instance


def _stand_in(instance, attributes, slots=None):
    """An object of instance's class over `attributes` (the copy holding tracers) and the
    values of its __slots__ attributes in `slots`; the instance itself where its class cannot
    be made that way (its arrays are baked in)."""
    if isinstance(instance, types.ModuleType):  # a module's __dict__ cannot be assigned
        stand_in = types.ModuleType(instance.__name__, instance.__doc__)
        stand_in.__dict__.update(attributes)
        return stand_in
    if slots:
        try:
            stand_in = copy.copy(instance)
            if attributes is not None:
                stand_in.__dict__ = attributes
            for name, value in slots.items():
                object.__setattr__(stand_in, name, value)
            return stand_in
        except Exception:  # noqa: BLE001 - any class may refuse to be copied
            return instance
    try:
        stand_in = object.__new__(type(instance))
        stand_in.__dict__ = attributes
        return stand_in
    except (TypeError, AttributeError):
        pass
    try:   # types.SimpleNamespace and others whose __dict__ cannot be set: a shallow copy
        stand_in = copy.copy(instance)
        stand_in.__dict__.update(attributes)
        return stand_in
    except Exception:  # noqa: BLE001 - any class may refuse to be copied
        return instance

