"""The dtypes and axes the NumPy tracer (kiln._tracer) accepts: which dtypes kiln traces, the
default float, NumPy's axis arguments normalised with NumPy's errors."""
import functools
import operator
import sys

import numpy as np

from ._graph_breaks import graph_break, user_location

AxisError = getattr(np, "exceptions", np).AxisError  # numpy.exceptions: NumPy >= 1.25
SUPPORTED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "complex64", "complex128"])


def default_float():
    """kiln.config.numpy_default_float (float64 unless the user says otherwise)."""
    package = sys.modules.get(__package__ or "kiln")
    name = getattr(getattr(package, "config", None), "numpy_default_float", None)
    return np.dtype(name or "float64")


def check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype_name(dtype) not in SUPPORTED_DTYPES:
        graph_break(f"dtype {dtype_name(dtype)} is not supported by kiln")
    if not dtype.isnative:
        # '>f4' is named float32: taken as the native one, its bytes (tobytes, view) and dtype
        # would be the host's order, not the big-endian file format asked for
        graph_break(f"dtype {dtype.str} is not in the machine's byte order")
    return dtype


@functools.lru_cache(maxsize=256)
def dtype_name(dtype):
    """dtype.name, which NumPy builds on every read (microseconds a traced op)."""
    return dtype.name


def shape_entries(shape):
    """NumPy's reading of a shape: an integer or a sequence of them, each taken by
    operator.index (a float is NumPy's TypeError; int() truncated np.full(2.5, 1) to 2
    elements)."""
    if isinstance(shape, (tuple, list)) or getattr(shape, "ndim", None) == 1:
        # an integer array too (np.zeros(shape_array)), as NumPy reads any sequence
        return [operator.index(n) for n in shape]
    try:
        return [operator.index(shape)]
    except TypeError:
        raise TypeError("expected a sequence of integers or a single integer, "
                        f"got '{shape!r}'") from None


def normalize_axis(axis, ndim, op_name="op"):
    axis = operator.index(axis)  # NumPy's TypeError for a float axis, never truncated
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim, f"kiln: {op_name} at {user_location()}")
    return axis + ndim if axis < 0 else axis


def normalize_axis_tuple(axis, ndim, op_name="op", argument=None):
    """NumPy's normalize_axis_tuple: an axis or a sequence of them as a tuple of non-negative
    axes in the order given; NumPy's ValueError for an axis given twice (as 0 and -ndim too),
    naming the `argument` as NumPy does."""
    axes = tuple(normalize_axis(a, ndim, op_name)
                 for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in `{argument}` argument" if argument else
                         "repeated axis")
    return axes


def check_axis_type(axis):
    """NumPy's C functions (ufunc reductions, mean/std/var, squeeze) take an axis as an integer
    or a tuple of them; a list is their TypeError (np.flip, np.median, ... take one)."""
    if isinstance(axis, list):
        raise TypeError("'list' object cannot be interpreted as an integer")
    check_not_bool_axis(axis)


def check_not_bool_axis(axis):
    """NumPy's C functions refuse a bool as an axis (or in a tuple of axes), which
    operator.index takes as 0 or 1 (np.sum(x, axis=True) is its TypeError; its Python
    functions, np.flip, np.roll, take it)."""
    if isinstance(axis, _BOOLS) or type(axis) is tuple and any(
            isinstance(a, _BOOLS) for a in axis):
        raise TypeError("an integer is required for the axis")


_BOOLS = (bool, np.bool_)  # (NumPy 1.x's operator.index takes np.True_ as 1 too)


def normalize_reduce_axes(axis, ndim, op_name="op"):
    """normalize_axes for NumPy's ufunc reductions (sum, prod, max, min, any, all and what is
    built on them): NumPy's reduce takes an integer axis 0 or -1 of a 0-d array, which reduces
    nothing (np.max(np.array(5.), axis=0) is 5.0); a tuple (0,) is out of bounds there too."""
    check_axis_type(axis)
    if ndim == 0 and axis is not None and not isinstance(axis, (tuple, list)) and (
            operator.index(axis) in (0, -1)):
        return []
    return normalize_axes(axis, ndim, op_name)


def normalize_axes(axis, ndim, op_name="op"):
    """NumPy's axis argument (None, int or tuple) as a sorted list of non-negative axes."""
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = [normalize_axis(a, ndim, op_name) for a in axis]
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis' (in {op_name})")
        return sorted(axes)
    return [normalize_axis(axis, ndim, op_name)]
