"""The run-time half of kiln._loop_attribute_updates: whether, as a loop starts, only its own
code may see the attributes it assigns, so that names may carry them (asked by the capture
helper's attributes_carried, kiln._loop_expressions.ExpressionCapture)."""
import builtins
import numbers
import types

import numpy as np

from ._loop_escapes import reachable
from ._loop_helpers import _is_user_function
from ._tracer import TracedArray

_LIBRARIES = ("numpy", "math", "cmath", "operator", "builtins", "kiln")


def why_not_carried(bases, assigned, read, callees):
    """Why the loop's own code may not be all that sees the attributes it assigns (None: it
    is, and names carry them). bases: the objects; assigned, read: the attributes the loop
    assigns and those it only reads, for each; callees: the values of the names its calls
    start from."""
    if len({id(base) for base in bases}) != len(bases):
        return "one object is named twice (each name would carry its own copy)"
    for base, assigned_names, read_names in zip(bases, assigned, read):
        if not _plain_object(base):
            return f"an assigned attribute's {type(base).__name__} object sets or gets its own way"
        for attribute in assigned_names:
            if not _plain_slot(base, attribute) or not _held(base, attribute):
                return f"`.{attribute}` is computed or not there as the loop starts"
        for attribute in read_names:
            if not _plain_slot(base, attribute) or _reaches(getattr(base, attribute, None),
                                                            bases):
                return (f"the loop reads `.{attribute}`, which is computed or holds the object "
                        "whose attributes it assigns")
    for callee in callees:
        if not _cannot_reach(callee, bases):
            name = getattr(callee, "__qualname__", type(callee).__name__)
            return f"it calls {name}, which may see the object whose attributes it assigns"
    return None


def _plain_object(value):
    kind = type(value)
    return (not isinstance(value, (type, types.ModuleType, TracedArray, np.ndarray))
            and kind.__setattr__ is object.__setattr__
            and kind.__getattribute__ is object.__getattribute__
            and kind.__delattr__ is object.__delattr__
            and getattr(kind, "__getattr__", None) is None)


def _plain_slot(value, attribute):
    """An attribute no descriptor of the class computes (a __slots__ slot's is plain)."""
    on_class = getattr(type(value), attribute, None)
    if isinstance(on_class, types.MemberDescriptorType):
        return True  # a __slots__ slot
    return not (hasattr(on_class, "__get__") or hasattr(on_class, "__set__"))


def _held(value, attribute):
    try:
        getattr(value, attribute)
    except AttributeError:
        return False
    return True


def _reaches(value, bases):
    """Whether `value` (an attribute the loop reads: a number, an array, a configuration
    object) holds one of the objects, or functions or objects that do."""
    if value is None or isinstance(value, (numbers.Number, np.generic, np.ndarray, TracedArray,
                                           str, bytes)):
        return False
    return any(item is base for item in reachable([value]) for base in bases)


def _cannot_reach(callee, bases):
    """Whether a callee cannot reach the objects: NumPy's, math's and Python's built-in
    functions and types, their modules, ufuncs, arrays and numbers (whose methods are called),
    and the user's functions whose globals and closures (and theirs) do not hold them."""
    if isinstance(callee, (numbers.Number, np.generic, np.ndarray, TracedArray, np.ufunc)):
        return True
    if isinstance(callee, types.ModuleType):
        return callee.__name__.split(".")[0] in _LIBRARIES
    if isinstance(callee, types.BuiltinFunctionType) or isinstance(callee, type) and getattr(
            builtins, callee.__name__, None) is callee:
        return (getattr(callee, "__module__", None) or "builtins").split(".")[0] in _LIBRARIES
    if _is_user_function(callee):
        return not any(value is base for value in reachable([callee]) for base in bases)
    module = getattr(callee, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "kiln") and not isinstance(callee, type)
