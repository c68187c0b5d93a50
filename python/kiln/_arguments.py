"""Which arguments kiln.compile traces: arrays it can read in place (else the call runs
eagerly), values that hold arrays where no guard would see them change, and the Python numbers
that can be dynamic (0-d inputs of the graph)."""
import collections.abc
import functools
import types

import numpy as np

from . import _kiln, _pytree
from ._argument_reads import unwatched_read
from ._tracer import SUPPORTED_DTYPES  # (longdouble's kind and itemsize look like complex128's)


def is_unsupported_array(leaf):
    """An ndarray the C++ side cannot borrow: such a call runs eagerly."""
    if not isinstance(leaf, np.ndarray):
        return False
    if type(leaf) is not np.ndarray:
        return True
    return (leaf.dtype.name not in SUPPORTED_DTYPES or not leaf.dtype.isnative
            or not leaf.flags.aligned or any(stride % leaf.itemsize for stride in leaf.strides))


def is_iterator(leaf):
    """An iterator (`iter(values)`, itertools.count(), a generator, a file): a call consumes
    it, which no guard can see (it is equal to itself however far it went), so a trace would
    fix the values it drew in the graph; such a call runs eagerly."""
    return isinstance(leaf, collections.abc.Iterator)


def is_buffer_view(leaf):
    """A memoryview: its bytes change with the buffer it views (a bytearray written), which
    no guard reads (it is equal to itself), so a trace would fix them in the graph; such a call
    runs eagerly."""
    return type(leaf) is memoryview


_SCALAR_LEAVES = (np.ndarray, float, int, bool, complex, str, bytes, type(None))


def too_large_to_guard(leaf):
    """A static holding a mutable container that a guard's snapshot keeps as itself (more
    than 256 items in all, or nested more than 16 levels: src/python/guard_states.h): it is
    equal to itself whatever was changed in it, so a trace would fix its values in the graph;
    such a call runs eagerly."""
    return type(leaf) not in _SCALAR_LEAVES and not _kiln.snapshot_complete(leaf)


def holds_arrays(leaf):
    """A value that is not an array or a container kiln traces (a plain object, a
    SimpleNamespace, a dataclass in a closure) but holds ndarrays, however deep. Modules,
    classes and functions are read as globals are (their arrays are found by name), never this
    way; a function written in C bound to an object (w.__add__, w.sum, a dict's get) is not
    such a function: the object it is bound to is looked at."""
    if isinstance(leaf, types.BuiltinFunctionType) and _pytree.bound_to_module_or_class(leaf):
        return False
    if type(leaf) is np.ndarray or isinstance(leaf, (
            str, bytes, int, float, complex, types.ModuleType, type, types.FunctionType,
            types.MethodType, functools.partial)):
        return False
    return _pytree.holds_array(leaf, lambda value: isinstance(value, np.ndarray))


# What makes a call run eagerly, about a leaf of its arguments and environment, and why.
_EAGER_LEAVES = (
    (is_unsupported_array, "an argument is an array kiln cannot read in place (dtype, byte "
                           "order, alignment or ndarray subclass)"),
    (too_large_to_guard, "an argument, closure variable or global is a mutable container too "
                         "large to check at each call (a change made to it in place would go "
                         "unseen)"),
    (is_iterator, "an argument, closure variable or global is an iterator, which each call "
                  "advances"),
    (is_buffer_view, "an argument, closure variable or global is a memoryview, whose bytes "
                     "change with the buffer it views"),
)


def eager_reason(leaves, environment, values, reads):
    """Why a kiln.compile call with these leaves (the flattened arguments and `values`, the
    Environment's current values; `reads`, what argument leaves read beyond themselves:
    _argument_reads) must run eagerly, or None: a value no guard can watch, or whose arrays
    would be constants of the graph."""
    if environment.unwatched_read is not None:
        return environment.unwatched_read
    for is_unwatched, reason in _EAGER_LEAVES:
        if any(is_unwatched(leaf) for leaf in leaves):
            return reason
    unwatched = unwatched_read(reads)
    if unwatched is not None:
        return (f"a function or object passed as an argument reads {unwatched}, a change "
                "to it unseen")
    held_in_place = environment.in_place_arrays(values)
    if held_in_place is not None:
        return (f"{held_in_place} is an array read from its object itself (a class, a "
                "threading.local, a helper's module): it would be a constant of the graph, a "
                "change to it unseen")
    # Objects whose attributes are inputs: global objects the function reads attributes of.
    read_through = {id(value) for _, _, value in environment.objects}
    if any(holds_arrays(leaf) and id(leaf) not in read_through for leaf in leaves):
        # Its arrays would be constants of the graph, and its guard the object itself: an
        # array changed in place, or one assigned to it, would go unseen.
        return ("an argument, closure variable or attribute holds arrays in an object kiln "
                "does not trace (an object reached twice or through itself, one with "
                "__slots__ or computed attributes)")
    if any(globals_.get(name) is not value for globals_, name, value in environment.objects):
        # Those reads (made when kiln.compile ran) still name the old object's.
        return "a global object the function reads attributes of was rebound"
    return None


# NumPy 2 promotes Python numbers as weak scalars whatever their value (NEP 50); NumPy 1.x by
# value (float32 array * 1e300 is float64), so a number's value decides the graph there.
WEAK_PYTHON_NUMBERS = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
DYNAMIC_DTYPES = {float: np.float64, int: np.int64}


def dynamic_number(value):
    """Whether `value` can be a dynamic number: a float, or an int in int64 (bools, bigger
    ints and other types stay static; the guard's Number item agrees)."""
    return type(value) is float or type(value) is int and -2**63 <= value < 2**63
