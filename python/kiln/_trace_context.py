"""The trace a NumPy function is recorded into (DESIGN.md §1): what every tracer of one
_kiln.Trace shares (TraceContext: the trace, its embedded constants, the driver asked for values
the trace cannot know), and the driver's entry points: wrap() a graph input, unwrap() a
tracer's current tensor, as_output() a result leaf (kiln._numpy_tracer re-exports them)."""
import weakref

import numpy as np

from ._memory_layout import layout_of
from ._tracer import TracedArray, backend, check_dtype, graph_break, user_location


# A trace past this many operations runs eagerly (TraceContext.note_array).
MOST_TRACED_NODES = 50_000


class TraceContext:
    """What every tracer of one _kiln.Trace shares: the trace and its embedded constants."""

    def __init__(self, trace):
        self.trace = trace
        self._lifted = {}         # id(ndarray) -> (ndarray, TracedArray)
        self._anchor = None       # some tensor of the trace: creation functions need one
        self.known = {}           # tensor id -> () -> its concrete value (_numpy_creation)
        self.mask_origins = {}    # bool tensor id -> how it was computed (same_mask)
        # Memory, for np.may_share_memory (kiln._numpy_memory): id(argument's tracer) -> the
        # caller's array; (ndarray, tracer) for each ndarray a graph break handed out.
        self.input_memory = {}
        self.handed_out = []
        # Weak references to the TracedArrays made outside loop bodies (for a break's cut); not
        # a WeakSet: a TracedArray's hash and == are NumPy's, of its value.
        self.arrays = []
        self.made = 0  # TracedArrays made outside loop bodies (note_array)
        self.in_body = 0  # loop bodies being captured: their values exist only inside
        self.peeling = 0  # first iterations of captured loops run on their own (_loop_peeling)
        self.driver = None  # the driver of this call (kiln._retrace); None: breaks end the trace
        self.loop_capture = None  # the user's loops' and branches' (kiln._loop_capture), if any
        self.body_driver = None  # the driver while loop bodies are captured (driver is None)
        self.branch_sides = 0  # branch sides being traced (their checks apply where taken)
        # Ops traced so far that raise on data as the graph runs (the solve op's singular
        # matrix), not through a check a branch can make conditional: no select computes them
        # on a side not taken (kiln._branch_capture).
        self.raising_ops = 0

    def in_loop(self):
        """Whether a captured loop's iteration is being traced (its body, or its first
        iteration on its own): where a graph break would unroll the loop."""
        return bool(self.in_body or self.peeling)

    def note_array(self, array):
        """Holds a weak reference to a TracedArray made outside loop bodies. Every 4096 of them,
        a trace grown past MOST_TRACED_NODES operations ends, and the driver runs the call
        eagerly: a Python loop kiln does not capture (its function's source unavailable, as
        for one made by exec, or a `global` statement in it) is traced unrolled, and 100,000
        steps of a running variance traced for two minutes, then ran eagerly all the same,
        their source past kiln's bound."""
        self.arrays.append(weakref.ref(array))
        self.made += 1
        if (self.made % 4096 == 0 and self.driver is not None
                and self.trace.node_count > MOST_TRACED_NODES):
            self.driver.too_large(MOST_TRACED_NODES)

    def data_input(self, array):
        """After a graph break, data reaching the trace is a graph input (None: a constant)."""
        return self.driver.data_input(array) if self.driver is not None else None

    def note_data_scalar(self, value):
        return self.driver.note_data_scalar(value) if self.driver is not None else value

    def is_data_scalar(self, value):
        return self.driver is not None and self.driver.is_data_scalar(value)

    def note_mask_origin(self, ufunc, inputs, result):
        """Records how a comparison's bool `result` was computed: from the same tensors and
        numbers, the same ufunc gives the same mask (the graph's values are immutable)."""
        parts = []
        for x in inputs:
            if isinstance(x, TracedArray) and x._selection is None:
                parts.append(x._tensor_id())
            elif (type(x) in (bool, int, float) or
                  isinstance(x, np.generic) and x.dtype.kind in "biuf"):
                parts.append((type(x), x.item() if isinstance(x, np.generic) else x))
            else:
                return
        self.mask_origins[result.tensor.id] = (ufunc, tuple(parts))

    def same_mask(self, a, b):
        """Whether bool tensors a and b hold the same mask: one tensor, or two computed alike
        (`a[a > 0] = a[a > 0] ** -1.5` computes `a > 0` twice)."""
        if a.id == b.id:
            return True
        origin = self.mask_origins.get(a.id)
        return origin is not None and origin == self.mask_origins.get(b.id)

    def at(self):
        """Stamps the user's current line on the nodes built next (and on errors)."""
        if self.trace is not None:
            self.trace.location = user_location()
        return self

    def anchor(self):
        if self._anchor is None:
            self._anchor = self.trace.constant(np.zeros((), np.float64))
        return self._anchor

    def known_key(self, key):
        """An index key with tracers of known value (`for i in np.arange(n): x[i]`) replaced
        by that value, so that they index statically."""
        def concrete(item):
            if isinstance(item, TracedArray) and item._selection is None:
                known = self.known.get(item._tensor_id())
                if known is not None:
                    value = known()  # a NumPy scalar stays one; a 0-d array (copies) too
                    return value[()] if value.ndim == 0 and item._scalar else value
            return item
        return tuple(concrete(i) for i in key) if isinstance(key, tuple) else concrete(key)

    def constant(self, value, dtype, shape=()):
        """A tensor of `shape` filled with the Python scalar `value`."""
        dtype = check_dtype(dtype)  # an object fill (np.full(3, 2**70)) is a graph break
        if dtype.kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(
                value, (bool, np.bool_)):
            value = int(value)  # exactly: a double would round integers past 2**53
            bits = value - 2**64 if value >= 2**63 else value
            if -2**63 <= bits < 2**63:
                return backend().full_integer(self.anchor(), list(shape), bits, dtype.name)
        if dtype.kind == "c":  # from its float parts (the graph's complex op)
            part = np.finfo(dtype).dtype
            value = complex(value)
            return backend().complex(self.constant(value.real, part, shape),
                                     self.constant(value.imag, part, shape))
        if dtype == np.float16:
            # NumPy casts the scalar to float16 before the op (0.1 is 0.0999755859375, 70000.0
            # inf); kernels compute float16 in float and would use it unrounded. (The graph's
            # half constants keep float values for torch, whose scalars stay in float.)
            with np.errstate(over="ignore"):
                value = float(np.float16(value))
        return backend().full(self.anchor(), list(shape), float(value), dtype.name)

    def lift(self, array):
        """A concrete array used by the traced code: a fill when uniform, else embedded."""
        if isinstance(array, TracedArray):
            return array
        array = np.asarray(array)
        known = self._lifted.get(id(array))
        if known is not None and known[0] is array:
            return known[1]
        dtype = check_dtype(array.dtype)
        uniform_value = _uniform_value(array)
        tensor = self.data_input(array) if array.size else None  # after a break: an input
        if tensor is not None:
            pass
        elif array.size == 0:
            tensor = self.constant(0, dtype, array.shape)
        elif uniform_value is not None:
            tensor = self.constant(uniform_value, dtype, array.shape)
        elif self.trace is not None:
            tensor = self.trace.constant(array)
        else:
            graph_break("a NumPy array constant (the driver did not pass the Trace to wrap)")
        traced = TracedArray(self, tensor)
        traced._strides = layout_of(array)
        self._lifted[id(array)] = (array, traced)
        return traced


