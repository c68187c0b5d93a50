"""Array creation inside a traced function.

np.zeros, ones, full, empty, arange, linspace, logspace, eye and identity take no array, so
NumPy cannot dispatch them to the tracer; np.array/asarray of tracers would convert them to
ndarrays (a graph break). While a trace runs, `capturing()` puts wrappers in the numpy namespace:
a call from the user's code builds graph nodes (fills and iotas, which the scheduler fuses into
their consumers, so `out = np.zeros(n); out[1:] = x` and `np.arange(n) * x` read no memory);
calls from NumPy or kiln, calls on other threads and calls outside a trace go to NumPy unchanged,
and so do calls from code that only interrupts the trace: a Python signal handler, or a
finalizer (`__del__`, a weakref callback) run by the cyclic garbage collector. Those run with
the trace suspended (`suspended()`), so a compiled function they call runs on its own, never
inlined into the trace they interrupted, and they never hold a tracer of it.

Results keep their concrete value at hand (TraceContext.known): Python control flow on them
(`for i in np.arange(3)`, `if np.eye(2).any()`) uses it instead of breaking the graph.
"""
import functools
import gc
import operator
import signal
import sys
import threading

import numpy as np

from . import (_as_strided, _concatenators, _impure_calls, _memory_layout, _numpy_errors,
               _numpy_functions, _stacked_rows, _window_ranges)
from ._graph_breaks import (callee_instruction, graph_break, is_internal, opaque_value,
                            user_location)
from ._tracer import (SUPPORTED_DTYPES, TracedArray, backend, cast, check_dtype, context_of,
                      converted, default_float, dtype_name, has_tracer, materialize_all,
                      shape_entries, traced)

_NO_VALUE = np._NoValue


def _shape(shape):
    shape = shape_entries(shape)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def _dtype(dtype):
    return default_float() if dtype is None else check_dtype(dtype)


def _iota(context, count, dtype):
    return backend().arange(context.anchor(), count, np.dtype(dtype).name)


# ---- the functions (context first, then NumPy's arguments) ----

def full(context, shape, fill_value, dtype=None, order="C", **kwargs):
    shape = _shape(shape)
    if isinstance(fill_value, TracedArray):
        dtype = fill_value.dtype if dtype is None else check_dtype(dtype)
        np.broadcast_shapes(fill_value.shape, tuple(shape))
        return traced(context, backend().broadcast_to(cast(fill_value.tensor, dtype), shape))
    dtype = np.asarray(fill_value).dtype if dtype is None else check_dtype(dtype)
    if np.ndim(fill_value):
        return full(context, shape, context.lift(np.asarray(fill_value, dtype)), dtype)
    try:  # NumPy's conversion: an int the dtype cannot hold is its OverflowError (wrapped in 1.x)
        fill_value = np.full((), fill_value, dtype)[()]
    except OverflowError as error:
        raise OverflowError(f"{error} (in np.full at {user_location()})") from None
    return traced(context, context.constant(fill_value, dtype, shape))


def zeros(context, shape, dtype=None, order="C", **kwargs):
    return full(context, shape, 0, _dtype(dtype))


def ones(context, shape, dtype=None, order="C", **kwargs):
    return full(context, shape, 1, _dtype(dtype))


