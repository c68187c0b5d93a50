"""Implementations of the NumPy functions of _numpy_api.FUNCTIONS (manipulation, linear
algebra; reductions in _numpy_reductions, joining in _numpy_joining), and the helpers the other tables share. Each takes the TraceContext first, then NumPy's arguments."""
import math

import numpy as np

from . import _kiln, _masked_selections, _memory_layout
from ._tracer import (AxisError, TracedArray, _UFuncOutputCastingError, backend, cast,
                      check_fits, graph_break, materialize_all, normalize_axes,
                      normalize_axis, shape_entries, to_tensor, traced, weak_type)
from ._tracer_types import check_axis_type, check_not_bool_axis, normalize_axis_tuple

_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

_NO_VALUE = np._NoValue


def _k():
    return backend()


def _as_traced(context, value):
    return value if isinstance(value, TracedArray) else context.lift(np.asarray(value))


def axis_operand(context, a, axis):
    """NumPy's PyArray_CheckAxis (argmax, argmin, cumsum, cumprod, argsort, argpartition, take,
    compress): `a` as a traced array, seen as 1-d when it is 0-d and an axis is given, so axis 0
    and -1 of a 0-d array are accepted (np.cumsum(np.array(5.), axis=0) is array([5.]))."""
    check_not_bool_axis(axis)
    x = _as_traced(context, a)
    return ravel(context, x) if axis is not None and x.ndim == 0 else x


def _result(context, tensor, out=None, scalar=None, casting="unsafe", ufunc=None,
            broadcast=False):
    """`tensor` as the function's result: written into `out` where given, which NumPy's
    functions take of the result's shape only (a ufunc's, `broadcast`, of a shape it broadcasts
    to) and its dtype by `casting` (their reductions cast unsafely; a last step that is a ufunc,
    std's sqrt, by its rule: pass the ufunc for NumPy's error class), else a new traced array.
    kiln broadcast and cast into any out=, a wrong answer where NumPy raises."""
    if out is not None:
        _check_out(tensor, out, casting, ufunc, broadcast)
        out._assign(tensor)
        return out
    value = traced(context, tensor)
    value._scalar = len(tensor.shape) == 0 if scalar is None else scalar
    return value


def _check_out(tensor, out, casting="unsafe", ufunc=None, broadcast=False):
    """NumPy's errors for an out= that cannot take `tensor` (_result's), before any write."""
    if not isinstance(out, TracedArray):
        raise TypeError("kiln: out= must be a traced array inside a compiled function")
    if tuple(out.shape) != tuple(tensor.shape) and not (broadcast and tuple(out.shape) == (
            np.broadcast_shapes(tuple(out.shape), tuple(tensor.shape)))):
        raise ValueError(f"out= has shape {tuple(out.shape)}, the result "
                         f"{tuple(tensor.shape)} (NumPy does not broadcast it)")
    dtype = np.dtype(tensor.dtype)
    if not np.can_cast(dtype, out.dtype, casting):
        if ufunc is not None:
            raise _UFuncOutputCastingError(ufunc, casting, dtype, out.dtype, 0)
        raise TypeError(f"Cannot cast array data from {dtype!r} to {out.dtype!r} according "
                        f"to the rule {casting!r}")


def _check_casting(values, dtype, out, casting):
    """NumPy's TypeError where an input does not cast to the result's dtype (dtype=, else
    out's) by `casting`: kiln cast it regardless (floats truncated into an int32 out)."""
    target = dtype if out is None or not isinstance(out, TracedArray) else out.dtype
    for v in values:
        if not np.can_cast(v.dtype, target, casting):
            raise TypeError(f"Cannot cast array data from {v.dtype!r} to {np.dtype(target)!r} "
                            f"according to the rule {casting!r}")


# ---- manipulation ----

def _view(x, tensor, forward, backward, strides=None, maybe_copy=False):
    return x._make_view(tensor, forward, backward, strides, maybe_copy)


def _read_only(root, value):
    raise ValueError("assignment destination is read-only")


