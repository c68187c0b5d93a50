"""The NumPy tracer: array stand-ins that record NumPy code into a kiln graph (DESIGN.md §1).

What the driver (kiln._compile) uses (kiln._trace_context; kiln._numpy_tracer re-exports it):

    trace = _kiln.Trace()
    x = wrap(trace.input("float64", [3]), trace)   # the tracer for one graph input
    result = fn(x, ...)                            # the user's function, on TracedArray objects
    unwrap(leaf) -> _kiln.Tensor | None            # CURRENT tensor of a tracer (after in-place
                                                   # updates: compare with the input's tensor id
                                                   # to see which inputs were mutated)
    is_scalar_result(leaf)                         # eager NumPy would return a NumPy scalar
    as_output(leaf, trace) -> _kiln.Tensor         # any result leaf (tracer, scalar, ndarray)

Pass the Trace to wrap(): the tracer needs it to embed constants and to stamp the user's line.

A value the trace cannot know (truth value, float(), .item(), an unsupported function, the shape
of x[mask]) asks the driver attached to the trace context (TraceContext.driver, never imported;
kiln._numpy_tracer assembles the tracer) for the concrete value, or raises GraphBreakSignal.
In-place updates are functionalised: the wrapper is rebound to the new value and views write
through to the array they view.

Typing follows the installed NumPy: each ufunc's loop is resolved by NumPy itself
(ufunc.resolve_dtypes: NEP 50 weak Python scalars on NumPy 2); operands are cast to the loop's
dtypes before the kiln op runs and results are cast to NumPy's output dtypes.
"""
import operator
import sys
import weakref

import numpy as np

from . import _kiln

try:  # NumPy's own class for a bad out= dtype (numpy.core before NumPy 2)
    from numpy._core._exceptions import _UFuncOutputCastingError
except ImportError:
    from numpy.core._exceptions import _UFuncOutputCastingError

def backend():  # the kiln ops the tracer records with
    return _kiln


# The NumPy function/ufunc tables, the indexing rules and the reads of selections import this
# module: kiln._numpy_tracer installs them here (install()), this module imports none of them.
_numpy_api = None
_indexing = None
_masked_selections = None


def install(numpy_api, indexing, masked_selections):
    global _numpy_api, _indexing, _masked_selections
    _numpy_api, _indexing, _masked_selections = numpy_api, indexing, masked_selections


# ---- graph breaks (_graph_breaks.py) ----

from ._graph_breaks import (called_by_a_shuffle, graph_break, is_kiln_code,  # noqa: E402,F401
                           materialize, user_location)
from ._integer_ranges import check_fits, check_traced_int_fits  # noqa: E402,F401
from . import _memory_layout  # noqa: E402
from ._memory_layout import strides_of  # noqa: E402
from ._tracer_types import (SUPPORTED_DTYPES, AxisError, check_dtype,  # noqa: E402,F401
                            default_float, dtype_name, normalize_axes, normalize_axis,
                            shape_entries)


def materialize_all(value, reason):
    """`value` with every tracer inside (lists, tuples, dicts) replaced by its ndarray."""
    if isinstance(value, TracedArray):
        return materialize(value, reason)
    if isinstance(value, (list, tuple)):
        return type(value)(materialize_all(item, reason) for item in value)
    if isinstance(value, dict):
        return {key: materialize_all(item, reason) for key, item in value.items()}
    return value