def arange(context, start_or_stop, stop=None, step=None, dtype=None, **kwargs):
    start, stop = (0, start_or_stop) if stop is None else (start_or_stop, stop)
    step = 1 if step is None else step
    if has_tracer([start, stop, step]):
        window = _window_ranges.arange(context, start, stop, step, dtype)
        if window is not None:  # bounds that follow a captured loop's index
            return window
        return _eager("arange", context, start, stop, step, dtype=dtype)
    if step == 0:
        raise ZeroDivisionError("division by zero in arange: step must not be 0")
    if dtype is None:  # NumPy's rule: at least intp, promoted with each argument's type
        dtype = np.result_type(np.intp, *[np.asarray(v).dtype for v in (start, stop, step)])
    dtype = check_dtype(dtype)
    count = _arange_length(start, stop, step)
    k = backend()
    # NumPy fills start + i * (second - first), with both first values in the result dtype
    # (converted as NumPy does: NumPy 2 refuses an int the dtype cannot hold).
    def value(number, checked):
        return np.array(number, dtype) if checked else np.asarray(number).astype(dtype)
    try:
        first = value(start, count > 0)
        delta = value(start + step, count > 1) - first
    except OverflowError as error:
        raise OverflowError(f"{error} (in np.arange at {user_location()})") from None
    compute = dtype if dtype.kind != "b" else np.dtype(np.int64)
    values = _iota(context, count, compute)
    # Integers as constants of their own dtype: a double rounds them past 2**53.
    number = ((lambda v: context.constant(int(v), compute)) if compute.kind in "iu" else float)
    if delta != 1 and count > 1:  # one element is `first` alone (0 * an infinite step is NaN)
        values = k.multiply(values, number(delta))
    if first != 0:
        values = k.add(values, number(first))
    return traced(context, cast(values, dtype))


def _arange_length(start, stop, step):
    """NumPy's length of arange(start, stop, step) (multiarray/ctors.c): a quotient that
    underflowed to zero from a nonzero distance is one element (arange(0, 1, inf) is [0.]),
    a NaN one cannot be computed, one past intp is too big: NumPy's ValueErrors, not Python's
    OverflowError of int(inf) nor an empty result."""
    distance = stop - start
    with np.errstate(all="ignore"):
        quotient = np.float64(distance) / np.float64(step)
    if quotient == 0 and distance != 0:
        return 0 if np.signbit(quotient) else 1
    if np.isnan(quotient):
        raise ValueError("arange: cannot compute length")
    length = np.ceil(quotient)
    if not np.isfinite(length) or length > np.iinfo(np.intp).max:
        raise ValueError("Maximum allowed size exceeded")
    return max(0, int(length))


