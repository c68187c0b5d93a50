"""Which arguments kiln.compile traces: arrays it can read in place (else the call runs
eagerly), and values that hold arrays where no guard would see them change."""
import functools
import types

import numpy as np

from . import _pytree
from ._tracer import SUPPORTED_DTYPES  # (longdouble's kind and itemsize look like complex128's)


def is_unsupported_array(leaf):
    """An ndarray the C++ side cannot borrow: such a call runs eagerly."""
    if not isinstance(leaf, np.ndarray):
        return False
    if type(leaf) is not np.ndarray:
        return True
    return (leaf.dtype.name not in SUPPORTED_DTYPES or not leaf.dtype.isnative
            or not leaf.flags.aligned or any(stride % leaf.itemsize for stride in leaf.strides))


def holds_arrays(leaf):
    """A value that is not an array or a container kiln traces (a dataclass, a namedtuple, a
    SimpleNamespace) but holds ndarrays within two levels. Modules, classes and functions are
    read as globals are (their arrays are found by name), never this way."""
    if type(leaf) is np.ndarray or isinstance(leaf, (
            str, bytes, int, float, complex, types.ModuleType, type, types.FunctionType,
            types.BuiltinFunctionType, types.MethodType, functools.partial)):
        return False
    return _pytree.holds_array(leaf, lambda value: isinstance(value, np.ndarray), depth=2)