def read_only_view(x, forward, strides=None):
    """forward(x): a view that follows later writes to x and refuses writes, like NumPy's
    read-only views (np.diagonal, np.broadcast_to)."""
    view = x._make_view(forward(x.tensor), forward, _read_only, strides)
    view._scalar = False
    view._read_only = True  # its views too, and its flags say so
    return view


def _resolve_shape(shape, size):
    shape = shape_entries(shape)
    # NumPy takes any negative entry as the one unknown dimension (-1 by convention).
    unknown = [axis for axis, extent in enumerate(shape) if extent < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if unknown:
        known = math.prod(s for s in shape if s >= 0)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[unknown[0]] = size // known
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return shape


def reshape(context, a, shape=None, order="C", *, newshape=None, copy=None, ravel=False):
    """A view where NumPy's is one, a copy where NumPy copies (a transpose's ravel: its
    writes reached the array), either where the layout is not known (kiln._memory_layout)."""
    x = _as_traced(context, a)
    target = _resolve_shape(shape if shape is not None else newshape, x.size)
    if _index_order(x, order, "reshape") == "F":
        # The first index varies fastest: reversed axes reshaped in C order, reversed back
        # (views where NumPy's F-order reshape is one: of a Fortran-ordered array)
        flat = reshape(context, transpose(context, x), target[::-1], copy=copy, ravel=ravel)
        return transpose(context, flat)
    if copy:
        return _result(context, _k().reshape(x.tensor, target), scalar=False)
    kind, strides = _memory_layout.reshaped(x, target, ravel)
    if kind == "copy":
        if copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        if ravel:  # a new array of its own (x.T.ravel().base is None)
            return _result(context, _k().reshape(x.tensor, target), scalar=False)
        # NumPy copies x in C order and views the copy (x.T.reshape(-1).base is that copy)
        return reshape_view(_result(context, x.tensor, scalar=False), target,
                            _memory_layout.c_strides(target))
    return reshape_view(x, target, strides, maybe_copy=kind == "either")


def reshape_view(x, target, strides=None, maybe_copy=False):
    """x's elements in C order under the shape `target`, a view of x (x.flat's, NumPy's
    reshape where it views)."""
    k, original = _k(), list(x.shape)
    return _view(x, k.reshape(x.tensor, target), lambda root: k.reshape(root, target),
                 lambda root, value: k.reshape(value, original), strides, maybe_copy)


def _index_order(x, order, op):
    """"C" or "F" for NumPy's order argument of reshape/ravel/flatten, or for ravel's "K" the
    axes in the order NumPy reads them. "A" and "K" read the array in its memory layout
    (kiln._memory_layout): "A" is "F" for a Fortran-contiguous array that is not
    C-contiguous, "K" the axes by decreasing stride. Where kiln does not know the layout, or
    "K" meets negative or equal strides (NumPy's copy then orders them its own way), the call
    runs as NumPy (a graph break)."""
    order = "C" if order is None else order
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got '{order}')")
    if order == "K" and op == "reshape":
        raise ValueError("order 'K' is not permitted for reshaping")
    if order in ("A", "K"):
        if x.ndim <= 1:
            return "C"
        shape, strides = tuple(x.shape), _memory_layout.strides_of(x)
        if strides is None:
            graph_break(f"{op}(order='{order}') of an array whose memory layout kiln does not "
                        "know")
        if _memory_layout.c_contiguous(shape, strides):
            return "C"
        if _memory_layout.f_contiguous(shape, strides) or order == "A":
            return "F" if _memory_layout.f_contiguous(shape, strides) else "C"
        spans = [s for n, s in zip(shape, strides) if n > 1]
        if any(s <= 0 for s in spans) or len(set(spans)) < len(spans):
            graph_break(f"{op}(order='K') of an array with negative or repeated strides")
        return sorted(range(len(shape)), key=lambda d: -strides[d])
    return order


def ravel(context, a, order="C"):
    """A view of a C-contiguous array (Fortran-ordered for order="F", and in memory order for
    order="K" where that is contiguous), else a copy."""
    x = _as_traced(context, a)
    order = _index_order(x, order, "ravel")
    if isinstance(order, list):  # "K": the axes by decreasing stride, read in C order
        return reshape(context, transpose(context, x, order), -1, ravel=True)
    return reshape(context, x, -1, order=order, ravel=True)


