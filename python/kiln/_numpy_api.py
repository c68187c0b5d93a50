"""THE list of NumPy functions kiln's tracer supports, each mapped to its implementation.

UFUNCS maps a NumPy ufunc to f(context, operands, loop) -> tensor(s), where the operands are
_kiln.Tensors already cast to the loop dtypes NumPy itself resolved (loop = input dtypes then
output dtypes). FUNCTIONS maps a NumPy function to f(context, *args, **kwargs) -> result, called
from TracedArray.__array_function__ with NumPy's own arguments. The conformance test
(tests/python/test_numpy_conformance.py) is generated from these two tables and
_numpy_samples.py. Anything missing here is a graph break, never a wrong answer.
"""
import functools
import math
import operator
import warnings

import numpy as np

from . import (_affine_indices, _assumed_numbers, _clamped_bounds, _indexing, _kiln,
               _masked_selections, _memory_layout, _object_operands, _ufunc_loops, _ufunc_reduceat,
               _window_arg_reductions, _window_functions, _window_joins, _windows)
from ._loop_peeling import note_kind_reads
from ._numpy_creation import FUNCTIONS as _CREATION, array as _numpy_creation_array
from ._numpy_functions import FUNCTIONS as _CORE, _as_traced, product_dtype
from ._numpy_functions import _result
from ._numpy_joining import FUNCTIONS as _JOINING
from ._numpy_layout import FUNCTIONS as _LAYOUT
from ._numpy_linalg import FUNCTIONS as _LINALG
from ._numpy_manipulation import FUNCTIONS as _MANIPULATION
from ._numpy_memory import FUNCTIONS as _MEMORY
from ._numpy_binning import FUNCTIONS as _BINNING
from ._numpy_bits import FUNCTIONS as _BITS
from ._numpy_math import FUNCTIONS as _MATH
from ._numpy_moments import FUNCTIONS as _MOMENTS
from ._numpy_products import FUNCTIONS as _PRODUCTS
from ._numpy_reductions import FUNCTIONS as _REDUCTIONS, _UFUNC_REDUCTIONS
from ._numpy_einsum import FUNCTIONS as _EINSUM
from ._numpy_selection import FUNCTIONS as _SELECTION
from ._numpy_sorting import FUNCTIONS as _SORTING
from ._numpy_statistics import FUNCTIONS as _STATISTICS
from ._tracer import (TracedArray, _UFuncOutputCastingError, _has_mask, as_operand, backend,
                      call_eagerly, cast, context_of, default_float, to_tensor, traced, weak_type)


def _k():
    return backend()


# ---- ufuncs ----

def _direct(name):
    return lambda context, operands, loop: getattr(_k(), name)(*operands)


def _identity(context, operands, loop):
    return operands[0]


def _reciprocal(context, operands, loop):
    k, (x,) = _k(), operands
    if loop[0].kind in "fc":
        return k.reciprocal(x)
    # Integer reciprocal is C division 1 / x: 1 and -1 are themselves, the rest 0.
    result = k.where(k.equal(x, 1.0), x, context.constant(0, loop[0]))
    if loop[0].kind == "i":
        result = k.where(k.equal(x, -1.0), x, result)
    return result


def _divmod(context, operands, loop):
    return _k().floor_divide(*operands), _k().mod(*operands)


def _frexp(context, operands, loop):
    mantissa, exponent = _k().frexp(*operands)
    return mantissa, cast(exponent, loop[2])


def _ldexp(context, operands, loop):
    return _k().ldexp(*operands)


def _scale(factor):
    return lambda context, operands, loop: _k().multiply(operands[0], factor)


def _float_power(context, operands, loop):
    return _k().power(*operands)


def _widened(implementation):
    """A matmul-based ufunc computed in _numpy_functions.product_dtype (float16, bool)."""
    def widened(context, operands, loop):
        compute = product_dtype(loop[0])
        return implementation(context, [cast(o, compute) for o in operands], loop)
    return widened


def _power(context, operands, loop):
    # NumPy raises for negative integer exponents (checked at run time), unless nothing is
    # computed (an empty operand makes the result empty).
    if loop[1].kind == "i" and all(math.prod(o.shape) for o in operands):
        _k().check_nonnegative_exponent(operands[1])
    return _k().power(*operands)


def _matvec(context, operands, loop):
    k, (matrix, vector) = _k(), operands
    product = k.matmul(matrix, k.expand_dims(vector, -1))
    return k.squeeze(product, [len(product.shape) - 1])