def call_eagerly(function, args, kwargs, reason):
    """A graph break: `function` runs on the tracers' ndarrays. A NumPy function that updates an
    argument in place (np.add.at, np.put, np.copyto, out=) updates those ndarrays, copies of the
    traced values: each one it changed is written back into its tracer (a functionalised
    in-place update, through views), or the update would be lost. Arguments that are one array
    or views of one (np.place(a, m, a)) are copies that share nothing, where NumPy's call may
    read what it has written (np.place copies a value array that is not contiguous, reads a
    contiguous one as it writes): a call that writes one of them runs eagerly."""
    materialized = []  # (tracer, its ndarray, a copy from before the call)

    def concrete(value):
        if isinstance(value, TracedArray):
            array = materialize_all(value, reason)
            materialized.append((value, array, np.array(array, copy=True)))
            return array
        if isinstance(value, (list, tuple)):
            return type(value)(concrete(item) for item in value)
        if isinstance(value, dict):
            return {key: concrete(item) for key, item in value.items()}
        return value
    args, kwargs = concrete(args), concrete(kwargs)
    result = function(*args, **kwargs)
    name = getattr(function, "__name__", str(function))
    if _views_of(result, [array for _, array, _ in materialized]):
        # NumPy's result views an argument (np.trim_zeros, np.require): writes through it
        # must reach the argument, which the concrete copy cannot: the call runs eagerly.
        graph_break(f"{name} (run eagerly) returns a writeable view of a traced array")
    written = [(tracer, array) for tracer, array, before in materialized
               if array.shape != before.shape or array.tobytes() != before.tobytes()]
    roots = [id(_root_of(tracer)) for tracer, _, _ in materialized]
    if written and len(set(roots)) < len(roots):
        graph_break(f"{name} (run eagerly) writes an argument that shares memory with another")
    for tracer, array in written:
        if tracer._selection is not None:
            graph_break(f"{name} updates x[mask] in place (data-dependent shape)")
        tracer._assign(to_tensor(tracer._context, np.array(array, copy=True), tracer.dtype, name))
    return result


def _root_of(tracer):
    """The array `tracer` is a view of (through views of views), or itself."""
    while tracer._root is not None:
        tracer = tracer._root
    return tracer


def _views_of(result, arrays):
    if isinstance(result, (list, tuple)):
        return any(_views_of(item, arrays) for item in result)
    return (isinstance(result, np.ndarray) and result.flags.writeable and result.size > 0
            and any(np.may_share_memory(result, array) for array in arrays))


def context_of(values):
    """The TraceContext of the first TracedArray among `values` (nested lists searched)."""
    for value in values:
        if isinstance(value, TracedArray):
            return value._context
        if isinstance(value, (list, tuple)):
            found = context_of(value)
            if found is not None:
                return found
    return None


# ---- conversion and typing helpers ----

def cast(tensor, dtype):
    name = dtype_name(check_dtype(dtype))  # complex, str...: a break, not a TypeError
    return tensor if tensor.dtype == name else backend().astype(tensor, name)


def weak_type(value):
    """What NumPy's dtype resolution sees for an operand: a dtype, or int/float (weak)."""
    if isinstance(value, TracedArray):  # (a Python bool is NumPy's bool: the lowest kind)
        return value.dtype if value._weak is None or value._weak is bool else value._weak
    if isinstance(value, np.generic):   # np.float64 is a float, yet strongly typed (NEP 50)
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, complex):
        return complex
    return (_sequence_array(value) if isinstance(value, (list, tuple)) else
            np.asarray(value)).dtype


def as_operand(value):
    """Lists become arrays (NumPy treats them as strongly typed), array-likes their arrays
    (converted); other values pass."""
    if isinstance(value, (list, tuple)):
        return _sequence_array(value)
    return converted(value)


def _sequence_array(value):
    """np.asarray of a list or tuple; one holding traced arrays (`out[i] = x, y`, `a + [s, t]`)
    is their stack in the trace (kiln._numpy_creation.array), where NumPy's conversion of each
    was a graph break."""
    if has_tracer(value):
        return _numpy_api.sequence_array(context_of(value), value)
    return np.asarray(value)


def converted(value):
    """`value` as its array where it is an array-like (an object with __array__, not an ndarray
    or NumPy scalar): its __array__ is user code, run here so that the traced arrays it makes
    (from traced attributes, or creation functions traced in it) stay in the graph; NumPy's C
    code refused them ("object __array__ method not producing an array"). Others as they are."""
    if (isinstance(value, (np.ndarray, np.generic, TracedArray, list, tuple))
            or not hasattr(type(value), "__array__")):
        return value
    result = type(value).__array__(value)
    return result if isinstance(result, (np.ndarray, TracedArray)) else value


