"""Pytrees: exact tuples, lists and dicts (insertion order) and namedtuples are containers, and
so are objects holding arrays among a call's arguments (dataclasses of arrays, a model's
layers: their instance attributes, in order); everything else is a leaf. The C++ guard
(src/python/guard_items.h) records its items following the spec made here, so array leaf i here
is graph input i there. Other subclasses (OrderedDict) are leaves. The output spec (results)
adds its own leaves: Constant, and Rebuilt for namedtuples and dataclasses."""
import collections
import collections.abc
import contextvars
import functools
import operator
import types
import weakref

import numpy as np

_TUPLE, _LIST, _DICT, _LEAF, _NAMED, _OBJECT = 0, 1, 2, 3, 4, 5


# Containers nested deeper than this are leaves: each level is a Python frame here and in the
# walks of the spec, so a list nested 3,000 deep would raise RecursionError, not run. Such a leaf
# holding arrays or too deep for a guard's snapshot makes the call run eagerly (_arguments.py).
MOST_CONTAINER_DEPTH = 64
# A list, tuple or dict of more items than this is a leaf, guarded as one value: as a container
# each item was a leaf of its own, flattened in Python and compared by the guard at every call
# (a 300,000-number lookup list read by the function: 6 ms a call, 150x Python's, and 20 s for
# the first call of a 3,000,000-number one). Such a leaf is more than a guard's snapshot holds,
# so the call runs eagerly (_arguments.too_large_to_guard), at Python's cost: the length alone
# decides, as looking at each item would cost as much again at every call.
MOST_CONTAINER_ITEMS = 4096


def flatten(tree, results=False):
    """(leaves, spec): spec rebuilds the tree with unflatten. results: dataclass instances are
    containers too (a result kiln rebuilds, output_spec)."""
    leaves = []
    return leaves, _flatten(tree, leaves, set() if results else None, results)


def flatten_call(args, kwargs, environment, object_values):
    """flatten((args, kwargs, environment)), dataclasses and objects holding arrays as
    containers in the arguments and in the environment's values where `object_values` (one
    bool per value) says so: not in a global, whose object's attributes are read as inputs of
    their own (_environment.py)."""
    leaves, objects = [], set()
    spec = (_TUPLE, [_flatten(args, leaves, objects), _flatten(kwargs, leaves, objects),
                     (_TUPLE, [_flatten(value, leaves, objects if allowed else None)
                               for value, allowed in zip(environment, object_values)])])
    return leaves, spec


def is_named_tuple(node):
    """A namedtuple (typing.NamedTuple too) without instance attributes: rebuilt by _make."""
    kind = type(node)
    return (isinstance(node, tuple) and kind.__dictoffset__ == 0
            and type(getattr(kind, "_fields", None)) is tuple)


def is_data_object(node, result=False):
    """An object whose state is its __dict__ alone, rebuilt as a copy over new attributes
    (_data_object): among a call's arguments one that holds arrays (a dataclass of them, a
    model's layers, `self` of a method compiled in its class body); among its results a
    dataclass instance."""
    kind = type(node)
    if (kind.__dictoffset__ == 0 or kind.__new__ is not object.__new__ or isinstance(node, type)
            or kind.__getattribute__ is not object.__getattribute__ or hasattr(kind, "__getattr__")
            or hasattr(kind, "__del__")  # a copy's finalizer would act on the caller's state
            or any("__slots__" in vars(base) for base in kind.__mro__[:-1])):
        return False
    if result:
        return hasattr(kind, "__dataclass_fields__")
    return holds_array(node, lambda value: isinstance(value, np.ndarray))


def _flatten(node, leaves, objects, results=False, enclosing=()):
    """objects: a set of the ids of the objects made containers so far (each may appear once:
    an object reached twice, or through itself, is a leaf, and such a call runs eagerly), or
    None where objects are leaves; results: is_data_object's `result`; enclosing: the ids of
    the containers this node is inside. A list, tuple or dict inside itself (a cycle: `l.append(l)`,
    a graph of nodes) or nested past MOST_CONTAINER_DEPTH is a leaf too, never walked on."""
    kind = type(node)
    if (kind in (tuple, list, dict) or is_named_tuple(node)) and (
            id(node) in enclosing or len(enclosing) >= MOST_CONTAINER_DEPTH):
        leaves.append(node)
        return (_LEAF,)
    if kind in (tuple, list, dict) and len(node) > MOST_CONTAINER_ITEMS:
        leaves.append(node)
        return (_LEAF,)
    inside = (*enclosing, id(node))

    def children(values):
        return [_flatten(child, leaves, objects, results, inside) for child in values]
    if kind is tuple:
        return (_TUPLE, children(node))
    if kind is list:
        return (_LIST, children(node))
    if kind is dict:
        return (_DICT, list(node.keys()), children(node.values()))
    if is_named_tuple(node):
        return (_NAMED, kind, children(node))
    if objects is not None and id(node) not in objects and is_data_object(node, results):
        objects.add(id(node))
        attributes = vars(node)
        return (_OBJECT, kind, list(attributes.keys()), children(attributes.values()))
    leaves.append(node)
    return (_LEAF,)