def linspace(context, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
             **kwargs):
    """NumPy's algorithm (numpy/_core/function_base.py) on tracers: iota * step + start, the
    last element set to `stop` exactly, floor for integer dtypes."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = (v if isinstance(v, TracedArray) else np.asarray(v) for v in (start, stop))
    compute = np.result_type(start.dtype, stop.dtype, 1.0)
    shape = np.broadcast_shapes(start.shape, stop.shape)
    division = num - 1 if endpoint else num
    delta = np.subtract(stop, start, dtype=compute)
    y = np.reshape(traced(context, _iota(context, num, compute)), (-1,) + (1,) * len(shape))
    scalar = not isinstance(delta, TracedArray) and delta.ndim == 0
    if division > 0:
        step = delta / division
        if scalar and step == 0:
            y = y / division * delta
        else:
            y = y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        last = np.reshape(traced(context, _iota(context, num, np.int64)), y.shape[:1] + (1,) *
                          len(shape)) == num - 1
        y = np.where(last, stop, y)
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None and np.dtype(dtype).kind in "iu":
        y = np.floor(y)
    y = y.astype(dtype if dtype is not None else compute)
    return (y, step) if retstep else y


def logspace(context, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = linspace(context, start, stop, num=num, endpoint=endpoint, axis=axis)
    if np.ndim(base):
        base = np.expand_dims(base, axis)
    result = np.power(base, y)
    return result if dtype is None else result.astype(dtype)


def eye(context, N, M=None, k=0, dtype=float, order="C", **kwargs):
    rows, columns = operator.index(N), operator.index(N if M is None else M)
    kiln = backend()
    row = kiln.reshape(_iota(context, rows, np.int64), [rows, 1])
    column = kiln.reshape(_iota(context, columns, np.int64), [1, columns])
    on_diagonal = kiln.equal(kiln.subtract(column, row), float(k))
    return traced(context, cast(on_diagonal, _dtype(dtype)))


def identity(context, n, dtype=None, **kwargs):
    return eye(context, n, dtype=dtype)


_NEVER_COPIES = int(np.__version__.split(".")[0]) >= 2  # copy=False: NumPy 1's "if needed"


def array(context, obj, dtype=None, *, copy=True, order="K", ndmin=0, **kwargs):
    """np.array of tracers, or of (nested) lists mixing tracers and scalars: a stack. With
    copy=None (or False) a tracer of the dtype asked for is itself, as NumPy's array is (writes
    through the result reach it), where it is in the order asked for (_in_order: a copy in
    that order where not); ndmin puts ones in front (a view)."""
    order = "K" if order is None else order
    if isinstance(obj, TracedArray) and (obj._scalar or obj._weak is not None) and obj.ndim == 0:
        obj = TracedArray(context, obj.tensor)  # a NumPy scalar's or Python number's: 0-d array
    if isinstance(obj, TracedArray):
        same = dtype is None or np.dtype(dtype) == obj.dtype
        if copy:
            result = obj.astype(obj.dtype if dtype is None else dtype, order=order)
        elif same and _memory_layout.in_order(obj, order) is not False:
            result = obj if order in ("K", "A") else _in_order(obj, order)
        elif copy is False and _NEVER_COPIES:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        else:
            result = obj.astype(obj.dtype if dtype is None else dtype, order=order)
    else:
        result = _with_stacks(context, obj, dtype)
        if result is None:
            items = _items(context, obj, dtype)
            common = np.result_type(*[item.dtype for item in items]) if dtype is None else dtype
            result = np.stack([item.astype(common) for item in items])
        if order == "F" and isinstance(result, TracedArray):
            result = _in_order(result, "F")
    if result.ndim < ndmin:
        result = result.reshape((1,) * (ndmin - result.ndim) + tuple(result.shape))
    return result


def _items(context, obj, dtype):
    """The items of a (nested) list as arrays: tracers' np.array, the others NumPy's."""
    try:  # NumPy's conversion of the plain items to the dtype asked for (its OverflowError)
        return [array(context, item) if has_tracer(item) else np.asarray(item, dtype)
                for item in obj]
    except OverflowError as error:
        raise OverflowError(f"{error} (in np.array at {user_location()})") from None


def _with_stacks(context, obj, dtype):
    """np.array of a list holding the rows of a loop's appends, whole (`np.array(losses)`):
    each such stack as it is, the other items one row each (a stack of its rows was a slice per
    row and a concat). None where there is no such stack or the items' shapes differ (NumPy's
    error, from the stack of every item)."""
    pieces = _stacked_rows.blocks(obj)
    if pieces is None:
        return None
    stacks = [piece.stacked() if isinstance(piece, _stacked_rows.Rows) else None
              for piece in pieces]
    items = _items(context, [piece for piece, stack in zip(pieces, stacks) if stack is None],
                   dtype)
    parts = [stack if stack is not None else np.expand_dims(items.pop(0), 0) for stack in stacks]
    if len({tuple(part.shape[1:]) for part in parts}) != 1:
        return None
    common = np.result_type(*[part.dtype for part in parts]) if dtype is None else dtype
    parts = [part.astype(common) for part in parts]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def asarray(context, a, dtype=None, order=None, *, copy=None, **kwargs):
    return array(context, a, dtype, copy=copy, order=order)


def ascontiguousarray(context, a, dtype=None, **kwargs):
    return _in_order(array(context, a, dtype, copy=None, ndmin=1), "C")  # (NumPy's has an axis)


def asfortranarray(context, a, dtype=None, **kwargs):
    return _in_order(array(context, a, dtype, copy=None, ndmin=1), "F")


def _in_order(result, order):
    """np.ascontiguousarray / np.asfortranarray of the array `result` (np.asarray's order=):
    itself where its NumPy layout is already `order` ("C", "F"), a copy in that layout where
    it is not (writes to it reach no other array: np.ascontiguousarray(x.T) was x.T itself, its
    writes reaching x), either where kiln does not know the layout (a write to it is a graph
    break, as a reshape's)."""
    if not isinstance(result, TracedArray):
        return result  # (an array-like made here)
    known = _memory_layout.in_order(result, order)
    if known is None:
        return _numpy_functions.reshape_view(result, list(result.shape), None, maybe_copy=True)
    return result if known else result.copy(order)


_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F",
                 "F_CONTIGUOUS": "F", "FORTRAN": "F", "A": "A", "ALIGNED": "A", "W": "W",
                 "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}


def require(context, a, dtype=None, requirements=None, **kwargs):
    """a itself unless a cast, an order it is not in ('C', 'F': _in_order), a view's own data
    ('O') or a read-only array's writeable copy ('W') asks for a copy, as NumPy's require."""
    wanted = {_REQUIREMENTS[r.upper()] for r in
              ([requirements] if isinstance(requirements, str) else requirements or [])}
    if {"C", "F"} <= wanted:
        raise ValueError("Cannot specify both C and Fortran contiguous.")
    result = array(context, a, dtype, copy=None)
    if not isinstance(result, TracedArray):
        return result
    order = "F" if "F" in wanted else "C"
    if wanted & {"C", "F"}:
        result = _in_order(result, order)
    if "O" in wanted and result._argument:  # a view of the caller's array, or not
        graph_break("np.require(x, 'O') of an argument: whether it owns its data depends on "
                    "how the caller made it")
    if "O" in wanted and result._root is not None or "W" in wanted and result._read_only:
        return _in_order(result.copy(), order)
    return result


# Creation functions that reach the tracer through __array_function__ (an array argument).
def _full_like(value_default):
    def full_like(context, a, *args, dtype=None, order="K", subok=True, shape=None,
                  device=None, **kwargs):
        fill_value = args[0] if value_default is None else value_default
        x = a if isinstance(a, TracedArray) else context.lift(np.asarray(a))
        dtype = check_dtype(dtype if dtype is not None else x.dtype)
        result = full(context, list(x.shape) if shape is None else _shape(shape), fill_value,
                      dtype)
        if shape is None and order in ("K", "A") and isinstance(result, TracedArray):
            result._strides = _memory_layout.follows([x], x.shape)  # order="K"
        return result
    return full_like


FUNCTIONS = {np.zeros_like: _full_like(0), np.ones_like: _full_like(1),
             np.empty_like: _full_like(0), np.full_like: _full_like(None)}

# name in numpy -> (implementation, whether it is captured only when an argument is traced)
CAPTURED = {
    "zeros": (zeros, False), "ones": (ones, False), "empty": (zeros, False),
    "full": (full, False), "arange": (arange, False), "linspace": (linspace, False),
    "logspace": (logspace, False), "eye": (eye, False), "identity": (identity, False),
    "array": (array, True), "asarray": (asarray, True), "asanyarray": (asarray, True),
    "ascontiguousarray": (ascontiguousarray, True), "asfortranarray": (asfortranarray, True),
    "require": (require, True),
}


# ---- known values: Python control flow on created arrays without a graph break ----

def _eager(name, context, *args, **kwargs):
    """The NumPy function on concrete values (arange with a traced bound: data-dependent)."""
    args, kwargs = materialize_all((args, kwargs), f"np.{name} with a traced argument")
    return _ORIGINALS[name](*args, **kwargs)


def _remember(context, result, name, args, kwargs):
    if isinstance(result, TracedArray) and not has_tracer([args, list(kwargs.values())]):
        context.known[result.tensor.id] = functools.cache(
            functools.partial(_ORIGINALS[name], *args, **kwargs))
    return result


# ---- installing the wrappers while a trace runs ----

_ORIGINALS = {name: getattr(np, name) for name in CAPTURED}
_lock = threading.Lock()
_depth = 0


# The trace contexts being traced on each thread, innermost last: np.zeros(3) in user code has
# no traced argument to say which trace it belongs to (the one ambient fact of the tracer).
_capturing = threading.local()


def _current_context():
    stack = getattr(_capturing, "stack", None)
    return stack[-1] if stack else None


class suspended:
    """No trace on this thread meanwhile: code that interrupts a trace (a signal handler, a
    garbage collection's finalizers) runs as outside one."""

    def __enter__(self):
        stack = getattr(_capturing, "stack", None)
        self.active = bool(stack)
        if self.active:
            stack.append(None)

    def __exit__(self, *exc):
        if self.active:
            _capturing.stack.pop()


def _on_collection(phase, info):
    # gc.callbacks: "start" before a collection runs finalizers and weakref callbacks, "stop"
    # after (only on the thread that traces: others have no stack).
    stack = getattr(_capturing, "stack", None)
    if not stack and phase == "start":
        return
    if phase == "start":
        stack.append(None)
        _capturing.collecting = getattr(_capturing, "collecting", 0) + 1
    elif getattr(_capturing, "collecting", 0) > 0:
        _capturing.collecting -= 1
        stack.pop()


def _suspending_handler(handler):
    @functools.wraps(handler)
    def run_handler(signum, frame):
        with suspended():
            return handler(signum, frame)
    run_handler.kiln_handler = handler
    return run_handler


def _wrap_signal_handlers():
    """While the main thread traces, its Python signal handlers run with the trace suspended:
    {signal: the handler's wrapper}, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # handlers run on the main thread only
    wrapped = {}
    for signum in signal.valid_signals():
        try:
            handler = signal.getsignal(signum)
            if callable(handler) and not hasattr(handler, "kiln_handler"):
                wrapper = _suspending_handler(handler)
                signal.signal(signum, wrapper)
                wrapped[signum] = wrapper
        except (OSError, ValueError, RuntimeError):
            continue
    return wrapped


def _restore_signal_handlers(wrapped):
    for signum, wrapper in wrapped.items():
        try:
            if signal.getsignal(signum) is wrapper:  # unless the trace installed another
                signal.signal(signum, wrapper.kiln_handler)
        except (OSError, ValueError, RuntimeError):
            continue


def _called_directly(wrapper, name):
    """Whether the user's code calls `wrapper` itself, rather than C code it called (NumPy's
    random module creates its results with np.empty: a tracer there crashes it). C code has
    no frame of its own, so the user's frame is the caller either way; its current call
    instruction tells which function it calls."""
    frame = sys._getframe(2)
    if is_internal(frame.f_code.co_filename):
        return False
    callee = callee_instruction(frame.f_code, frame.f_lasti)
    if callee is None:
        return True
    if callee.opname in ("LOAD_ATTR", "LOAD_METHOD"):
        return callee.argval == name
    scopes = (frame.f_locals, frame.f_globals, frame.f_builtins)
    value = next((scope[callee.argval] for scope in scopes if callee.argval in scope), None)
    return value is wrapper


def _wrapper(name):
    implementation, needs_traced_argument = CAPTURED[name]
    original = _ORIGINALS[name]

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if kwargs.get("like") is not None:
            return original(*args, **kwargs)
        if not _called_directly(wrapper, name):
            context = _current_context()
            if context is not None and not is_internal(sys._getframe(1).f_code.co_filename):
                # C code called from the user's (np.random's draws): a value of this call
                opaque_value(context, f"np.{name} called by C code the tracer cannot follow "
                                      "(np.random?)")
            return original(*args, **kwargs)
        if needs_traced_argument and args and _current_context() is not None:
            args = (converted(args[0]), *args[1:])  # an array-like: its __array__'s result
        context = context_of(args) if needs_traced_argument else _current_context()
        if context is not None and (not needs_traced_argument or has_tracer(args)):
            kwargs.pop("like", None)
            context.at()
            return _remember(context, implementation(context, *args, **kwargs), name, args,
                             kwargs)
        result = original(*args, **kwargs)
        if name in _CONSTANTS_TRACED and _current_context() is not None:
            return _traced_constant(_current_context(), result)
        return result
    return wrapper


# np.array of plain data in the user's code (a lookup table `np.array([...])`, coefficients):
# a traced constant of known value, as np.zeros is, so that indexing it by a traced index
# (`table[idx]`, `coef[i]` in a loop) or storing traced values into it stays in the graph; an
# ndarray converted the index, a graph break (a loop over it ran as Python).
_CONSTANTS_TRACED = ("array", "asarray", "asanyarray")


def _traced_constant(context, result):
    if (type(result) is not np.ndarray or result.dtype.kind not in "biufc"
            or not result.dtype.isnative or dtype_name(result.dtype) not in SUPPORTED_DTYPES):
        return result
    traced = context.lift(result)
    if traced.tensor.id not in context.known:
        context.known[traced.tensor.id] = result.copy  # its value, for Python control flow
    return traced


_WRAPPERS = {name: _wrapper(name) for name in CAPTURED}


def _random_wrapper(original):
    """np.random's function `original` (a method of its global RandomState): a draw is a new
    value on every call, which the trace cannot know (an array draw is caught by the np.empty
    its C code calls; this catches scalar draws, np.random.rand())."""
    @functools.wraps(original)
    def draw(*args, **kwargs):
        context = _current_context()
        if context is not None and not is_internal(sys._getframe(1).f_code.co_filename):
            opaque_value(context, f"np.random.{original.__name__} draws new values on every call")
        return original(*args, **kwargs)
    return draw


_RANDOM_ORIGINALS = {name: getattr(np.random, name) for name in dir(np.random)
                     if getattr(getattr(np.random, name), "__self__", None) is np.random.mtrand._rand}
_RANDOM_WRAPPERS = {name: _random_wrapper(original) for name, original in _RANDOM_ORIGINALS.items()}


# (namespace, its wrappers while a trace runs, its own functions); Python's own sources of new
# values too (kiln._impure_calls)
SWAPPED = ((np, _WRAPPERS, _ORIGINALS), (np.random, _RANDOM_WRAPPERS, _RANDOM_ORIGINALS),
            *_numpy_errors.swapped(_current_context),
            (np.lib.stride_tricks, _as_strided.WRAPPERS, _as_strided.ORIGINALS),
            (np, _concatenators.WRAPPERS, _concatenators.ORIGINALS),
            *_impure_calls.swapped(_current_context))


class capturing:
    """Context manager around tracing `context`'s trace: the numpy namespace holds the wrappers
    meanwhile, and creation functions of user code build nodes in that trace."""

    def __init__(self, context):
        self.context = context

    def __enter__(self):
        global _depth
        if not hasattr(_capturing, "stack"):
            _capturing.stack = []
        # The outermost trace of this thread wraps the signal handlers (nested ones find them
        # wrapped already).
        self.handlers = _wrap_signal_handlers() if not _capturing.stack else {}
        _capturing.stack.append(self.context)
        with _lock:
            if _depth == 0:
                for namespace, wrappers, _ in SWAPPED:
                    for name, wrapper in wrappers.items():
                        setattr(namespace, name, wrapper)
                if _on_collection not in gc.callbacks:
                    gc.callbacks.append(_on_collection)
            _depth += 1

    def __exit__(self, *exc):
        global _depth
        _capturing.stack.pop()
        _restore_signal_handlers(self.handlers)
        with _lock:
            _depth -= 1
            if _depth == 0:
                for namespace, _, originals in SWAPPED:
                    for name, original in originals.items():
                        setattr(namespace, name, original)
                if _on_collection in gc.callbacks:
                    gc.callbacks.remove(_on_collection)