def to_tensor(context, value, dtype=None, op_name="op"):
    """A _kiln.Tensor for any operand, cast to `dtype` when given."""
    value = converted(value)
    if isinstance(value, TracedArray):
        tensor = value.tensor
        if value._weak is int and dtype is not None:
            check_traced_int_fits(value, np.dtype(dtype), op_name)
    elif isinstance(value, (bool, int, float, complex, np.bool_)) and not isinstance(value, np.generic):
        target = np.dtype(dtype) if dtype is not None else np.asarray(value).dtype
        check_fits(value, target, op_name)
        if context.is_data_scalar(value):  # from float()/.item() after a break: an input
            tensor = context.data_input(np.asarray(value, target))
            if tensor is not None:
                return tensor
        return context.constant(value, target)
    else:
        array = _sequence_array(value) if isinstance(value, (list, tuple)) else np.asarray(value)
        tensor = array.tensor if isinstance(array, TracedArray) else context.lift(array).tensor
    return cast(tensor, dtype) if dtype is not None else tensor


def traced(context, tensor):
    return TracedArray(context, tensor)


def has_tracer(value):
    """A TracedArray, or a (nested) list or tuple holding one."""
    if isinstance(value, TracedArray):
        return True
    return isinstance(value, (list, tuple)) and any(has_tracer(item) for item in value)


def _has_mask(value):
    if isinstance(value, TracedArray):
        return value._selection is not None
    if isinstance(value, (list, tuple)):
        return any(_has_mask(item) for item in value)
    if isinstance(value, dict):
        return any(_has_mask(item) for item in value.values())
    return False


# ---- the array stand-in ----

_INPLACE = {}


