"""Tracer implementations of NumPy's numeric helper functions (isclose, nan_to_num,
trapezoid, polyval, gradient, ...; cov, corrcoef, cross and convolve are _numpy_products.py's,
searches and histogram _numpy_binning.py's). Each takes the TraceContext first, then NumPy's
arguments, and is built from the tracer's own operations; arguments that decide shapes must be
concrete (a traced one is a graph break).

Most follow NumPy's own Python code (numpy/_core/numeric.py, lib/_function_base_impl.py) run
on tracers. What cannot be traced exactly (data-dependent errors, complex values here and there)
runs eagerly: NumPy's result, a graph break."""
import operator
import warnings

import numpy as np

from ._numpy_functions import _as_traced, _k, _result
from ._tracer import TracedArray, call_eagerly, cast, graph_break, has_tracer
from ._tracer_types import normalize_axis_tuple

_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _isclose_checks_tolerances():
    """NumPy >= 2.1 warns (np.errstate 'invalid') about a non-finite rtol or atol."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(invalid="warn"):
        warnings.simplefilter("always")
        np.isclose(0.0, 0.0, atol=np.inf)
    return bool(caught)


_CHECKS_TOLERANCES = _isclose_checks_tolerances()


# ---- helpers ----

def _eager(function, reason, *args, **kwargs):
    """A graph break: NumPy's `function` on the tracers' values (its result, its errors), and
    what it writes into a traced argument (out=) written back into it."""
    return call_eagerly(function, args, kwargs, reason)


def _array(value):
    """np.asarray that keeps tracers (concrete values stay concrete ndarrays)."""
    return value if isinstance(value, TracedArray) else np.asarray(value)


def _stand_in(value):
    """What np.result_type should see for `value`: a tracer as a zero array of its dtype and
    rank (NumPy 1.x promotes 0-d arrays by value), anything else as itself."""
    if isinstance(value, TracedArray):
        return np.zeros((1,) * value.ndim, value.dtype)
    return value


def _operand(context, value):
    """A concrete NumPy scalar typed for the tracer as the installed NumPy types it: by its dtype
    on NumPy 2 (a traced 0-d array: the tracer takes np.float64, a float subclass, for a weak
    Python float); NumPy 1.x promotes scalars by value, which a weak Python number approximates
    (a float32 scalar stays one: it makes integers float32)."""
    if isinstance(value, np.generic):
        if _NUMPY2:
            return context.lift(np.asarray(value))
        narrow = value.dtype.kind in "fc" and value.dtype not in (np.float64, np.complex128)
        return value if narrow else value.item()
    return value


def _scalar_result(context, value):
    """`value[()]`: a NumPy scalar when 0-d."""
    if isinstance(value, TracedArray):
        return _result(context, value.tensor)
    return np.asarray(value)[()]


def _known(context, value):
    """The concrete value of `value`: itself when not traced, the value the trace knows for a
    tracer made by a creation function from static arguments; else None."""
    if not isinstance(value, TracedArray):
        return value
    known = context.known.get(value._tensor_id()) if value._selection is None else None
    return None if known is None else np.asarray(known())


def _take(context, values, index):
    """values[index] for a 1-d tracer and int indices already within bounds."""
    tensor = _k().take(values.tensor, cast(index.tensor, np.int64), 0, check_bounds=False)
    return _result(context, tensor, scalar=False)


def _check_vector(value):
    if value.ndim != 1:
        raise ValueError("object too deep for desired array" if value.ndim > 1 else
                         "object of too small depth for desired array")


# ---- comparisons ----

def isclose(context, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not _NUMPY2 and any(_array(v).dtype.kind == "c" for v in (a, b)):
        # NumPy 1.x multiplies by one where some value is not finite: complex infinities
        # become NaN there.
        return _eager(np.isclose, "np.isclose of complex values on NumPy 1.x", a, b, rtol,
                      atol, equal_nan)
    if _NUMPY2:  # Python numbers stay weak
        x, y, atol, rtol = (v if isinstance(v, (int, float, complex)) else _array(v)
                            for v in (a, b, atol, rtol))
    else:
        x, y = _array(a), _array(b)
    dtype = getattr(y, "dtype", None)
    if dtype is not None and dtype.kind != "m":  # inexact y: no abs(MIN_INT)
        dtype = np.result_type(_stand_in(y), 1.0)
        y = y.astype(dtype) if isinstance(y, TracedArray) else np.asarray(y, dtype)
    elif isinstance(y, int):
        y = float(y)
    if _CHECKS_TOLERANCES and not has_tracer([atol, rtol]):
        # (traced tolerances are not checked: this is a warning unless np.errstate says raise)
        if not (np.all(np.isfinite(atol)) and np.all(np.isfinite(rtol))):
            message = f"One of rtol or atol is not valid, atol: {atol}, rtol: {rtol}"
            setting = np.geterr()["invalid"]
            if setting == "warn":
                warnings.warn(message, RuntimeWarning, stacklevel=4)
            elif setting == "raise":
                raise FloatingPointError(message)
            elif setting == "print":
                print(message)
    x, y, atol, rtol = (_operand(context, v) for v in (x, y, atol, rtol))
    result = np.less_equal(abs(x - y), atol + rtol * abs(y)) & np.isfinite(y) | (x == y)
    if equal_nan:
        result = result | (np.isnan(x) & np.isnan(y))
    return _scalar_result(context, result)


def _truth(context, value):
    """NumPy's Python bool of a traced 0-d bool (array_equal, array_equiv, allclose). Where a
    captured loop reads it (its body, a while loop's test) it stays traced, as bool(x) there
    does (kiln._loop_expressions): `if np.array_equal(new, g): break` is the loop's flag, where
    NumPy's own bool() was a graph break that left the loop uncaptured. Elsewhere Python's
    bool() of it: a graph break, as in NumPy."""
    capture = context.loop_capture
    if capture is not None and capture.keeps_truths_traced():
        value._weak = bool  # Python's bool (True + True is 2), after the loop too
        return value
    return bool(value)


def allclose(context, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    known = [_known(context, v) for v in (a, b, rtol, atol)]
    if all(v is not None for v in known):  # static values: no graph break
        return np.allclose(*known, equal_nan=equal_nan)
    return _truth(context, np.all(isclose(context, a, b, rtol, atol, equal_nan)))


def _both_traced(context, a1, a2):
    """(a1, a2) as tracers, or None where NumPy's asarray refuses one (then not equal)."""
    try:
        values = [_array(v) for v in (a1, a2)]
    except Exception:  # noqa: BLE001 (NumPy's rule: what asarray refuses is not equal)
        return None
    return tuple(_as_traced(context, v) for v in values)


def array_equal(context, a1, a2, equal_nan=False):
    known = [_known(context, v) for v in (a1, a2)]
    if all(v is not None for v in known):
        return np.array_equal(*known, equal_nan=equal_nan)
    both = _both_traced(context, a1, a2)
    if both is None or both[0].shape != both[1].shape:
        return False  # known at the trace: shapes are static
    x, y = both
    if not equal_nan:
        return _truth(context, np.all(x == y))
    if a1 is a2:
        return True
    if not any(v.dtype.kind in "fc" for v in both):  # no NaN to hold
        return _truth(context, np.all(x == y))
    # NumPy's two tests (NaNs at the same places, the rest equal) as one truth value.
    x_nan, y_nan = np.isnan(x), np.isnan(y)
    return _truth(context, np.all(x_nan == y_nan) & np.all(x_nan | (x == y)))


def array_equiv(context, a1, a2):
    known = [_known(context, v) for v in (a1, a2)]
    if all(v is not None for v in known):
        return np.array_equiv(*known)
    both = _both_traced(context, a1, a2)
    if both is None:
        return False
    try:
        np.broadcast_shapes(both[0].shape, both[1].shape)
    except ValueError:
        return False  # known at the trace, as array_equal's shapes
    return _truth(context, np.all(both[0] == both[1]))


def _infinity_test(negative):
    def test(context, x, out=None):
        is_inf = np.isinf(x)
        try:
            sign = np.signbit(x) if negative else ~np.signbit(x)
        except TypeError as error:
            dtype = _array(x).dtype
            raise TypeError(f"This operation is not supported for {dtype} values because it "
                            "would be ambiguous.") from error
        if out is None:
            return np.logical_and(is_inf, sign)
        return np.logical_and(is_inf, sign, out=out)
    return test


def fix(context, x, out=None):
    # Older NumPy computes ceil, then floor where x >= 0: trunc's values and dtypes.
    return np.trunc(x, out=out)


# ---- nan_to_num ----

def _copyto_value(context, value, target):
    """`value` converted as np.copyto(target, value) converts it (same_kind casting, broadcast
    to target's shape), with NumPy's errors."""
    if isinstance(value, TracedArray):
        np.copyto(np.empty((), target.dtype), np.zeros((), value.dtype), casting="same_kind")
        np.broadcast_to(np.empty(value.shape, bool), target.shape)
        return value.astype(target.dtype)
    converted = np.empty(np.shape(value), target.dtype)
    np.copyto(converted, value, casting="same_kind")
    np.broadcast_to(converted, target.shape)
    return converted


def nan_to_num(context, x, copy=True, nan=0.0, posinf=None, neginf=None):
    value = _as_traced(context, x)
    in_place = not copy and isinstance(x, TracedArray)
    if value.dtype.kind not in "fc":
        result = value if in_place else _result(context, value.tensor, scalar=False)
        return result[()] if result.ndim == 0 else result
    k = _k()
    parts = [value] if value.dtype.kind == "f" else [
        _result(context, k.real(value.tensor), scalar=False),
        _result(context, k.imag(value.tensor), scalar=False)]
    info = np.finfo(parts[0].dtype)
    fills = (nan, info.max if posinf is None else posinf, info.min if neginf is None else neginf)
    replaced = []
    for part in parts:
        masks = (np.isnan(part), np.isinf(part) & ~np.signbit(part),
                 np.isinf(part) & np.signbit(part))
        for mask, fill in zip(masks, fills):
            part = np.where(mask, _copyto_value(context, fill, part), part)
        replaced.append(part.tensor)
    tensor = replaced[0] if len(replaced) == 1 else k.complex(*replaced)
    result = _result(context, tensor, out=x if in_place else None, scalar=False)
    return result[()] if result.ndim == 0 else result


# ---- polynomials, differences, integrals ----

def polyval(context, p, x):
    if isinstance(x, np.poly1d):
        return _eager(np.polyval, "np.polyval at a poly1d (polynomial arithmetic)", p, x)
    coefficients, x = _array(p), _array(x)
    y = np.zeros_like(x)
    for coefficient in coefficients:  # Horner's scheme, as NumPy
        y = y * x + _operand(context, coefficient)
    return y


def ediff1d(context, ary, to_end=None, to_begin=None):
    a = np.ravel(_as_traced(context, ary))
    if to_begin is None and to_end is None:
        return a[1:] - a[:-1]
    ends = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            continue
        extra = _array(extra)
        if not np.can_cast(extra.dtype if isinstance(extra, TracedArray) else extra, a.dtype,
                           casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            "`same_kind` rule.")
        ends.append((name, np.ravel(_as_traced(context, extra)).astype(a.dtype)))
    differences = np.subtract(a[1:], a[:-1])
    parts = ([e for n, e in ends if n == "to_begin"] + [differences] +
             [e for n, e in ends if n == "to_end"])
    return np.concatenate(parts)


def trapezoid(context, y, x=None, dx=1.0, axis=-1):
    y = _as_traced(context, y)
    if x is None:
        d = _operand(context, dx)
    else:
        x = _as_traced(context, x)
        if x.ndim == 1:
            d = np.diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = np.reshape(d, shape)
        else:
            d = np.diff(x, axis=axis)
    later, earlier = [slice(None)] * y.ndim, [slice(None)] * y.ndim
    later[axis], earlier[axis] = slice(1, None), slice(None, -1)
    return np.sum(d * (y[tuple(later)] + y[tuple(earlier)]) / 2.0, axis)


def trapz(context, y, x=None, dx=1.0, axis=-1):
    if _NUMPY2:  # NumPy 2.0-2.3 keep trapz, deprecated
        warnings.warn("`trapz` is deprecated. Use `trapezoid` instead, or one of the numerical "
                      "integration functions in `scipy.integrate`.", DeprecationWarning,
                      stacklevel=4)
    return trapezoid(context, y, x, dx, axis)


def _cumulative(function, identity):
    def cumulative(context, x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if out is not None:
            graph_break(f"np.cumulative_{function.__name__[3:]} with out=")
        value = np.atleast_1d(_as_traced(context, x))
        if axis is None:
            if value.ndim >= 2:
                raise ValueError("For arrays which have more than one dimension ``axis`` "
                                 "argument is required.")
            axis = 0
        if isinstance(axis, tuple) and len(axis) != 1:  # ufunc.accumulate's rules
            raise ValueError("accumulate does not allow multiple axes")
        result = function(value, axis=operator.index(
            axis[0] if isinstance(axis, tuple) else axis), dtype=dtype)
        if not include_initial:
            return result
        shape = list(result.shape)
        shape[axis] = 1  # (a TypeError for a tuple, as NumPy's)
        first = _result(context, context.constant(identity, result.dtype, shape), scalar=False)
        return np.concatenate([first, result], axis=axis)
    return cumulative


def _gradient_axis(context, f, axis, spacing, edge_order, otype):
    """One output of np.gradient: NumPy's code, with out[...] = ... as traced updates."""
    n = f.ndim
    out = _result(context, context.constant(0, otype, f.shape), scalar=False)
    slice1, slice2, slice3, slice4 = ([slice(None)] * n for _ in range(4))
    uniform = np.ndim(spacing) == 0
    slice1[axis], slice2[axis], slice3[axis], slice4[axis] = (
        slice(1, -1), slice(None, -2), slice(1, -1), slice(2, None))
    if uniform:
        out[tuple(slice1)] = (f[tuple(slice4)] - f[tuple(slice2)]) / (2. * spacing)
    else:
        dx1, dx2 = spacing[0:-1], spacing[1:]
        a = -(dx2) / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        shape = tuple(-1 if d == axis else 1 for d in range(n))
        a, b, c = (np.reshape(v, shape) for v in (a, b, c))
        out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
    if edge_order == 1:
        slice1[axis], slice2[axis], slice3[axis] = 0, 1, 0
        dx_0 = spacing if uniform else spacing[0]
        out[tuple(slice1)] = (f[tuple(slice2)] - f[tuple(slice3)]) / dx_0
        slice1[axis], slice2[axis], slice3[axis] = -1, -1, -2
        dx_n = spacing if uniform else spacing[-1]
        out[tuple(slice1)] = (f[tuple(slice2)] - f[tuple(slice3)]) / dx_n
    else:
        slice1[axis], slice2[axis], slice3[axis], slice4[axis] = 0, 0, 1, 2
        if uniform:
            a, b, c = -1.5 / spacing, 2. / spacing, -0.5 / spacing
        else:
            dx1, dx2 = spacing[0], spacing[1]
            a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
            b = (dx1 + dx2) / (dx1 * dx2)
            c = - dx1 / (dx2 * (dx1 + dx2))
        out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
        slice1[axis], slice2[axis], slice3[axis], slice4[axis] = -1, -3, -2, -1
        if uniform:
            a, b, c = 0.5 / spacing, -2. / spacing, 1.5 / spacing
        else:
            dx1, dx2 = spacing[-2], spacing[-1]
            a = (dx2) / (dx1 * (dx1 + dx2))
            b = - (dx2 + dx1) / (dx1 * dx2)
            c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
        out[tuple(slice1)] = a * f[tuple(slice2)] + b * f[tuple(slice3)] + c * f[tuple(slice4)]
    return out


def gradient(context, f, *varargs, axis=None, edge_order=1):
    f = _as_traced(context, f)
    axes = tuple(range(f.ndim)) if axis is None else normalize_axis_tuple(axis, f.ndim, "gradient")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
        for i, distances in enumerate(spacings):
            distances = _array(distances)
            if distances.ndim == 0:
                continue
            if distances.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(distances) != f.shape[axes[i]]:
                raise ValueError("when 1d, distances must match the length of the "
                                 "corresponding dimension")
            if np.issubdtype(distances.dtype, np.integer):
                distances = distances.astype(np.float64)
            differences = np.diff(distances)
            first = differences[0]
            if isinstance(differences, TracedArray):
                # NumPy takes the scalar formulas for equal spacings: both, chosen at run time.
                spacings[i] = (differences, first, np.all(differences == first))
            else:
                spacings[i] = first if (differences == first).all() else differences
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if not np.issubdtype(otype, np.inexact):
        if np.issubdtype(otype, np.integer):
            f = f.astype(np.float64)
        otype = np.dtype(np.float64)
    outputs = []
    for axis, spacing in zip(axes, spacings):
        if f.shape[axis] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        if isinstance(spacing, tuple):
            differences, first, uniform = spacing
            out = np.where(uniform, _gradient_axis(context, f, axis, first, edge_order, otype),
                           _gradient_axis(context, f, axis, differences, edge_order, otype))
        else:
            out = _gradient_axis(context, f, axis, _operand(context, spacing), edge_order,
                                 otype)
        outputs.append(out)
    if len(axes) == 1:
        return outputs[0]
    return tuple(outputs) if _NUMPY2 else outputs


def unwrap(context, p, discont=None, axis=-1, *, period=2 * np.pi):
    p = _as_traced(context, p)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    later = [slice(None, None)] * p.ndim
    later[axis] = slice(1, None)
    later = tuple(later)
    dtype = np.result_type(_stand_in(dd), _stand_in(period))
    if np.issubdtype(dtype, np.integer):
        interval_high, remainder = divmod(period, 2)
        boundary_ambiguous = remainder == 0
    else:
        interval_high = period / 2
        boundary_ambiguous = True
    interval_low = -interval_high
    period, discont, interval_high, interval_low = (
        _operand(context, v) for v in (period, discont, interval_high, interval_low))
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if boundary_ambiguous:  # np.copyto(ddmod, interval_high, where=...)
        ddmod = np.where((ddmod == interval_low) & (dd > 0), interval_high,
                         ddmod).astype(ddmod.dtype)
    ph_correct = ddmod - dd
    ph_correct = np.where(abs(dd) < discont, 0, ph_correct).astype(ph_correct.dtype)
    up = p.astype(dtype)
    up[later] = p[later] + np.cumsum(ph_correct, axis)
    return up


FUNCTIONS = {
    np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal,
    np.array_equiv: array_equiv,
    np.isposinf: _infinity_test(False), np.isneginf: _infinity_test(True), np.fix: fix,
    np.nan_to_num: nan_to_num, np.polyval: polyval, np.ediff1d: ediff1d,
    np.gradient: gradient, np.unwrap: unwrap,
}
for _name, _implementation in [("trapezoid", trapezoid), ("trapz", trapz),
                               ("cumulative_sum", _cumulative(np.cumsum, 0)),
                               ("cumulative_prod", _cumulative(np.cumprod, 1))]:
    if hasattr(np, _name):
        FUNCTIONS[getattr(np, _name)] = _implementation