def _vecmat(context, operands, loop):
    k, (vector, matrix) = _k(), operands
    product = k.matmul(k.expand_dims(vector, -2), matrix)
    return k.squeeze(product, [len(product.shape) - 2])


def _vecdot(context, operands, loop):
    k = _k()
    product = k.multiply(*operands)
    return k.sum(product, [len(product.shape) - 1])


def _table_functions():
    """{NumPy ufunc: implementation} for every elementwise op of kiln's op table whose public
    name is a NumPy ufunc: a new table entry reaches NumPy code with no edit here."""
    functions = {}
    for _, public, kind, *_ in _kiln.op_table():
        ufunc = getattr(np, public, None)
        if kind in ("unary", "binary") and isinstance(ufunc, np.ufunc):
            functions[ufunc] = _direct(public)
    return functions


# The op table's ufuncs, then NumPy's other spellings and the ufuncs that need more than one op.
UFUNCS = {
    **_table_functions(),
    np.matmul: _widened(_direct("matmul")), np.power: _power, np.fabs: _direct("abs"),
    np.rint: _direct("round"), np.square: _direct("square"), np.reciprocal: _reciprocal,
    np.positive: _identity, np.conjugate: _direct("conj"), np.float_power: _float_power,
    np.divmod: _divmod, np.frexp: _frexp, np.ldexp: _ldexp,
    np.fmod: _direct("fmod"), np.modf: _direct("modf"), np.logaddexp: _direct("logaddexp"),
    np.logaddexp2: _direct("logaddexp2"), np.heaviside: _direct("heaviside"),
    np.signbit: _direct("signbit"), np.gcd: _direct("gcd"), np.lcm: _direct("lcm"),
    np.deg2rad: _scale(math.pi / 180), np.rad2deg: _scale(180 / math.pi),
}
for _name in ["matvec", "vecmat", "vecdot"]:
    if hasattr(np, _name):
        UFUNCS[getattr(np, _name)] = {"matvec": _widened(_matvec), "vecmat": _widened(_vecmat),
                                      "vecdot": _vecdot}[_name]

_COMPARISONS = {np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal}
_resolved = {}


def _resolve(ufunc, types, dtype, casting):
    key = (ufunc, types, dtype, casting)
    loop = _resolved.get(key)
    if loop is None:
        options = {"casting": casting}
        if all(t is int or t is float or t is complex for t in types):
            # Python numbers only (a captured loop's counters): NumPy resolves some ufuncs on
            # two Python ints (less, equal) to object loops; their default dtypes decide.
            types = tuple(np.dtype(t) for t in types)
        if dtype is not None:
            options["signature"] = (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout
        loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout, **options)
        loop = tuple(np.dtype(d) for d in loop)
        # kiln.config.numpy_default_float replaces the float64 a Python float brings in.
        preferred = default_float()
        if (preferred != np.float64 and float in types
                and not any(isinstance(t, np.dtype) and t == np.float64 for t in types)):
            loop = tuple(preferred if d == np.float64 else d for d in loop)
        _resolved[key] = loop
    return loop


# NumPy 1.x types a Python number beside arrays by its value (float32 * 1e300 is float64,
# int8 + 300 int16); resolve_dtypes, as NumPy 2, by its type alone.
_VALUE_BASED = np.lib.NumpyVersion(np.__version__) < "2.0.0"


@functools.lru_cache(maxsize=4096)
def _value_based_loop(ufunc, operands, casting):
    """NumPy 1.x's loop for `operands`, (None, dtype) of an array and (type, value) of a
    Python number: the ufunc's result dtypes on one-element stand-ins, then the loop giving
    them. None (the NEP 50 loop stands) without an array operand, for a traced Python number
    (its value is unknown), or when the stand-ins fail."""
    operands = [value for _, value in operands]
    if not any(isinstance(o, np.dtype) for o in operands) or any(
            o is int or o is float or o is complex for o in operands):
        return None
    try:
        with np.errstate(all="ignore"):
            results = ufunc(*[np.ones(1, o) if isinstance(o, np.dtype) else o
                              for o in operands], casting=casting)
        results = results if isinstance(results, tuple) else (results,)
        types = tuple(o if isinstance(o, np.dtype) else type(o) for o in operands)
        loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout, casting=casting,
                                    signature=(None,) * ufunc.nin + tuple(r.dtype for r in results))
    except Exception:
        return None
    return tuple(np.dtype(d) for d in loop)


