"""NumPy's rules for a scalar stored into an integer array (x[i] = v, x[a:b] = v, x.fill(v)):
a Python float, a NumPy scalar through a basic index and ndarray.fill go through NumPy's own
int() with its range check (OverflowError; NaN ValueError); a NumPy scalar through an advanced
index is cast, unsafely. Concrete values NumPy itself stores; traced ones are checked when the
graph runs."""
import warnings

import numpy as np

from ._tracer import TracedArray, backend, user_location


def _k():
    return backend()


def _as_stored(value, dtype):
    """A scalar as NumPy stores it into an integer array: NumPy itself does it (its rules
    differ between Python floats, NumPy float scalars, signed and unsigned dtypes), raising
    where NumPy raises (NaN: ValueError; too big: OverflowError)."""
    slot = np.zeros(1, dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            slot[0] = value
    except OverflowError as error:
        raise OverflowError(f"{error} (in setitem at {user_location()})") from None
    return slot[0].item()


def _numpy_range_checks_stored_scalars():
    """NumPy 2 stores a NumPy scalar into a signed integer array only if it fits (int8 <-
    np.int64(300) is OverflowError); NumPy 1.x only refuses what int64 cannot hold, and wraps."""
    try:
        np.zeros(1, np.int8)[0] = np.int64(300)
        return False
    except OverflowError:
        return True


_STORES_CHECK_TARGET_RANGE = _numpy_range_checks_stored_scalars()


def _check_traced_scalar_stored(value, dtype):
    """NumPy stores a NumPy scalar (an element, a reduction: traced here) into a signed integer
    array through int(): NaN is its ValueError, a value out of range its OverflowError. Both
    are checks that raise when the graph runs; unsigned targets, which NumPy casts, have none."""
    source = value.dtype
    if dtype.kind != "i" or source.kind not in "iuf":
        return
    info = np.iinfo(dtype if _STORES_CHECK_TARGET_RANGE else np.int64)
    if source.kind != "f" and info.min <= np.iinfo(source).min <= np.iinfo(source).max <= info.max:
        return
    k = _k()
    if source.kind == "f":
        number = value.astype(np.float64)
        nothing = value._context.lift(np.zeros(0, np.int64))
        k.check_flag(np.isnan(number).tensor, nothing.tensor, "cannot convert float NaN to integer",
                     "", "setitem")
        value = np.trunc(number)  # int(), exact: the bounds below are powers of two
        outside = (value < float(info.min)) | (value >= float(info.max + 1))
    else:
        outside = value > info.max
        if source.kind == "i":
            outside = outside | (value < info.min)
    k.check_flag(outside.tensor, value.tensor, "Python integer ",
                 f" out of bounds for {dtype.name}", "setitem", error="OverflowError")


def stored_scalar(value, dtype, advanced):
    """`value` as NumPy stores a scalar into an array of integer `dtype`: a Python float (a
    traced one too: its value is needed) always, and a NumPy scalar through a basic index or
    ndarray.fill, by NumPy's own conversion (_as_stored: its errors; a traced one checked when
    the graph runs); a NumPy scalar through an `advanced` index (a mask, index arrays) NumPy
    casts as an array, unsafely, raising nothing (kiln's cast does so too)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return value
    if isinstance(value, TracedArray) and value._weak is float:
        value = float(value)  # NumPy's int() of a Python float, range-checked: needs its value
    python_float = isinstance(value, float) and not isinstance(value, np.floating)
    if python_float or isinstance(value, (np.floating, np.integer)) and not advanced:
        return _as_stored(value, dtype)
    if (isinstance(value, TracedArray) and value._scalar and value._weak is None
            and value.ndim == 0 and not advanced):
        _check_traced_scalar_stored(value, dtype)
    return value