class TracedArray:
    """A symbolic NumPy array: every operation on it appends nodes to the trace."""

    __array_priority__ = 1000
    __slots__ = ("_context", "_tensor", "_version", "_root", "_root_version", "_root_shape",
                 "_forward", "_backward", "_argument", "_selection", "_scalar", "_weak", "_range",
                 "_affine", "_clamped", "_read_only", "_bound", "_overlapping", "_lazy", "_strides",
                 "_maybe_copy", "_maybe_copies", "_hidden_base", "_offset", "__weakref__")
    # (not `_mask`: np.ma reads any object's _mask as its MaskedArray mask)

    def __init__(self, context, tensor, mask=None):
        self._context = context
        if not context.in_body:
            context.note_array(self)
        self._tensor = tensor
        self._version = 0
        self._root = None            # the array this one is a view of (views write through)
        self._root_version = 0
        self._root_shape = None      # the root's shape the two functions below take
        self._forward = None         # root tensor -> this view's tensor
        self._backward = None        # (root tensor, new view tensor) -> new root tensor
        self._argument = False       # a graph input: its caller holds the array
        self._selection = mask       # set for x[bool_mask] selections (see __getitem__)
        self._scalar = False         # eager NumPy would give a NumPy scalar here
        self._weak = None            # int/float/complex: stands for a Python number (NEP 50
                                     # weak); bool: a Python bool (its type after the call)
        self._range = self._affine = None  # a captured loop's index (+- c, * c): bounds, form
        self._clamped = None         # max/min of such an index and ints (kiln._clamped_bounds)
        self._read_only = False      # an argument NumPy would refuse to write (and its views)
        self._bound = None           # non-negative integers at most this (argmin: np.bincount)
        self._overlapping = False    # a view whose elements may share memory (as_strided):
        #                              writes to it are a graph break
        self._lazy = None            # (Rows, index): a row of a loop's stacked appends, its
        #                              tensor None until read (kiln._stacked_rows)
        self._strides = "C"          # NumPy's layout, as far as known (kiln._memory_layout)
        self._maybe_copy = False     # a reshape NumPy may have copied (layout not known)
        self._maybe_copies = None    # weak references to such reshapes of this root
        self._hidden_base = False    # NumPy's base is an array kiln does not hold (as_strided's)
        self._offset = None          # a view's first element from its root's (in elements)

    # -- value and views --

    @property
    def tensor(self):
        if self._tensor is None:  # a row of a loop's appends, read now
            return self._lazy[0].row_tensor(self, self._lazy[1])
        if isinstance(self._selection, TracedArray):
            self._settle_selection()
        root = self._root
        if root is not None and self._root_version != root._version:
            self._tensor = self._forward(self._root_tensor())
            self._root_version = root._version
        return self._tensor

    def _tensor_id(self):
        """The id of the tensor it holds now, for bookkeeping (the values the trace knows): a
        root's read as it is (reading an AssumedNumber's tensor commits its type)."""
        return (self._tensor if self._root is None else self.tensor).id

    def _root_tensor(self):
        """The root's value in the shape this view's functions take (root.shape = ... since)."""
        tensor = self._root.tensor
        if tuple(tensor.shape) != self._root_shape:
            tensor = backend().reshape(tensor, list(self._root_shape))
        return tensor

    def _make_view(self, tensor, forward, backward, strides=None, maybe_copy=False, offset=None):
        """A result that aliases self: writes to it update self (and self's own root).
        strides: NumPy's (kiln._memory_layout; None: not known); offset: from self's first
        element, in elements (0 by default with strides). maybe_copy: NumPy may have copied
        instead (a reshape of unknown layout): writes through it, or to its root while it
        lives, are a graph break."""
        self._check_plain("taking a view")
        view = TracedArray(self._context, tensor)
        view._read_only, view._overlapping = self._read_only, self._overlapping
        view._hidden_base = self._hidden_base
        view._strides, view._maybe_copy = strides, maybe_copy or self._maybe_copy
        start = 0 if self._root is None else self._offset  # (None: not known, nor its views')
        view._offset = (None if start is None or offset is None and strides is None
                        else start + (offset or 0))
        if self._scalar and len(self.tensor.shape) == 0:
            # A NumPy scalar is immutable: NumPy views a temporary array made from it.
            view._scalar = len(tensor.shape) == 0  # np.float64(1).T is a scalar
            return view
        if self._root is None:
            view._root, view._forward, view._backward = self, forward, backward
            view._root_shape = tuple(self.tensor.shape)
        else:
            inner_forward, inner_backward = self._forward, self._backward
            view._root, view._root_shape = self._root, self._root_shape
            view._forward = lambda root: forward(inner_forward(root))
            view._backward = lambda root, value: inner_backward(
                root, backward(inner_forward(root), value))
        view._root_version = view._root._version
        if view._maybe_copy:
            root = view._root
            root._maybe_copies = [r for r in root._maybe_copies or () if r() is not None]
            root._maybe_copies.append(weakref.ref(view))
        return view

    def _assign(self, tensor):
        """Functionalised in-place update: rebinds self (and writes through to its root)."""
        if self._maybe_copy or self._maybe_copies and any(
                r() is not None for r in self._maybe_copies):  # (a copy may be writeable)
            graph_break("a write into a reshape, or into an array a reshape of it lives on, "
                        "whose memory layout kiln does not know: NumPy's reshape copies or "
                        "views depending on it")
        if self._read_only:  # NumPy's error, at the user's line, before any write
            raise ValueError(f"kiln: assignment at {user_location()}: assignment destination "
                             "is read-only")
        if self._overlapping:  # NumPy's result depends on the order it writes the elements in
            graph_break("a write through an as_strided view whose elements share memory")
        old = self.tensor
        tensor = cast(tensor, old.dtype)
        if tuple(tensor.shape) != tuple(old.shape):
            tensor = backend().broadcast_to(tensor, list(old.shape))
        if self._root is not None:
            root = self._root
            updated = self._backward(self._root_tensor(), tensor)
            if tuple(updated.shape) != tuple(root.tensor.shape):  # root.shape = ... since
                updated = backend().reshape(updated, list(root.tensor.shape))
            root._assign(updated)
            self._root_version = root._version
        self._tensor = tensor
        self._version += 1
        self._bound = None  # its new values may be past it

    def _windowed(self):
        """Whether this is a window (kiln._windows: its whole axes, the positions it holds
        moving with a loop's index), not an x[mask] selection (whose _selection is the mask)."""
        return self._selection is not None and not isinstance(self._selection, TracedArray)

    def _check_plain(self, what):
        if self._windowed():
            graph_break(f"{what} of a slice with a loop-varying bound or of an array that "
                        f"shrinks in a loop (its shape changes every iteration)")
        if self._selection is not None:
            graph_break(f"boolean mask indexing has a data-dependent shape ({what} of x[mask])")

    def _materialized_selection(self):
        return materialize(self, "boolean mask indexing has a data-dependent shape")

    def _masked(self):
        """Whether this is an x[mask] selection (held lazily as x and the mask)."""
        return isinstance(self._selection, TracedArray)

    def _unmasked(self):
        """An x[mask] selection's x, the mask not applied, for the code that computes under
        the mask (_numpy_api's masked ufuncs and reductions, x[m] = y[m]); any other tracer's
        tensor."""
        return self._tensor if self._masked() else self.tensor

    def _settle_selection(self):
        """x[mask] read as an array by code that does not know the mask: its elements, fetched
        at a graph break (their count depends on the data), and from then on a plain array,
        as NumPy's x[mask] is a copy. (Its raw x read as its value gave wrong answers.)"""
        concrete = self._materialized_selection()
        self._tensor = self._context.lift(concrete).tensor
        self._selection = None

    # -- attributes --

    @property
    def dtype(self):
        return np.dtype(self._unmasked().dtype)

    @property
    def shape(self):
        if self._windowed():
            self._check_plain("the shape")
        return tuple(self.tensor.shape)  # an x[mask] selection's, at a graph break

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        if self._masked() and self._context.in_loop():  # x[mask].size: a traced int
            return _masked_selections.size(self)
        return int(np.prod(self.shape, dtype=np.int64))

    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.itemsize)
    T = property(lambda self: self.transpose())

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return np.swapaxes(self, -1, -2)

    real = property(np.real, doc="The real part (the array itself when not complex).")
    imag = property(np.imag, doc="The imaginary part (zeros when not complex).")

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        if called_by_a_shuffle():
            # NumPy's shuffle of a non-ndarray swaps x[i], x[j] as objects: rows of a traced
            # array are views (duplicates, NumPy warns) and its draws would be the trace's.
            graph_break("shuffling a traced array in place (rng.shuffle, np.random.shuffle)")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def traced_repr(self):
        tensor = self._unmasked()
        return f"TracedArray(shape={tensor.shape}, dtype={tensor.dtype})"

    __repr__ = traced_repr  # the user's code sees its value's (kiln._tracer_operators)

    @property
    def __class__(self):
        """The class eager NumPy's value has, as isinstance() sees it from code outside kiln
        (`isinstance(x, np.ndarray)`, `isinstance(x.sum(), float)`, np.isscalar): a branch on
        it takes the path NumPy takes. kiln's own code sees TracedArray; type(x) stays it."""
        caller = sys._getframe(1)
        if is_kiln_code(caller.f_code.co_filename):
            return TracedArray
        return self.class_seen_by(caller.f_globals)

    def class_seen_by(self, globals_):
        """The class of eager NumPy's value, as code over `globals_` names it: a NumPy scalar's
        type, or np.ndarray as those names hold it (kiln._traced_classes.NDARRAY_GLOBAL)."""
        if self._scalar:
            return self._weak or self.dtype.type
        return globals_.get("__kiln_ndarray__", np.ndarray)

    # -- graph breaks: values the trace cannot know --

    def __bool__(self):
        return bool(materialize(self, "bool() of a traced array (data-dependent control flow)"))

    def __float__(self):
        return self._context.note_data_scalar(float(materialize(self, "float() of a traced array")))

    def __int__(self):
        return self._context.note_data_scalar(int(materialize(self, "int() of a traced array")))

    def __round__(self, ndigits=None):
        if not self._scalar:
            raise TypeError("type numpy.ndarray doesn't define __round__ method")
        if ndigits is None:  # a NumPy scalar's round() is a Python int
            value = materialize(self, "round() of a traced array")[()]
            return self._context.note_data_scalar(round(value))
        result = np.round(self, ndigits)  # of its own type, as NumPy's scalars round
        if self._weak is not None and isinstance(result, TracedArray):
            # a traced Python number's round(x, n) is Python's type (was np.float64)
            result._scalar, result._weak = True, self._weak
        return result

    def __index__(self):
        return operator.index(materialize(self, "a traced array used as a Python integer")[()])

    def __complex__(self):
        return complex(materialize(self, "complex() of a traced array"))

    def __array__(self, dtype=None, copy=None):
        value = materialize(self, "conversion of a traced array to a NumPy ndarray")
        return value if dtype is None else value.astype(dtype)

    def __contains__(self, value):
        return value in materialize(self, "`in` on a traced array")

    def item(self, *args):
        return self._context.note_data_scalar(
            materialize(self, "ndarray.item() of a traced array").item(*args))

    def tolist(self):
        return materialize(self, "ndarray.tolist() of a traced array").tolist()

    def tobytes(self, *args, **kwargs):
        return materialize(self, "ndarray.tobytes() of a traced array").tobytes(*args, **kwargs)

    def nonzero(self):  # (in a loop, positions selected by self != 0: kiln._masked_selections)
        return np.nonzero(self)

    # -- NumPy's dispatch protocols --

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_api.apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, function, types, args, kwargs):
        return _numpy_api.apply_function(self._context, function, args, kwargs)

    # -- indexing --

    def __getitem__(self, key):
        self._context.at()
        key = self._context.known_key(key)
        result = _indexing.getitem(self, key)
        known = self._context.known.get(self.tensor.id) if self._selection is None else None
        if known is not None and isinstance(result, TracedArray) and context_of(
                key if isinstance(key, tuple) else (key,)) is None:
            self._context.known[result.tensor.id] = lambda: known()[key]
        return result

    def __setitem__(self, key, value):
        self._context.at()
        _indexing.setitem(self, self._context.known_key(key), value)

    # -- methods (NumPy's functions with self first) --

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = check_dtype(dtype)
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dtype!r} "
                            f"according to the rule {casting!r}")
        if not copy and dtype == self.dtype:
            # NumPy's astype(copy=False) to the same dtype is the array itself, in its order
            known = _memory_layout.in_order(self, order)
            if known:
                return self
            if known is None:  # a copy or not, as the layout makes it: writes break
                return self._make_view(self.tensor, lambda root: root,
                                       lambda root, value: value, None, maybe_copy=True)
        result = traced(self._context, backend().astype(self._unmasked(), dtype.name))
        if self._selection is None:
            result._strides = _memory_layout.ordered(result, order, self)
        result._scalar = self._scalar  # a NumPy scalar's astype gives a NumPy scalar
        result._selection = self._selection  # elementwise: of x[mask] or a window, the same
        if self._bound is not None and dtype.kind in "iu" and self._bound <= np.iinfo(dtype).max:
            result._bound = self._bound
        return result

    def copy(self, order="C"):
        if not self._windowed():  # a window's copy: the whole axes, the same window
            self._check_plain("copy")
        result = traced(self._context, self.tensor)
        if self._selection is None:
            result._strides = _memory_layout.ordered(result, order, self)
        result._selection = self._selection
        result._scalar = self._scalar  # a NumPy scalar's copy is a NumPy scalar
        result._bound = self._bound
        return result

    def fill(self, value):
        # NumPy's conversion of a float into an integer array, with its errors (x.fill(nan))
        value = _indexing.stored_scalar(value, self.dtype, advanced=False)
        self._assign(to_tensor(self._context, value, self.dtype, "fill"))

    def view(self, dtype=None):
        if dtype is not None and np.dtype(dtype) != self.dtype:
            graph_break("ndarray.view with another dtype (bit reinterpretation)")
        return self._make_view(self.tensor, lambda root: root, lambda root, value: value,
                               strides_of(self))