def _ufunc_keywords(out, where, dtype, casting, **more):
    """A ufunc call's keywords for its eager run: `where` only where given (a gufunc such as
    np.matmul takes none)."""
    keywords = dict(out=out, dtype=dtype, casting=casting, **more)
    if where is not True:
        keywords["where"] = where
    return keywords


def _fallback(function, inputs, kwargs, reason):
    return call_eagerly(function, inputs, kwargs, reason)


def sequence_array(context, value):
    """np.asarray of a (nested) list or tuple holding traced arrays: their stack (_tracer)."""
    return _numpy_creation_array(context, value)


_WINDOW_FUNCTIONS = {**_window_joins.FUNCTIONS, **_window_arg_reductions.FUNCTIONS}


def apply_function(context, function, args, kwargs):
    """TracedArray.__array_function__: FUNCTIONS' entry, windows' (kiln._windows), or eager."""
    implementation = FUNCTIONS.get(function)
    masked = _has_mask((args, kwargs))
    if masked and _has_window((args, kwargs)):
        context.at()
        if function in _WINDOW_FUNCTIONS:  # x = np.append(x, v), np.argmax(x[k:]) in a loop
            return _WINDOW_FUNCTIONS[function](*args, **kwargs)
        return _window_functions.function(function, args, kwargs)
    if masked and implementation is not None:
        reduced = _masked_selections.reduction(function, args, kwargs)
        if reduced is not None:
            return reduced
    out = kwargs.get("out")
    if implementation is not None and isinstance(out, tuple) and not masked:
        out = _tuple_out(function, args, kwargs)
        kwargs = {**kwargs, "out": out}
    foreign_out = out is not None and not isinstance(out, (TracedArray, tuple))
    if implementation is None or masked or foreign_out:
        name = getattr(function, "__name__", str(function))
        module = getattr(function, "__module__", "numpy") or "numpy"
        reason = (f"{module}.{name} of x[mask] (data-dependent shape)" if masked else
                  f"{module}.{name} with out= a NumPy array (not traced)" if foreign_out else
                  f"{module}.{name} is not supported by kiln's NumPy tracer")
        return call_eagerly(function, args, kwargs, reason)
    context.at()
    return implementation(context, *args, **kwargs)


