"""Pytrees: exact tuples, lists and dicts (insertion order) are containers, everything else is a
leaf. The C++ guard (src/python/guarded_cache.cpp) walks arguments in exactly this order, so
array leaf i here is graph input i there. Subclasses (namedtuples, OrderedDict) are leaves.
The output spec (results) adds its own leaves: Constant, and Rebuilt for namedtuples."""
import functools
import types

import numpy as np

_TUPLE, _LIST, _DICT, _LEAF = 0, 1, 2, 3


def flatten(tree):
    """(leaves, spec): spec rebuilds the tree with unflatten."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(node, leaves):
    kind = type(node)
    if kind is tuple:
        return (_TUPLE, [_flatten(child, leaves) for child in node])
    if kind is list:
        return (_LIST, [_flatten(child, leaves) for child in node])
    if kind is dict:
        return (_DICT, list(node.keys()), [_flatten(child, leaves) for child in node.values()])
    leaves.append(node)
    return (_LEAF,)


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
    if type(original) is not {_TUPLE: tuple, _LIST: list, _DICT: dict}[kind]:
        raise TypeError("changed")
    if kind == _DICT:
        if list(original.keys()) != list(spec[1]):
            raise KeyError("changed")
        olds = list(original.values())
    else:
        olds = list(original)
        if len(olds) != len(spec[1]):
            raise IndexError("changed")
    children = [_unflatten_keeping(child, iterator, old)
                for child, old in zip(spec[-1], olds)]
    if all(new is old for new, old in zip(children, olds)):
        return original
    if kind == _TUPLE:
        return tuple(children)
    if kind == _LIST:
        return children
    return dict(zip(spec[1], children))


def map_leaves(function, tree):
    leaves, spec = flatten(tree)
    return unflatten(spec, [function(leaf) for leaf in leaves])


# ---- leaves of a compiled call's output spec (src/python/output_spec.h) ----

class Constant:
    """A static (non-array) output value in a cache entry's output spec."""
    __slots__ = ("_kiln_constant",)

    def __init__(self, value):
        self._kiln_constant = value


class Rebuilt:
    """A result container of the output spec that is not an exact tuple, list or dict (a
    namedtuple): the result is `_kiln_rebuild` of its built `_kiln_parts`."""
    __slots__ = ("_kiln_rebuild", "_kiln_parts")

    def __init__(self, rebuild, parts):
        self._kiln_rebuild = rebuild
        self._kiln_parts = parts


_LAZY_CODE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


def cell_holds(cell):
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def holds_array(value, is_array, depth=3):
    """Whether a result leaf kiln cannot rebuild (a dataclass, a dict subclass, an object)
    holds a traced array within `depth` levels: returned as it is, the caller would get it."""
    if is_array(value):
        return True
    if isinstance(value, _LAZY_CODE):
        # Its body runs after the trace has ended, over the trace's arguments and globals.
        return True
    if depth == 0 or isinstance(value, (str, bytes, np.ndarray, np.generic, type)):
        return False
    if isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, (tuple, list, set, frozenset)):
        parts = list(value)
    elif isinstance(value, types.FunctionType):  # a closure over traced values (lambda: x + 1)
        parts = [cell.cell_contents for cell in value.__closure__ or () if cell_holds(cell)]
        parts += list(value.__defaults__ or ()) + list((value.__kwdefaults__ or {}).values())
    elif isinstance(value, functools.partial):
        parts = [value.func, *value.args, *value.keywords.values()]
    elif isinstance(value, types.MethodType):
        parts = [value.__func__, value.__self__]
    else:
        parts = list(getattr(value, "__dict__", {}).values())
    return any(holds_array(part, is_array, depth - 1) for part in parts)
