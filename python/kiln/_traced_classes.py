"""np.ndarray and the builtin `type` as a traced function's names hold them: classes that answer
as NumPy's and Python's do (isinstance, attributes) and take a traced array where NumPy's
would need an ndarray: np.ndarray((n, m)) creates one as np.empty does, np.ndarray.sum(x) calls
x's method, type(x) is the class eager NumPy's value has. kiln._numpy_tracer puts them into
the function's rebuilt names; `substitutes()` also swaps names bound before the trace to
NumPy's creation functions (kiln._numpy_creation's wrappers)."""
import functools
import sys
import types

import numpy as np

from ._numpy_creation import SWAPPED, _current_context, zeros
from ._tracer import SUPPORTED_DTYPES, TracedArray, dtype_name


# ---- np.ndarray(shape, dtype): the class called as a creation function ----

class _NdarrayClass(type):
    """The metaclass of np.ndarray as the traced function sees it. `np.ndarray((n, m))` makes an
    array as np.empty does (npbench's vadv and nbody allocate so); a real ndarray there took
    the traced values stored into it as a graph break each (vadv: 42 breaks, 300x NumPy's time).
    isinstance, issubclass and the other attributes answer as np.ndarray's. The class itself
    cannot be swapped in the numpy namespace, as the creation functions are: NumPy and kiln
    test `type(x) is np.ndarray` while the trace runs."""

    def __call__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        context = _current_context()
        if (context is None or buffer is not None or strides is not None
                or dtype_name(np.dtype(dtype)) not in SUPPORTED_DTYPES):
            return np.ndarray(shape, dtype, buffer, offset, strides, order)
        context.at()
        return zeros(context, shape, dtype)

    def __instancecheck__(cls, instance):
        if isinstance(instance, TracedArray):  # as the user's code sees it (its __class__)
            return not instance._scalar
        return isinstance(instance, np.ndarray)

    def __subclasscheck__(cls, subclass):
        return subclass is cls or issubclass(subclass, np.ndarray)

    def __getattr__(cls, name):
        member = getattr(np.ndarray, name)
        if not callable(member) or isinstance(member, type):
            return member

        @functools.wraps(member)
        def unbound(*args, **kwargs):
            # np.ndarray.sum(x): the traced array's own method (NumPy's descriptor takes only
            # an ndarray)
            if args and isinstance(args[0], TracedArray):
                return getattr(args[0], name)(*args[1:], **kwargs)
            return member(*args, **kwargs)
        return unbound


class ndarray(metaclass=_NdarrayClass):
    """np.ndarray in the traced function's names (see _NdarrayClass)."""


class _Numpy(types.ModuleType):
    """The numpy module as the traced function's global `np` sees it when the function reads
    `np.ndarray`: numpy's own attributes, but the ndarray above."""

    def __getattr__(self, name):
        return getattr(np, name)


_NUMPY = _Numpy(np.__name__)
_NUMPY.ndarray = ndarray
# The global under which a traced function's names hold the np.ndarray its code sees (the one
# above where its `np` is _NUMPY): TracedArray.__class__ and type() below answer with it, so
# `x.__class__ is np.ndarray` and `type(x) is np.ndarray` hold as in NumPy.
NDARRAY_GLOBAL = "__kiln_ndarray__"


class _TypeClass(type):
    """The metaclass of the builtin `type` as the traced function sees it: type(x) of a traced
    array is the class eager NumPy's value has (x.__class__: np.ndarray as the function's names
    hold it, a NumPy scalar's type), where TracedArray took the branch NumPy does not take
    (`if type(x) is np.ndarray`). Otherwise it is type itself: isinstance(cls, type), the
    three-argument form, its attributes."""

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], TracedArray):
            return args[0].class_seen_by(sys._getframe(1).f_globals)
        return type(*args, **kwargs)

    def __instancecheck__(cls, instance):
        return isinstance(instance, type)

    def __subclasscheck__(cls, subclass):
        return subclass is cls or issubclass(subclass, type)

    def __getattr__(cls, name):
        return getattr(type, name)


class traced_type(metaclass=_TypeClass):
    """The builtin `type` in the traced function's names (see _TypeClass)."""


def substitutes():
    """{id(NumPy's function): its wrapper}: for names bound to NumPy's creation functions
    before the trace (`from numpy import zeros`, a function kept in a dict), which the numpy
    namespace's wrappers cannot reach; and np.ndarray, as a name and as numpy's attribute."""
    table = {id(originals[name]): (originals[name], wrapper)
             for _, wrappers, originals in SWAPPED for name, wrapper in wrappers.items()}
    table[id(np.ndarray)] = (np.ndarray, ndarray)
    table[id(np)] = (np, _NUMPY)
    return table