def transpose(context, a, axes=None):
    x = _as_traced(context, a)
    k = _k()
    ndim = x.ndim
    permutation = (list(range(ndim))[::-1] if axes is None
                   else [normalize_axis(d, ndim, "transpose") for d in axes])
    if sorted(permutation) != list(range(ndim)):
        raise ValueError("axes don't match array")
    inverse = list(np.argsort(permutation))
    return _view(x, k.transpose(x.tensor, permutation),
                 lambda root: k.transpose(root, permutation),
                 lambda root, value: k.transpose(value, [int(d) for d in inverse]),
                 _memory_layout.permuted(x, permutation))


def swapaxes(context, a, axis1, axis2):
    x = _as_traced(context, a)
    permutation = list(range(x.ndim))
    first, second = (normalize_axis(d, x.ndim, "swapaxes") for d in (axis1, axis2))
    permutation[first], permutation[second] = permutation[second], permutation[first]
    return transpose(context, x, permutation)


def moveaxis(context, a, source, destination):
    x = _as_traced(context, a)
    sources = normalize_axis_tuple(source, x.ndim, "moveaxis", "source")
    destinations = normalize_axis_tuple(destination, x.ndim, "moveaxis", "destination")
    if len(sources) != len(destinations):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [d for d in range(x.ndim) if d not in sources]
    for dest, src in sorted(zip(destinations, sources)):
        order.insert(dest, src)
    return transpose(context, x, order)


def squeeze(context, a, axis=None):
    x = _as_traced(context, a)
    shape = x.shape
    check_axis_type(axis)
    axes = ([d for d, n in enumerate(shape) if n == 1] if axis is None
            else normalize_axes(axis, x.ndim, "squeeze"))
    for d in axes:
        if shape[d] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                             "one")
    return reshape(context, x, [n for d, n in enumerate(shape) if d not in axes])


def expand_dims(context, a, axis):
    x = _as_traced(context, a)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    positions = sorted(normalize_axis_tuple(axes, x.ndim + len(axes), "expand_dims"))
    shape = list(x.shape)
    for position in positions:
        shape.insert(position, 1)
    return reshape(context, x, shape)


def broadcast_to(context, array, shape, subok=False):
    x = _as_traced(context, array)
    shape = shape_entries(shape)
    np.broadcast_shapes(tuple(x.shape), tuple(shape))  # NumPy's error for incompatible shapes
    own = _memory_layout.strides_of(x)
    strides = None if own is None else tuple(  # a broadcast axis: stride 0
        0 for _ in range(len(shape) - x.ndim)) + tuple(
        s if n == m else 0 for s, n, m in zip(own, x.shape, shape[len(shape) - x.ndim:]))
    return read_only_view(x, lambda root: _k().broadcast_to(root, shape), strides)


def where(context, condition, x=_NO_VALUE, y=_NO_VALUE):
    if x is _NO_VALUE or y is _NO_VALUE:
        positions = _masked_selections.nonzero(context, condition) if (
            x is _NO_VALUE and y is _NO_VALUE) else None
        if positions is not None:  # np.where(c) in a loop body: np.nonzero(c)
            return positions
        return np.where(materialize_all(condition, "np.where(condition) has a data-dependent "
                                        "shape"))
    types = [weak_type(v) for v in (x, y)]
    # Python scalars by value: NumPy 1.x promotes by value (uint8 with -2 is int16).
    common = np.result_type(*[t if isinstance(t, np.dtype) else v for t, v in zip(types, (x, y))])
    tensor = _k().where(to_tensor(context, condition, np.bool_),
                        to_tensor(context, _wrapped(x, common), common),
                        to_tensor(context, _wrapped(y, common), common))
    return _result(context, tensor, scalar=False)


def _where_wraps_out_of_range():
    """NumPy 2.0-2.4's where wraps a Python int its integer type cannot hold (C's cast);
    2.5 raises OverflowError, as its ufuncs do."""
    try:
        return np.where(np.ones(1, bool), np.zeros(1, np.uint8), -1).dtype == np.uint8
    except OverflowError:
        return False


