"""What a function's code names, read by kiln._environment to know what a compiled function
reads besides its arguments: its global names, the attribute names it spells, and whether it
reads by names it does not spell (getattr(self, name), vars(cfg)[key], globals()[name]), where
the names it spells do not say what it reads."""
import dis
import functools
import inspect
import sys
import types


def _names(code):
    """The global and attribute names of `code` and of the code objects nested in it."""
    names = list(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names.extend(_names(constant))
    return list(dict.fromkeys(names))


# The instructions that read or bind a module global (LOAD_NAME: class bodies, module code).
_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL",
                         "STORE_NAME", "DELETE_NAME", "LOAD_FROM_DICT_OR_GLOBALS"))


@functools.lru_cache(maxsize=4096)
def _global_names(code):
    """The module globals `code` and the code objects nested in it name: not the attributes
    it reads (`np.exp` names no global `exp`, `A.T` no global `T`; co_names holds both), whose
    same-named globals were guarded, an unrelated script variable `T` recompiling."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names.extend(_global_names(constant))
    return tuple(dict.fromkeys(names))


# Builtins (and attributes: self.__dict__[key], operator.attrgetter(name)) that read
# attributes by a name computed at run time (getattr(self, name), vars(cfg)[key]): the names
# the code spells do not say which attributes it reads.
_COMPUTED_NAME_READERS = frozenset(("getattr", "hasattr", "vars"))
_COMPUTED_NAME_ATTRIBUTES = frozenset(("__dict__", "__getattribute__", "attrgetter"))
# Builtins that read a module's globals by a computed name (globals()[name], eval("G")).
_NAMESPACE_READERS = ("globals", "eval", "exec")


@functools.lru_cache(maxsize=4096)
def _reads_computed_names(code):
    """Whether `code` (or code nested in it) may read attributes by names it does not spell:
    then every attribute of the objects it reads is read at each call, not only those named
    (a trace read the others once: the first call's values, whatever changed since)."""
    return (not _COMPUTED_NAME_READERS.isdisjoint(_global_names(code))
            or not _COMPUTED_NAME_ATTRIBUTES.isdisjoint(_names(code)))


def _public_names(namespace):
    return [name for name in namespace if not (name.startswith("__") and name.endswith("__"))]


def _names_read(code, namespace):
    """The names of `namespace` (a dict or the like) that `code` may read: those it names, or
    every one but the dunders where it reads by computed names."""
    if _reads_computed_names(code):
        return _public_names(namespace)
    return [name for name in _names(code) if name in namespace]


def _unwatched_namespace_read(code, globals_):
    """Why `code` reads module globals by names no guard can know (globals()[name], eval,
    exec, sys.modules[__name__].G), or None."""
    names = _global_names(code)
    for name in _NAMESPACE_READERS:
        if name in names and name not in globals_:
            return f"it calls {name}(), which reads module globals by names known only then"
    if "modules" in _names(code) and any(globals_.get(name) is sys for name in names):
        return "it reads sys.modules, whose modules' globals it reads by names known only then"
    return None


_NAME_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST",
                         "LOAD_CLASSDEREF"))


@functools.lru_cache(maxsize=4096)
def _attributes_of_name(code, name):
    """The attributes `code` (and code nested in it) reads off what it names `name`, a global,
    closure variable or local (name.attr, name.method(...)), in order."""
    instructions = list(dis.get_instructions(code))
    found = [second.argval for first, second in zip(instructions, instructions[1:])
             if first.opname in _NAME_LOADS and first.argval == name
             and second.opname in ("LOAD_ATTR", "LOAD_METHOD")]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found.extend(_attributes_of_name(constant, name))
    return tuple(dict.fromkeys(found))


def _class_names(klass):
    """The attribute names of a class and its bases (object's aside)."""
    return list(dict.fromkeys(name for base in klass.__mro__[:-1] for name in vars(base)))


def _class_data(klass, name):
    """Whether `name` is a data attribute of `klass` or of its bases (object's aside): state
    a method reads through self or cls, not a method, property or other descriptor."""
    if name.startswith("__") and name.endswith("__"):
        return False
    for base in klass.__mro__[:-1]:
        if name in vars(base):
            return not hasattr(type(vars(base)[name]), "__get__")
    return False


def _class_value(klass, name):
    """Whether class attribute `name` is read at each call: data (_class_data), or a method
    (`__call__` of the dunders), whose identity says whether it was replaced on the class
    between calls (`Model.rhs = other`: the trace ran the old one)."""
    if _class_data(klass, name):
        return True
    if name != "__call__" and name.startswith("__") and name.endswith("__"):
        return False
    for base in klass.__mro__[:-1]:
        if name in vars(base):
            return isinstance(vars(base)[name], types.FunctionType)
    return False


def _class_reads(value, code):
    """The class attributes of `value` (an object of a user's class) that `code` names and
    that are read at each call from its class (_class_value): cfg.eps where eps is Cfg's,
    cfg.act() where act is Cfg's; also those the object shadows now with an attribute of its
    own, which `del cfg.eps` reveals."""
    klass = type(value)
    return [name for name in _names(code) if _class_value(klass, name)]


def _member_function(klass, name):
    """The function behind a class's member (a method, a static or class method's function, a
    property's getter, a descriptor's __get__), or the member as it is; None where there is
    none."""
    member = inspect.getattr_static(klass, name, None)
    if isinstance(member, (staticmethod, classmethod)):
        return member.__func__
    return _attribute_getter(member) or member


def _attribute_getter(member):
    """The Python function that computes an attribute a class member makes: a property's
    getter, a descriptor's __get__ (`scale = FromSettings()`); None for any other member."""
    if isinstance(member, property):
        return member.fget
    getter = getattr(type(member), "__get__", None)
    return getter if isinstance(getter, types.FunctionType) else None


@functools.lru_cache(maxsize=4096)
def _imported_names(code):
    """The modules `code` (or code nested in it) imports as it runs (`import config` inside a
    function): what it reads of them is read when it runs, as a global module's is."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname == "IMPORT_NAME"]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names.extend(_imported_names(constant))
    return tuple(dict.fromkeys(names))