def _data_object(kind, names, values):
    """An instance of `kind` over these attributes, made as copy.copy makes one (no __init__ or
    __post_init__: the caller's object already passed them)."""
    instance = object.__new__(kind)
    instance.__dict__.update(zip(names, values))
    return instance


def unflatten(spec, leaves):
    """The tree of `spec` with `leaves` in flatten order."""
    iterator = iter(leaves)
    return _unflatten(spec, iterator)


def _unflatten(spec, iterator):
    kind = spec[0]
    if kind == _LEAF:
        return next(iterator)
    if kind == _TUPLE:
        return tuple(_unflatten(child, iterator) for child in spec[1])
    if kind == _LIST:
        return [_unflatten(child, iterator) for child in spec[1]]
    if kind == _NAMED:
        return spec[1]._make([_unflatten(child, iterator) for child in spec[2]])
    if kind == _OBJECT:
        return _data_object(spec[1], spec[2], [_unflatten(child, iterator) for child in spec[3]])
    return {key: _unflatten(child, iterator) for key, child in zip(spec[1], spec[2])}


def unflatten_keeping(spec, leaves, original):
    """unflatten(spec, leaves), except that a container of `original` (the tree flattened)
    under which every leaf is still the one it holds is that container itself, not a copy: a
    function that appends to a global list or an argument's dict changes the caller's, as it
    would eagerly. Containers holding traced leaves are rebuilt."""
    try:
        return _unflatten_keeping(spec, iter(leaves), original)
    except (KeyError, IndexError, TypeError, ValueError):  # original changed meanwhile
        return unflatten(spec, leaves)


def _unflatten_keeping(spec, iterator, original):
    kind = spec[0]
    if kind == _LEAF:
        return next(iterator)
    olds = _children(spec, original)
    children = [_unflatten_keeping(child, iterator, old)
                for child, old in zip(spec[-1], olds)]
    if all(new is old for new, old in zip(children, olds)):
        return original
    if kind == _TUPLE:
        return tuple(children)
    if kind == _LIST:
        return children
    if kind == _NAMED:
        return spec[1]._make(children)
    if kind == _OBJECT:
        return _data_object(spec[1], spec[2], children)
    return dict(zip(spec[1], children))


def _children(spec, node):
    """The children of the container `node` where it still has the shape of its `spec`;
    KeyError, IndexError or TypeError where it has changed."""
    kind = spec[0]
    expected = {_TUPLE: tuple, _LIST: list, _DICT: dict}.get(kind) or spec[1]  # or the class
    if type(node) is not expected:
        raise TypeError("changed")
    if kind in (_DICT, _OBJECT):
        mapping = node if kind == _DICT else vars(node)
        if list(mapping.keys()) != list(spec[-2]):
            raise KeyError("changed")
        return list(mapping.values())
    children = list(node)
    if len(children) != len(spec[-1]):
        raise IndexError("changed")
    return children


def object_dicts(spec, tree):
    """The attribute dicts of the objects that are containers of `tree` (kiln._loop_escapes)."""
    found = []

    def walk(spec, node):
        if spec[0] == _OBJECT:
            found.append(vars(node))
        if spec[0] != _LEAF:
            for child, value in zip(spec[-1], _children(spec, node)):
                walk(child, value)
    try:
        walk(spec, tree)
    except (KeyError, IndexError, TypeError):  # changed since flattened
        pass
    return found


def changed_copies(spec, leaves, traced, original, is_traced):
    """After a trace over `traced` (unflatten_keeping(spec, leaves, original)): whether the
    function changed a container kiln gave it in place of the caller's (a copy holding tracers:
    `lst.append(y)`, `d["k"] = y`, `state.x = y`), or put a traced value into one of the
    caller's own (a global list). Eagerly the caller would see the change; a graph cannot
    make it, so such a call runs eagerly."""
    return _changed(spec, iter(leaves), traced, original, is_traced)