_WHERE_WRAPS = _where_wraps_out_of_range()


def _wrapped(value, dtype):
    """A Python int that `dtype` cannot hold, as the installed NumPy's where takes it."""
    if type(value) is int and dtype.kind in "iu" and not (
            np.iinfo(dtype).min <= value <= np.iinfo(dtype).max):
        if not _WHERE_WRAPS:
            check_fits(value, dtype, "np.where")
        return np.asarray(value).astype(dtype)
    return value


def _drops_out_of_range_bounds():
    """NumPy >= 2.1 ignores a Python int clip bound beyond an integer array's range."""
    try:
        return np.clip(np.zeros(1, np.uint8), -1, None).dtype == np.uint8
    except (OverflowError, TypeError):
        return False


_CLIP_DROPS_BOUNDS = _drops_out_of_range_bounds()
# NumPy 1.x ignores a 0-d NaN bound of a float array (NumPy 2's result is NaN): kiln gave NaN.
with np.errstate(invalid="ignore"):
    _CLIP_IGNORES_NAN_SCALARS = bool(np.clip(np.ones(1), np.nan, None)[0] == 1)


def _without_nan(bound, fill):
    """A 0-d float bound, NaN ignored (None, or `fill` in the graph where it is traced)."""
    dtype = bound.dtype if isinstance(bound, TracedArray) else np.asarray(bound).dtype
    if bound is None or np.ndim(bound) != 0 or dtype.kind != "f":
        return bound
    if isinstance(bound, TracedArray):
        return np.where(np.isnan(bound), fill, bound)
    return None if np.isnan(bound) else bound


# The ufunc np.clip calls, which NumPy's casting error names (np.clip itself is a function)
_CLIP_UFUNC = (np._core if hasattr(np, "_core") else np.core).umath.clip


def clip(context, a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=_NO_VALUE,
         max=_NO_VALUE, **kwargs):
    low = a_min if a_min is not _NO_VALUE else (None if min is _NO_VALUE else min)
    high = a_max if a_max is not _NO_VALUE else (None if max is _NO_VALUE else max)
    dtype = a.dtype if isinstance(a, TracedArray) else np.asarray(a).dtype
    if _CLIP_DROPS_BOUNDS and dtype.kind in "iu":
        info = np.iinfo(dtype)
        low = None if type(low) is int and low <= info.min else low
        high = None if type(high) is int and high >= info.max else high
    if _CLIP_IGNORES_NAN_SCALARS and dtype.kind == "f":
        low, high = _without_nan(low, -np.inf), _without_nan(high, np.inf)
    result = a if low is not None or high is not None else np.positive(a)  # a copy
    if low is not None:
        result = np.maximum(result, low)
    if high is not None:
        result = np.minimum(result, high)
    if out is not None:
        # the ufunc's rule for out's dtype (NumPy 1.x cast unsafely, with a DeprecationWarning)
        return _result(context, _as_traced(context, result).tensor, out,
                       casting=kwargs.get("casting", "same_kind" if _NUMPY2 else "unsafe"),
                       ufunc=_CLIP_UFUNC, broadcast=True)
    return result if isinstance(result, TracedArray) else _as_traced(context, result)


def astype(context, x, dtype, /, *, copy=True, device=None):
    return _as_traced(context, x).astype(dtype)


def copy(context, a, order="K", subok=False):
    x = _as_traced(context, a)
    result = traced(context, x.tensor)
    result._strides = _memory_layout.ordered(result, order, x)
    return result


def flip(context, m, axis=None):
    """A view, as NumPy's (writes through it reach m): flipping is its own inverse."""
    x = _as_traced(context, m)
    axes = normalize_axes(axis, x.ndim, "flip")
    if not axes:
        return traced(context, x.tensor)
    k = _k()
    strides, offset = _memory_layout.flipped(x, axes)
    result = x._make_view(k.flip(x.tensor, axes), lambda root: k.flip(root, axes),
                          lambda root, value: k.flip(value, axes), strides, offset=offset)
    result._scalar = False
    return result