def _tuple_out(function, args, kwargs):
    """out=(o,) as NumPy's `function` takes it: o where it hands out= to a ufunc (np.sum,
    np.clip), else NumPy's TypeError (np.round, np.dot), which it raises on zero stand-ins of
    the traced arguments. kiln's functions took the tuple for an array (an AttributeError) or
    wrote o where NumPy raises (np.ptp)."""
    def stand_in(value):
        if isinstance(value, TracedArray):
            return np.zeros(value.shape, value.dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(stand_in(item) for item in value)
        return value
    out = kwargs["out"]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function(*stand_in(args), **stand_in(kwargs))
    except TypeError:
        raise
    except Exception:  # noqa: BLE001 - NumPy's other errors come from the traced call
        pass
    return out[0] if len(out) == 1 else out


def _has_window(value):
    if isinstance(value, TracedArray):
        return isinstance(value._selection, _windows.Window)
    if isinstance(value, (list, tuple)):
        return any(_has_window(item) for item in value)
    if isinstance(value, dict):
        return any(_has_window(item) for item in value.values())
    return False


def apply_ufunc(ufunc, method, inputs, kwargs):
    if method == "at" and ufunc in (np.add, np.subtract) and len(inputs) == 3 and not kwargs:
        target, key, value = inputs   # the key stays a tuple or list
        why_not = _why_not_in_place(ufunc, target, value)
        if why_not and _ufunc_loops.at(ufunc, target, key, value) is not _ufunc_loops.UNSUPPORTED:
            return None  # its steps cast back one by one, as NumPy's
        if why_not:
            return _fallback(ufunc.at, inputs, kwargs, f"np.{ufunc.__name__}.at: {why_not}")
        _indexing.add_at(target, key, as_operand(value), negate=ufunc is np.subtract)
        return None
    if method == "at" and len(inputs) in (2, 3) and not kwargs:
        result = _ufunc_loops.at(ufunc, *inputs)
        if result is not _ufunc_loops.UNSUPPORTED:
            return result
    if method == "__call__" and not kwargs:  # np.equal(x, None): NumPy's, where types decide
        result = _object_operands.ufunc_call(ufunc, inputs)
        if result is not _object_operands.NOT_VALUE_FREE:
            return result
    inputs = tuple(as_operand(x) for x in inputs)
    if method == "__call__":
        result = call_ufunc(ufunc, inputs, **kwargs)
        _known_result(ufunc, inputs, kwargs, result)
        if (not kwargs and isinstance(result, TracedArray) and result.dtype == np.bool_
                and result._selection is None):
            result._context.note_mask_origin(ufunc, inputs, result)
        return result
    if method in ("reduce", "accumulate") and "out" in kwargs:
        # NumPy hands a method's out= over as a tuple of one; one not traced (made by eager
        # code after a graph break) is written by NumPy itself.
        out = kwargs["out"]
        out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if out is not None and not isinstance(out, TracedArray):
            return _fallback(getattr(ufunc, method), inputs, kwargs,
                             f"{ufunc.__name__}.{method} with out= a NumPy array (not traced)")
        kwargs = {**kwargs, "out": out}
    if method == "reduce" and ufunc in _UFUNC_REDUCTIONS:  # as np.sum etc. (x[mask] included)
        return apply_function(context_of(inputs), _UFUNC_REDUCTIONS[ufunc], inputs,
                              {"axis": 0, **kwargs})
    if method == "accumulate" and len(inputs) == 1 and np.ndim(inputs[0]) == 0 and (
            not isinstance(kwargs.get("axis"), tuple)):  # np.cumsum, below, takes a 0-d array
        raise TypeError("cannot accumulate on a scalar")
    if method == "accumulate" and ufunc in (np.add, np.multiply):
        function = np.cumsum if ufunc is np.add else np.cumprod
        return function(*inputs, **{"axis": 0, **kwargs})
    if method == "accumulate" and len(inputs) == 1 and set(kwargs) <= {"axis", "dtype", "out"}:
        result = _ufunc_loops.accumulate(ufunc, *inputs, **kwargs)
        if result is not _ufunc_loops.UNSUPPORTED:
            return result
    if method == "reduceat":
        result = _ufunc_reduceat.reduceat(ufunc, inputs, kwargs)
        if result is not _ufunc_loops.UNSUPPORTED:
            return result
    if method == "outer" and len(inputs) == 2:
        a, b = (x if isinstance(x, TracedArray) else np.asarray(x) for x in inputs)
        return call_ufunc(ufunc, (np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b), **kwargs)
    return _fallback(getattr(ufunc, method), inputs, kwargs,
                     f"ufunc method {ufunc.__name__}.{method} is not supported by kiln")


def _known_result(ufunc, inputs, kwargs, result):
    """A ufunc of values the trace knows (constants such as np.array of plain data, and what
    is computed from them alone) has a value the trace knows too, NumPy's ufunc of theirs: a
    quantile's q = np.array([0.1, 0.9]) * 100 stays a constant the trace can read."""
    if "out" in kwargs or not isinstance(result, TracedArray) or result._selection is not None:
        return
    context, values = result._context, []
    for x in inputs:
        if not isinstance(x, TracedArray):
            values.append(lambda x=x: x)
            continue
        known = context.known.get(x._tensor_id()) if x._selection is None else None
        if known is None:
            return
        values.append(known)
    context.known[result.tensor.id] = functools.cache(
        lambda: ufunc(*(value() for value in values), **kwargs))


def _why_not_in_place(ufunc, target, value):
    """Why np.add.at / np.subtract.at of `value` into `target` is not one traced scatter-add,
    or "". NumPy computes each step in the promoted dtype and casts back: for an int array and
    float values, or a Python int out of range, only the eager steps give its result."""
    if not isinstance(target, TracedArray):
        return "the updated array is not traced"
    if any(isinstance(v, TracedArray) and v._selection is not None for v in (target, value)):
        return "x[mask] has a data-dependent shape"
    kind = target.dtype.kind
    if kind not in "iuf":
        return f"a {target.dtype} array"
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        fits = (kind == "f" if isinstance(value, float) else
                kind == "f" or isinstance(value, bool) or
                np.iinfo(target.dtype).min <= value <= np.iinfo(target.dtype).max)
    else:
        dtype = value.dtype if isinstance(value, TracedArray) else np.asarray(value).dtype
        fits = (np.can_cast(dtype, target.dtype, "safe") or
                dtype.kind == kind == "f" and np.can_cast(dtype, target.dtype, "same_kind"))
    return "" if fits else (f"{type(value).__name__} values into a {target.dtype} array are "
                            "cast back at every step")


def is_square_root(base, exponent):
    """Whether NumPy computes base ** exponent as np.sqrt: a float array to the scalar 0.5
    (sqrt(-inf) is nan and sqrt(-0.0) -0.0, where C's pow gives inf and 0.0)."""
    return (isinstance(exponent, (float, int, np.floating, np.integer)) and exponent == 0.5
            and isinstance(base, TracedArray) and base.dtype.kind == "f")


# NumPy 2's power loop takes a scalar 0.5 as sqrt; 1.x's calls pow (its ndarray ** does not).
with np.errstate(invalid="ignore"):
    _POWER_HALF_IS_SQRT = bool(np.isnan(np.power(np.array([-np.inf]), 0.5)[0]))


def call_ufunc(ufunc, inputs, out=None, where=True, dtype=None, casting="same_kind",
               order="K", subok=True, signature=None, **unknown):
    if (ufunc is np.power and _POWER_HALF_IS_SQRT and len(inputs) == 2 and dtype is None
            and is_square_root(*inputs)):
        ufunc, inputs = np.sqrt, inputs[:1]
    implementation = UFUNCS.get(ufunc)
    if implementation is None or unknown or signature is not None:
        return _fallback(ufunc, inputs, _ufunc_keywords(out, where, dtype, casting, **unknown),
                         f"ufunc {ufunc.__name__} is not supported by kiln")
    if out is not None and not isinstance(out, tuple):
        out = (out,)
    context = context_of(inputs) or context_of(out or ())
    context.at()
    masks = [x._selection for x in inputs + (out or ()) if isinstance(x, TracedArray)
             and x._selection is not None]
    if any(isinstance(mask, _windows.Window) for mask in masks):
        return _windows.ufunc(call_ufunc, ufunc, inputs, out, where, dtype, casting)
    if masks:
        return _masked_ufunc(ufunc, inputs, out, masks[0], where, dtype, casting)
    if out is not None and any(o is not None and not isinstance(o, TracedArray) for o in out):
        return _fallback(ufunc, inputs, _ufunc_keywords(out, where, dtype, casting),
                         f"{ufunc.__name__} with out= a NumPy array (not traced)")
    # a number of a branch typed by the data: read as its NumPy side where both give one loop
    inputs = _assumed_numbers.settled(inputs, lambda types: _resolve(ufunc, types, dtype,
                                                                     casting))
    types = tuple(weak_type(x) for x in inputs)
    loop = _resolve(ufunc, types, dtype, casting)
    note_kind_reads(context, inputs, types, loop, lambda t: _resolve(ufunc, t, dtype, casting))
    if _VALUE_BASED and dtype is None and any(type(x) in (int, float, complex) for x in inputs):
        loop = _value_based_loop(ufunc, tuple(  # (type, value): 1 and 1.0 are one dict key
            (type(x), x) if type(x) in (int, float, complex) else (None, t)
            for x, t in zip(inputs, types)), casting) or loop
    nin = ufunc.nin
    operand_dtypes = list(loop[:nin])
    if ufunc in _COMPARISONS and _integer_out_of_range(inputs, loop[0]):
        operand_dtypes = [np.dtype(np.float64)] * nin
    operands = [to_tensor(context, x, d, ufunc.__name__) for x, d in zip(inputs, operand_dtypes)]
    results = implementation(context, operands, loop)
    if not isinstance(results, tuple):
        results = (results,)
    results = [cast(r, d) for r, d in zip(results, loop[nin:])]
    if where is not True:
        condition = to_tensor(context, where, np.bool_)
        for index, result in enumerate(results):
            previous = (out[index].tensor if out is not None and out[index] is not None
                        else context.constant(0, loop[nin + index]))
            results[index] = _k().where(condition, result, cast(previous, result.dtype))
    wrapped = []
    for index, result in enumerate(results):
        target = out[index] if out is not None and index < len(out) else None
        if target is None:
            value = traced(context, result)
            value._scalar = len(result.shape) == 0  # 1-d @ 1-d too
            value._weak = None  # a NumPy scalar; Python's operators make Python numbers
            value._range = _index_range(ufunc, inputs)
            value._affine = _affine_indices.affine_result(ufunc, inputs)
            value._clamped = _clamped_bounds.ufunc_result(ufunc, inputs)
            value._strides = _memory_layout.follows(inputs, result.shape)  # order="K"
        else:
            if not np.can_cast(np.dtype(result.dtype), target.dtype, casting):
                raise _UFuncOutputCastingError(
                    ufunc, casting, np.dtype(result.dtype), target.dtype, index)
            target._assign(result)
            value = target
        wrapped.append(value)
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


def _index_range(ufunc, inputs):
    """Bounds of i + c, i - c, c - i, i * c, -i for a captured loop's index i (a weak int with a
    known range) and Python ints c: indexing with them needs no bounds check when they fit."""
    def bounds(x):
        if isinstance(x, TracedArray):
            return x._range
        return (x, x) if isinstance(x, int) and not isinstance(x, bool) else None
    ranges = [bounds(x) for x in inputs]
    if None in ranges or not any(isinstance(x, TracedArray) for x in inputs):
        return None
    if ufunc is np.negative:
        return (-ranges[0][1], -ranges[0][0])
    combine = {np.add: lambda a, b: a + b, np.subtract: lambda a, b: a - b,
               np.multiply: lambda a, b: a * b}.get(ufunc)
    if combine is None or len(ranges) != 2:
        return None
    corners = [combine(a, b) for a in ranges[0] for b in ranges[1]]
    return (min(corners), max(corners))


def _integer_out_of_range(inputs, dtype):
    if dtype.kind not in "iu":
        return False
    info = np.iinfo(dtype)
    return any(isinstance(x, int) and not isinstance(x, bool) and not info.min <= x <= info.max
               for x in inputs)


def _masked_ufunc(ufunc, inputs, out, mask, where, dtype, casting):
    """x[mask] op scalar, elementwise: computed on all of x, selected again by the mask."""
    def is_small(x):
        return not isinstance(x, TracedArray) and np.ndim(x) == 0 or (
            isinstance(x, TracedArray) and (
                x._masked() and x._context.same_mask(x._selection.tensor, mask.tensor)
                or len(x._unmasked().shape) == 0))
    if ufunc.signature is not None or where is not True or not all(map(is_small, inputs)):
        return _fallback(ufunc, inputs, _ufunc_keywords(out, where, dtype, casting),
                         "boolean mask indexing has a data-dependent shape")
    context = context_of(inputs)
    full = [traced(context, x._unmasked()) if isinstance(x, TracedArray) else x for x in inputs]
    result = call_ufunc(ufunc, tuple(full), dtype=dtype, casting=casting)
    results = result if isinstance(result, tuple) else (result,)
    wrapped = []
    for index, value in enumerate(results):
        target = out[index] if out is not None else None
        if target is not None:
            if not np.can_cast(value.dtype, target.dtype, casting):
                raise _UFuncOutputCastingError(
                    ufunc, casting, value.dtype, target.dtype, index)
            target._tensor = cast(value.tensor, target.dtype)
            wrapped.append(target)
        else:
            wrapped.append(TracedArray(context, value.tensor, mask=mask))
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


def _table_array_function(public):
    """A unary op of the op table that NumPy offers as a plain function (np.sinc): integers
    compute in float64, as NumPy's Python implementation does."""
    def function(context, x):
        value = _as_traced(context, x)
        tensor = value.tensor if value.dtype.kind == "f" else cast(value.tensor, np.float64)
        return _result(context, getattr(_kiln, public)(tensor))
    return function


def _table_array_functions():
    functions = {}
    for _, public, kind, *_ in _kiln.op_table():
        function = getattr(np, public, None)
        if kind == "unary" and callable(function) and not isinstance(function, np.ufunc):
            functions[function] = _table_array_function(public)
    return functions


# The NumPy functions the tracer implements: the op table's, then one table per family (whose
# fuller implementations win: np.round takes `decimals`).
FUNCTIONS = {**_table_array_functions(), **_CORE, **_JOINING, **_REDUCTIONS, **_MOMENTS,
             **_CREATION, **_STATISTICS, **_MANIPULATION, **_SELECTION, **_LAYOUT, **_MATH,
             **_PRODUCTS, **_EINSUM, **_BINNING, **_BITS, **_SORTING, **_LINALG, **_MEMORY,
             **_masked_selections.FUNCTIONS}
