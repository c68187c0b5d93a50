"""What kiln._environment reads of the user's objects a compiled function reaches (self, global
objects, closure variables, items of global containers): their class members the code names,
their own attributes that shadow those, their class, and the objects they hold (self.config of
self.config.lr)."""
import types

import numpy as np

from . import _pytree
from ._argument_reads import _MOST_ITEMS, callback_reads
from ._code_names import _class_reads, _class_value, _member_function, _names, _names_read
from ._environment_reads import _indirect_helpers
from ._user_code import _is_user_class, _is_user_function, _is_user_module, _plain_function

# The most levels of objects held in objects read (self.config.optim.lr: two).
_MOST_NESTING = 4


def read_class_members(environment, value, code, add_read, label=None):
    """The class attributes `code` names of a user's object, read at each call from its class
    (a trace read them once): data (cfg.eps where eps is Cfg's) and methods (cfg.act(x): one
    replaced on the class, `Cfg.act = other`, is seen). With `label` (the object's name), also
    its own attributes that would shadow them, absent now (`cfg.eps = 0.1`, `cfg.act = other`
    set after a call), and its class."""
    klass = type(value)
    if not _is_user_class(klass):
        return
    names = _class_reads(value, code)
    for name in names:
        add_read(klass, name, f"{klass.__name__}.{name}")
        environment._read_in_place(klass)
    if label is not None:
        read_class_of(environment, value, label, add_read)
        if isinstance(getattr(value, "__dict__", None), dict):
            for name in names:
                add_read(vars(value), name, f"{label}.{name}")


def read_held_objects(environment, value, code, add_read, label, depth=0):
    """The user's objects among `value`'s attributes that `code` names (self.config of
    self.config.lr), and among the items of the lists, tuples and dicts there
    (self.layers[0].rate): the snapshot of `value`'s read compares them by their own
    attributes, so each is read with its class members, _MOST_NESTING levels deep."""
    own = getattr(value, "__dict__", None)
    if depth >= _MOST_NESTING or not isinstance(own, dict):
        return
    names = _names(code)
    for name, held in list(own.items()):
        if name in names:
            read_held_value(environment, held, code, add_read, f"{label}.{name}", depth,
                            (own, name))


def read_held_value(environment, held, code, add_read, label, depth=0, holder=None):
    """One value an object's attribute (`holder`, read itself) or a container's item holds: a
    user's object, its class members and the objects it holds read; a list's, tuple's or
    dict's items walked. An attribute's object holding arrays is not read: a container whose
    arrays are inputs."""
    if depth >= _MOST_NESTING:
        return
    if _is_user_module(held) or _is_user_class(held):
        # CFG["m"].k, REGISTRY[0].Scale.k: read at each call from the module or class, as one
        # a closure cell holds is (a held module's attribute changed was a stale constant)
        environment.read_held_namespace(code, held, add_read, label)
        return
    if isinstance(held, type):
        return
    if type(held) in (dict, list, tuple):
        if len(held) <= _MOST_ITEMS:
            for key, item in list(held.items() if type(held) is dict else enumerate(held)):
                read_held_value(environment, item, code, add_read, f"{label}[{key!r}]",
                                depth + 1)
    elif _is_user_class(type(held)):
        if holder is not None:
            if _pytree.holds_array(held, lambda v: isinstance(v, np.ndarray)):
                return
            add_read(*holder, label)
        read_class_members(environment, held, code, add_read, label)
        read_held_objects(environment, held, code, add_read, label, depth + 1)
    else:  # a callback (self.step a partial, a function reading a global): what it reads
        for read in callback_reads(held, label):
            add_read(*read)


def read_held_items(environment, value, code, add_read, label):
    """The user's objects among a global list's, tuple's or dict's items (REGISTRY["a"].eps),
    or a closure variable's: the container's guard compares their own attributes, not their
    class members nor the objects they hold, read here as a global object's are (_MOST_ITEMS
    items at most)."""
    if type(value) in (dict, list, tuple):
        read_held_value(environment, value, code, add_read, label)


def read_class_of(environment, value, label, add_read):
    """The class of a user's object the code reads: one assigned (`obj.__class__ = Other`) is
    seen (its class attributes and methods, isinstance), and the environment found again
    (Environment.stale), its reads then Other's."""
    add_read(value, "__class__", f"type({label})")
    environment.classes.append((value, type(value)))


def object_methods(environment, value, code, add_read):
    """_indirect_helpers of `value` (a global or closure variable `code` names); for an object
    of a user's class also the methods those call on self (cfg.apply() calling self.step()),
    whose class members are read at each call as cfg.apply is: `Cfg.step = other` is seen; for
    a user's class, the class attributes its methods read (cls.k) and the methods they call."""
    helpers = _indirect_helpers(value, code)
    is_class = isinstance(value, type)
    if not _is_user_class(value if is_class else type(value)):
        return helpers
    klass = value if is_class else type(value)
    pending, found = list(helpers), list(helpers)
    while pending:
        method_code = pending.pop().__code__
        if is_class:
            # Config.scale(x), a classmethod reading cls.k: the class attributes it names,
            # read at each call from the class (`Config.k = 5` set after a call was unseen)
            for name in _names(method_code):
                if _class_value(klass, name):
                    add_read(klass, name, f"{klass.__name__}.{name}")
            environment._read_in_place(klass)
        else:
            read_class_members(environment, value, method_code, add_read)
        for name in _names(method_code) if is_class else _class_reads(value, method_code):
            member = _plain_function(_member_function(klass, name))
            if _is_user_function(member) and all(member is not f for f in found):
                found.append(member)
                pending.append(member)
    return found


def read_nested_modules(environment, code, value, add_read, within=()):
    """The user's modules among the attributes `code` reads of module `value` (config.sub.k),
    read as held ones are: their attributes were constants of the graph, changes unseen."""
    if not isinstance(value, types.ModuleType) or len(within) >= _MOST_NESTING:
        return
    attributes = vars(value)
    for attribute in _names_read(code, attributes):
        held = attributes[attribute]
        if _is_user_module(held) and all(held is not m for m in (*within, value)):
            environment.read_held_namespace(code, held, add_read, None, (*within, value))