def rollaxis(context, a, axis, start=0):
    x = _as_traced(context, a)
    axis = normalize_axis(axis, x.ndim, "rollaxis")
    start = int(start) + (x.ndim if int(start) < 0 else 0)
    if not 0 <= start < x.ndim + 1:
        raise AxisError(f"start arg requires {-x.ndim - 1} <= start < {x.ndim + 1}")
    if axis < start:
        start -= 1
    return moveaxis(context, x, axis, start) if axis != start else x[...]


def matrix_transpose(context, x):
    value = _as_traced(context, x)
    if value.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional, but it is "
                         f"{value.ndim}")
    return swapaxes(context, value, -1, -2)


def unstack(context, x, *, axis=0):
    value = _as_traced(context, x)
    axis = normalize_axis(axis, value.ndim, "unstack")
    return tuple(moveaxis(context, value, axis, 0)[i] for i in range(value.shape[axis]))


def _triangle(lower):
    def triangle(context, m, k=0):
        x = _as_traced(context, m)
        if x.ndim == 0:
            raise TypeError("tri() missing 1 required positional argument: 'N'")  # NumPy's
        # NumPy's tri(*m.shape[-2:]): a 1-d m is the rows of a square (kiln raised ValueError)
        rows, columns = x.shape[-2:] if x.ndim >= 2 else (x.shape[0], x.shape[0])
        kiln = _k()
        row = kiln.reshape(kiln.arange(x.tensor, rows, "int64"), [rows, 1])
        column = kiln.reshape(kiln.arange(x.tensor, columns, "int64"), [1, columns])
        offset = kiln.subtract(column, row)
        keep = kiln.less_equal(offset, float(k)) if lower else kiln.greater_equal(offset, float(k))
        zero = context.constant(0, x.dtype)
        return _result(context, kiln.where(keep, x.tensor, zero), scalar=False)
    return triangle


# ---- linear algebra ----

def product_dtype(dtype):
    """The dtype kiln's matmul kernels compute a product of `dtype` in: they take no float16
    (NumPy's float16 matmul accumulates in float32 too) and no bool (an integer product, then
    nonzero, is NumPy's or-of-ands)."""
    return {"float16": np.dtype(np.float32), "bool": np.dtype(np.int64)}.get(
        np.dtype(dtype).name, np.dtype(dtype))


def _check_dot_out(out, dtype):
    """np.dot writes only an out= of the result's dtype (it casts none) that is C-contiguous;
    of another layout (out[:, ::2]) NumPy's ValueError (kiln wrote it)."""
    strides = _memory_layout.strides_of(out)
    if strides is None:
        graph_break("np.dot with out= of a layout kiln does not know (NumPy refuses one that is "
                    "not C-contiguous)")
    if out.dtype != dtype or not _memory_layout.c_contiguous(out.shape, strides):
        raise ValueError("output array is not acceptable (must have the right datatype, "
                         "number of dimensions, and be a C-Array)")


def _product(name):
    def product(context, a, b, out=None):
        x, y = _as_traced(context, a), _as_traced(context, b)
        common = np.result_type(x.dtype, y.dtype)
        if x.ndim == 0 or y.ndim == 0:
            return np.multiply(x, y)
        compute = product_dtype(common)
        tensor = getattr(_k(), name)(cast(x.tensor, compute), cast(y.tensor, compute))
        if name == "dot" and out is not None:
            _check_dot_out(out, common)
        return _result(context, cast(tensor, common), out)
    return product


def _part(context, a, take):
    """np.real / np.imag: `a.real` in NumPy, so a 0-d array's part is a 0-d array and only a
    NumPy scalar's is a scalar; the real part of a real array is the array itself."""
    value = _as_traced(context, a)
    k = _k()
    if take is k.real and value.dtype.kind != "c":
        return value
    if value.dtype.kind != "c":   # NumPy's imaginary part of a real array: read-only zeros
        view = read_only_view(value, k.imag)
    elif take is k.real:   # a complex array's parts are views: z.real[...] = 0 writes z
        view = _view(value, take(value.tensor), take,
                     lambda root, new: k.complex(cast(new, _part_dtype(root)), k.imag(root)))
    else:
        view = _view(value, take(value.tensor), take,
                     lambda root, new: k.complex(k.real(root), cast(new, _part_dtype(root))))
    view._scalar = value._scalar
    return view


