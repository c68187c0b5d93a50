"""What kiln._environment reads of a global value a compiled function names: the attributes of
an object read at each call (`_attributes_read`), the user's functions it leads to other than by
being one (`_indirect_helpers`: a dict of them, a partial's function, a class's methods), and
the object a method written in C is bound to (`_bound_object`: w of w.sum)."""
import builtins
import collections
import functools
import inspect
import types

import numpy as np

from ._code_names import (_class_names, _member_function, _names, _names_read, _public_names,
                          _reads_computed_names)
from ._user_code import _is_user_class, _is_user_function, _is_user_module, _plain_function

# The most attributes of a user's object read at each call (all of them: its methods,
# properties and __getattr__ read what its code does not name).
_MOST_OBJECT_READS = 64


def _attributes_read(value, attributes, slots, code):
    """The attributes of a global object read at each call: those `code` names (cfg.scale);
    for an object of a user's class all of them, as its methods, properties and __getattr__
    read its state where the code names none of it (`cfg.get("a")`, a UserDict's data)."""
    # A functools.cached_property not computed yet (cfg.table) is read too: once computed it
    # is an instance attribute, which the trace that computed it would have baked in.
    cached = [a for a in _names(code) if a not in attributes
              and isinstance(inspect.getattr_static(type(value), a, None),
                             functools.cached_property)]
    named = [a for a in _names(code) if a in attributes or a in slots] + cached
    if _reads_computed_names(code):
        return _public_names(list(attributes) + [a for a in slots if a not in attributes
                                                 and hasattr(value, slots[a])])
    if not _is_user_class(type(value)) and not isinstance(value, _MAPPING_OBJECTS):
        return named
    every = list(attributes) + [a for a in slots
                                if a not in attributes and hasattr(value, slots[a])] + cached
    return every if len(every) <= _MOST_OBJECT_READS else named


def _indirect_helpers(value, code):
    """The user's functions `value` (a global `code` names) leads to other than by being one:
    in a dict, list or tuple of them (OPS["f"]), a partial's function, a class's methods,
    static and class methods and properties the code names (Util.s), a module's functions the
    code names (mod.f), and a global object's (its methods the code names, its __call__ and
    __getitem__). The trace calls them as they are, over their module's own globals."""
    if isinstance(value, functools.partial):
        found = [value.func]
    elif type(value) in (dict, list, tuple) and len(value) <= _MOST_OBJECT_READS:
        found = list(value.values() if type(value) is dict else value)
        found += [item.func for item in found if isinstance(item, functools.partial)]
    elif _is_user_module(value):
        found = [vars(value).get(name) for name in _names_read(code, vars(value))]
    elif _is_user_class(value) or _is_user_class(type(value)):
        klass = value if isinstance(value, type) else type(value)
        names = (_names_read(code, _class_names(klass))
                 + ([] if klass is value else ["__call__", "__getitem__", "__getattr__"]))
        found = [_member_function(klass, name) for name in names]
    else:
        return []
    return [f for f in map(_plain_function, found) if _is_user_function(f)]


# The standard library's containers kept in instance attributes (a UserDict's data, a
# ChainMap's maps), read through their own methods.
_MAPPING_OBJECTS = (collections.UserDict, collections.UserList, collections.UserString,
                    collections.ChainMap)


def _bound_object(fn):
    """The object a method written in C is bound to (w of w.sum, w.__add__), or None: not a
    module's function (len, np.add.reduce's ufunc is kept: its state is no array)."""
    owner = getattr(fn, "__self__", None)
    if (owner is None or isinstance(owner, (types.ModuleType, type, np.ufunc))
            or not isinstance(fn, (types.BuiltinMethodType, types.MethodWrapperType,
                                   types.MethodType))):
        return None
    return owner


def _unbound_name_reads(function, names, is_helper):
    """The reads of the globals `function` names that its module does not define: the builtin
    each resolves to (`mock.patch("builtins.len", ...)`, `builtins.abs = ...` after the first
    call went unseen: the trace's len ran again), and for a helper the module global itself,
    absent now (a global defined later shadows the builtin; fn's own globals are all read)."""
    globals_ = function.__globals__
    builtins_ = globals_.get("__builtins__", builtins)
    builtins_ = vars(builtins_) if isinstance(builtins_, types.ModuleType) else builtins_
    reads = []
    for name in names:
        if name in globals_:
            continue
        if is_helper:
            reads.append((globals_, name, f"global '{name}' of {function.__qualname__}()"))
        if isinstance(builtins_, dict) and name in builtins_:
            reads.append((builtins_, name, f"builtin '{name}'"))
    return reads