def _changed(spec, leaves, traced, original, is_traced):
    if spec[0] == _LEAF:
        # An object kept as it is (a static): one the trace stored a traced value into
        # (`o.val = x.sum()`) would hand the caller a tracer.
        return next(leaves) is not traced or (
            not is_traced(traced) and not isinstance(traced, _PLAIN_LEAVES)
            and holds_array(traced, is_traced))
    if traced is original:  # the caller's own container: changes are Python's, but no tracer
        _skip(spec, leaves)
        return holds_array(traced, is_traced)
    try:
        news, olds = _children(spec, traced), _children(spec, original)
    except (KeyError, IndexError, TypeError):
        return True
    return any(_changed(child, leaves, new, old, is_traced)
               for child, new, old in zip(spec[-1], news, olds))


class Contents:
    """What the caller's lists, dicts and dataclass instances in a flattened tree hold, kept
    before a trace; restore() puts it back after a trace that changed them and was given up
    (the eager run that follows changes them again)."""

    def __init__(self, spec, tree):
        self.saved, self.seen = [], set()
        try:
            self._save(spec, tree)
        except (KeyError, IndexError, TypeError):  # changed since flattened: nothing to keep
            pass

    def _save(self, spec, node):
        kind = spec[0]
        if kind == _LEAF:
            self._save_held(node, _HELD_DEPTH)
            return
        if kind == _LIST:
            self.saved.append((node, list(node)))
        elif kind in (_DICT, _OBJECT):
            mapping = node if kind == _DICT else vars(node)
            self.saved.append((mapping, dict(mapping)))
        for child, value in zip(spec[-1], _children(spec, node)):
            self._save(child, value)

    def _save_held(self, value, depth):
        """What an object kept as it is (a leaf) holds, as holds_array walks it: its attributes,
        items and elements to `depth` levels. A trace that stores a traced value into one (`o.m =
        np.zeros(n)` under `if o.m is None`) is given up, and the eager run after it must find
        the caller's None there, not the tracer (it would skip the branch and compute with it)."""
        if (depth == 0 or isinstance(value, _PLAIN_LEAVES) or id(value) in self.seen
                or len(self.seen) >= _MOST_HELD):
            return
        self.seen.add(id(value))
        if isinstance(value, (list, dict, set)):
            parts = list(value.values() if isinstance(value, dict) else value)
            self.saved.append((value, list(value) if isinstance(value, list) else value.copy()))
        elif isinstance(value, (tuple, frozenset)):
            parts = list(value)
        else:
            state = getattr(value, "__dict__", None)
            if type(state) is not dict:  # a class's mappingproxy, or none
                return
            parts = list(state.values())
            self.saved.append((state, dict(state)))
        for part in parts[:_MOST_HELD]:
            self._save_held(part, depth - 1)

    def restore(self):
        for container, content in self.saved:
            if isinstance(container, list):
                container[:] = content
            else:
                container.clear()
                container.update(content)


def _skip(spec, leaves):
    if spec[0] == _LEAF:
        next(leaves)
    else:
        for child in spec[-1]:
            _skip(child, leaves)


def output_spec(convert, tree):
    """The output spec of the result `tree` (src/python/output_spec.cpp): `convert` of each
    leaf, in exact tuples, lists and dicts; namedtuples and dataclass instances as Rebuilt."""
    leaves, spec = flatten(tree, results=True)
    return _output_spec(spec, iter([convert(leaf) for leaf in leaves]))


def _output_spec(spec, iterator):
    kind = spec[0]
    if kind == _LEAF:
        return next(iterator)
    children = [_output_spec(child, iterator) for child in spec[-1]]
    if kind == _TUPLE:
        return tuple(children)
    if kind == _LIST:
        return children
    if kind == _DICT:
        return dict(zip(spec[1], children))
    if kind == _NAMED:
        return Rebuilt(spec[1]._make, tuple(children))
    return Rebuilt(functools.partial(_data_object, spec[1], spec[2]), tuple(children))


# ---- leaves of a compiled call's output spec (src/python/output_spec.h) ----

class Constant:
    """A static (non-array) output value in a cache entry's output spec."""
    __slots__ = ("_kiln_constant",)

    def __init__(self, value):
        self._kiln_constant = value


class Rebuilt:
    """A result container of the output spec that is not an exact tuple, list or dict (a
    namedtuple, a dataclass instance): the result is `_kiln_rebuild` of its built
    `_kiln_parts`."""
    __slots__ = ("_kiln_rebuild", "_kiln_parts")

    def __init__(self, rebuild, parts):
        self._kiln_rebuild = rebuild
        self._kiln_parts = parts