def _part_dtype(complex_tensor):
    return np.finfo(np.dtype(complex_tensor.dtype)).dtype


def norm(context, x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm through kiln's C++ decomposition (decompose::norm); the spectral matrix
    norms (2, -2, 'nuc') need singular values and run eagerly."""
    value = _as_traced(context, x)
    if value.dtype.kind == "c":  # every norm kiln computes depends on |x| only
        value = _result(context, _k().abs(value.tensor))
    # No axis: with no ord the 2-norm of the flattened array (empty axes); with an ord a vector
    # or matrix norm over all axes (NumPy's ord=2 on a matrix is its spectral norm).
    if axis is not None and not isinstance(axis, tuple):  # NumPy's int(axis): a list refused
        try:
            axis = int(axis)
        except Exception:  # noqa: BLE001 - NumPy's TypeError for any failure
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    axes = normalize_axes(axis, value.ndim, "norm") if axis is not None or ord is not None else []
    if ord is None:
        order = "fro" if len(axes) == 2 else "2"
    elif isinstance(ord, str):
        order = ord
    else:
        order = repr(float(ord))
    try:
        return _result(context, _k().norm(value.tensor, order, axes, keepdims))
    except _kiln.Unsupported:
        return np.linalg.norm(materialize_all(value, f"linalg.norm with ord={ord!r}"), ord, axis,
                              keepdims)


def angle(context, z, deg=False):
    result = _result(context, _k().angle(_as_traced(context, z).tensor))
    return result * (180 / np.pi) if deg else result


def _result_type(context, *arrays_and_dtypes):
    """np.result_type of traced arrays: of their dtypes, which the trace knows (a traced Python
    number as a Python number of its type, weak as NEP 50 has it). It asked for the values, a
    graph break (`y = np.zeros(n, dtype=np.result_type(data, x))` before a CSR product's loop
    ran the whole function eagerly)."""
    python_numbers = {int: 0, float: 0.0, complex: 0j}
    return np.result_type(*(python_numbers.get(weak_type(a), weak_type(a))
                            if isinstance(a, TracedArray) else a for a in arrays_and_dtypes))


def _shape_of(context, a):
    return _as_traced(context, a).shape


FUNCTIONS = {
    np.reshape: reshape, np.ravel: ravel, np.transpose: transpose, np.swapaxes: swapaxes,
    np.moveaxis: moveaxis, np.squeeze: squeeze, np.expand_dims: expand_dims,
    np.broadcast_to: broadcast_to, np.where: where, np.clip: clip,
    np.copy: copy, np.flip: flip, np.rollaxis: rollaxis, np.triu: _triangle(False),
    np.tril: _triangle(True),
    np.dot: _product("dot"), np.inner: _product("inner"),
    np.outer: _product("outer"),
    np.linalg.norm: norm, np.shape: _shape_of, np.result_type: _result_type,
    np.ndim: lambda context, a: _as_traced(context, a).ndim,
    np.size: lambda context, a, axis=None: _as_traced(context, a).size,
    np.real: lambda context, a: _part(context, a, _k().real),
    np.imag: lambda context, a: _part(context, a, _k().imag),
    np.angle: angle, np.iscomplexobj: lambda context, a: _as_traced(context, a).dtype.kind == "c",
    np.isrealobj: lambda context, a: _as_traced(context, a).dtype.kind != "c",
}
if hasattr(np, "astype"):
    FUNCTIONS[np.astype] = astype
if hasattr(np, "matrix_transpose"):  # NumPy 2
    FUNCTIONS[np.matrix_transpose] = matrix_transpose
if hasattr(np, "permute_dims"):
    FUNCTIONS[np.permute_dims] = transpose
if hasattr(np, "unstack"):
    FUNCTIONS[np.unstack] = unstack