_contexts = {}   # id(trace) -> TraceContext, for the traces alive (see wrap)


def context_for(trace):
    context = _contexts.get(id(trace))
    if context is None or context.trace is not trace:
        # Forget contexts of finished traces: only the current few are ever in use.
        if len(_contexts) > 16:
            _contexts.clear()
        context = TraceContext(trace)
        _contexts[id(trace)] = context
    return context


def wrap(tensor, trace=None):
    """The tracer standing for graph input `tensor` of `trace`.

    Without the trace, constants are still made (through `tensor`), but non-uniform NumPy
    arrays met while tracing cannot be embedded (a graph break) and nodes carry no user line.
    """
    context = context_for(trace) if trace is not None else TraceContext(None)
    if context._anchor is None:
        context._anchor = tensor
    value = TracedArray(context, tensor)
    value._argument = True
    return value


def mark_read_only(value):
    """The tracer of an argument that is not writeable: writes to it or its views raise."""
    value._read_only = True


def note_layout(value, array):
    """The tracer of the argument `array`: NumPy's layout of it (kiln._memory_layout)."""
    value._strides = layout_of(array)


def unwrap(value):
    """The current tensor of a tracer (None for anything else)."""
    if isinstance(value, TracedArray):
        if value._selection is not None:
            return value._context.lift(value._materialized_selection()).tensor
        return value.tensor
    return None


def is_scalar_result(value):
    """True where eager NumPy returns a NumPy scalar rather than a 0-d array."""
    return isinstance(value, TracedArray) and value._scalar and len(value.tensor.shape) == 0


def as_output(value, trace):
    """The _kiln.Tensor for one leaf of the function's result."""
    if isinstance(value, TracedArray):
        if value._selection is not None:
            value = context_for(trace).lift(value._materialized_selection())
        return value.tensor
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)):
        return context_for(trace).lift(np.asarray(value)).tensor
    raise TypeError(f"kiln: a result of type {type(value).__name__} is not an array")


def _uniform_value(array):
    """The single value of an array whose elements are all equal and exactly a double."""
    if array.size == 0:
        return None
    flat = array.reshape(-1)
    first = flat[0]
    if array.dtype.kind == "f" and np.isnan(first):
        return first.item() if np.isnan(flat).all() else None
    if not (flat == first).all():
        return None
    value = first.item()
    if array.dtype.kind in "iu" and int(float(value)) != value:
        return None
    return value