def assigning(targets, spec):
    """The output spec `spec` of a (result, *values) tuple whose values each run assigns to
    `targets`, (attribute dict, name) pairs: the result's spec as seen by the caller."""
    return Rebuilt(functools.partial(_assign, targets), spec)


def _assign(targets, parts):
    for (attributes, name), value in zip(targets, parts[1:]):
        attributes[name] = value
    return parts[0]


_LAZY_CODE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
# Leaves no traced value can be stored into (a generator's frame is the caller's own).
# Leaves' contents Contents keeps: holds_array's depth, and at most this many objects.
_HELD_DEPTH, _MOST_HELD = 16, 4096
_PLAIN_LEAVES = (np.ndarray, np.generic, int, float, complex, str, bytes, type(None), type,
                 types.ModuleType, *_LAZY_CODE)


def cell_holds(cell):
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def holds_array(value, is_array, depth=16, seen=None):
    """Whether `value` holds an array (`is_array`) within `depth` levels of containers and
    objects' attributes, each object looked at once: a result leaf kiln cannot rebuild (a
    dict subclass, an object) returned as it is would give the caller a traced array; an
    argument object (a model whose layers hold weights) would bake its arrays into the graph."""
    if is_array(value):
        return True
    if isinstance(value, _LAZY_CODE):
        # Its body runs after the trace has ended, over the trace's arguments and globals.
        return True
    if depth == 0 or isinstance(value, (str, bytes, np.ndarray, np.generic, type,
                                        types.ModuleType)):
        return False
    seen = set() if seen is None else seen
    if id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, (dict, types.MappingProxyType, weakref.WeakValueDictionary)):
        parts = list(value.values())
    elif isinstance(value, (tuple, list, set, frozenset, collections.deque, weakref.WeakSet)):
        parts = list(value)
    elif isinstance(value, weakref.WeakKeyDictionary):
        parts = list(value.keys()) + list(value.values())
    elif isinstance(value, weakref.ref):  # what R() returns (a WeakValueDictionary's too)
        parts = [value()]
    elif isinstance(value, contextvars.ContextVar):  # what CV.get() returns in this context
        parts = [value.get(None)]
    elif isinstance(value, types.FunctionType):  # a closure over traced values (lambda: x + 1)
        parts = [cell.cell_contents for cell in value.__closure__ or () if cell_holds(cell)]
        parts += list(value.__defaults__ or ()) + list((value.__kwdefaults__ or {}).values())
    elif isinstance(value, functools.partial):
        parts = [value.func, *value.args, *value.keywords.values()]
    elif isinstance(value, types.MethodType):
        parts = [value.__func__, value.__self__]
    elif isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)):
        # w.__add__, w.sum, {"w": w}.get: what a method written in C is bound to
        parts = [] if bound_to_module_or_class(value) else [value.__self__]
    elif isinstance(value, collections.abc.MappingView):  # d.values(), read without change
        parts = list(value)
    elif isinstance(value, collections.abc.Iterator):
        # iter(list), map, zip, enumerate: what they would yield, from what pickling keeps of
        # them (nothing consumed); one that cannot say may yield anything
        try:
            parts = list(value.__reduce__()[1:])
        except Exception:  # noqa: BLE001 (any failure means: not known)
            return True
    elif isinstance(value, _OPERATOR_CALLABLES):
        maker, arguments = value.__reduce__()[:2]  # methodcaller("dot", w): its arguments
        parts = [maker, *arguments]  # (keywords: a partial of the class as its maker)
    else:
        parts = list(getattr(value, "__dict__", {}).values()) + _slot_values(value)
    return any(holds_array(part, is_array, depth - 1, seen) for part in parts)


_OPERATOR_CALLABLES = (operator.methodcaller, operator.itemgetter, operator.attrgetter)


def bound_to_module_or_class(function):
    """Whether a function written in C is a module's (len, math.exp), a class's or a ufunc's
    (np.add.outer), whose __self__ holds no state of the call's."""
    owner = getattr(function, "__self__", None)
    return owner is None or isinstance(owner, (types.ModuleType, type, np.ufunc))


def _slot_values(value):
    """The values in an object's __slots__ (those set)."""
    names = []
    for base in type(value).__mro__[:-1]:
        slots = vars(base).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return [getattr(value, name) for name in names
            if name not in ("__dict__", "__weakref__") and hasattr(value, name)]
