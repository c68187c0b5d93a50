"""Lists of traced arrays handed to NumPy where it takes one array: `np.mean([a, b], axis=0)`,
`np.max([x.max(), 1e-12])`, `np.linalg.norm([dx, dy], axis=0)`, `np.maximum.reduce(masks)`.

NumPy's dispatch looks at a function's array arguments, not inside a list, so it converted the
list itself: a graph break at each traced element. What NumPy makes of such a list is
np.asarray of it, the stack kiln's np.array makes (kiln._numpy_creation.array). kiln._loop_transform
rewrites the arguments that may be lists, in the traced function's calls of a (dotted) name, to
`listed(callee, argument)` below, which looks at the callee when the call runs (the function's
own object: no NumPy function is replaced, so `is` comparisons with them hold, and the call
stays in the user's frame; a helper the function calls is not rewritten):

- a NumPy function that dispatches (np.mean, np.linalg.norm, ...) gets such a list as a
  `Listed`, a list whose __array_function__ NumPy asks only where the function's dispatcher
  names that list as an array argument: there it becomes the stack and the call goes on as on
  an array. Where the dispatcher names the list's items instead (np.concatenate, np.stack,
  np.select), they are traced arrays and the function sees a list, as before;
- a ufunc, or its reduce/accumulate/reduceat/outer, gets the stack (not `at`, whose key is
  an index);
- any other callee gets the list itself.
"""
import functools
import inspect

import numpy as np

from . import _numpy_creation
from ._tracer import context_of, has_tracer


def _stacked(value):
    return _numpy_creation.array(context_of([value]), list(value)) if isinstance(
        value, (Listed, ListedTuple)) else value


def _array_function(self, func, types, args, kwargs):
    return func(*(_stacked(a) for a in args), **{k: _stacked(v) for k, v in kwargs.items()})


class Listed(list):
    """A list of the user's holding traced arrays, on its way into a NumPy function."""
    __array_function__ = _array_function


class ListedTuple(tuple):
    """A tuple of the user's holding traced arrays (a tuple still: NumPy tells them apart)."""
    __array_function__ = _array_function


def _listed(value):
    if type(value) not in (list, tuple) or not has_tracer(value):
        return value
    return Listed(value) if type(value) is list else ListedTuple(value)


# NumPy functions of sequences of arrays: their dispatchers name the items (traced arrays,
# dispatched as they are), and some test the sequence's exact type (NumPy 1.x's np.block).
_OF_SEQUENCES = {getattr(np, name) for name in (
    "block", "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack", "row_stack",
    "select", "piecewise", "einsum", "broadcast_arrays", "meshgrid", "ix_", "savez",
    "savez_compressed") if hasattr(np, name)}


_UFUNC_METHODS = ("__call__", "reduce", "accumulate", "reduceat", "outer")  # not `at`'s key
# The first positional place of each ufunc method's outputs (__call__'s is its nin).
_OUT_POSITIONS = {"reduce": 3, "accumulate": 3, "reduceat": 4, "outer": 2}


def listed(function, value, slot=None):
    """The argument `value` of a call of `function` in the traced function, as NumPy would take
    it: a list or tuple holding traced arrays is the stack for a ufunc or its methods, a Listed
    for a NumPy function that dispatches; any other value, or any other callee (the user's
    helper may append to the list), gets the value itself. `slot` is the argument's place (its
    position, its keyword, None where a *args before it hides it): an output's tuple
    (`np.add(a, 1, out=(a,))`) is never stacked, whose stack NumPy would have written instead."""
    if type(value) not in (list, tuple) or not has_tracer(value) or slot == "out":
        return value
    ufunc = function if isinstance(function, np.ufunc) else getattr(function, "__self__", None)
    if isinstance(ufunc, np.ufunc):
        name = "__call__" if ufunc is function else getattr(function, "__name__", None)
        first_out = ufunc.nin if name == "__call__" else _OUT_POSITIONS.get(name)
        output = isinstance(slot, int) and first_out is not None and slot >= first_out
        return _stacked(Listed(value)) if name in _UFUNC_METHODS and not output else value
    if hasattr(function, "_implementation") and function not in _OF_SEQUENCES:
        return value if slot is not None and slot == _out_position(function) else _listed(value)
    return value


@functools.cache
def _out_position(function):
    """The position of the NumPy function's `out` parameter, or None."""
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("out") if "out" in names else None
