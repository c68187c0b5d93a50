"""Hashable stand-ins for the values of a kiln.wrap_numpy signature that are not arrays (its
static arguments and the globals the function reads).

The signature's key holds them: a value equal to the recorded one reuses the graph traced with
it. A list, dict, set, bytearray, deque, array.array or an object's attributes can change in
place and stay the same object, so they are keyed by a frozen copy of their contents (up to
MOST_ITEMS items in all and MOST_LEVELS levels), not by identity: a global list of weights
changed in place then traces anew, as kiln.compile's guards do (src/python/guard_states.h).
One too large to copy is TOO_LARGE, and such a call runs as NumPy on the host."""
import array
import collections
import types

import numpy as np

MOST_ITEMS = 256
MOST_LEVELS = 4
TOO_LARGE = object()

# NumPy's functions (ufuncs, and NumPy 2's array-function dispatchers) too: the environment
# holds those the code names (np.sin), read at each call so that a replacement is seen
# (kiln._environment), and keyed by identity, as the C++ guards compare them; a snapshot of a
# dispatcher's attributes kept every call on a GPU array off the library fast paths.
_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), type, types.ModuleType,
              types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType,
              range, slice, np.generic, np.dtype, np.ufunc, type(np.concatenate))
_SEQUENCES = (list, tuple, collections.deque, array.array)


class _TooLarge(Exception):
    pass


def immutable(value):
    """Whether `value` cannot change in place (its identity is its key)."""
    return isinstance(value, _IMMUTABLE) or (
        type(value) is tuple and all(immutable(item) for item in value))


def static_key(value):
    """The key of `value`: itself where it cannot change in place, a frozen copy of its
    contents where it can, TOO_LARGE past the copy's bounds."""
    budget = [MOST_ITEMS]
    try:
        return _frozen(value, MOST_LEVELS, budget)
    except _TooLarge:
        return TOO_LARGE


def _frozen(value, levels, budget):
    if immutable(value):
        return value
    kind = type(value)
    if kind is memoryview:  # its bytes change with the buffer it views: no key holds them
        raise _TooLarge()
    if isinstance(value, (*_SEQUENCES, dict, set, frozenset, bytearray)):
        budget[0] -= len(value)
        if levels == 0 or budget[0] < 0:
            raise _TooLarge()
        if isinstance(value, dict):
            return kind, tuple((key, _frozen(item, levels - 1, budget))
                               for key, item in value.items())
        if isinstance(value, (set, frozenset)):
            return kind, frozenset(_frozen(item, levels - 1, budget) for item in value)
        if isinstance(value, bytearray):
            return kind, bytes(value)
        return kind, tuple(_frozen(item, levels - 1, budget) for item in value)
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and attributes:  # an object's settings, changed in place
        return kind, id(value), _frozen(attributes, levels, budget)
    return kind, value if kind.__hash__ is not None else id(value)
