"""Python's own sources of a new value on every call, as the traced function's code calls them.

A trace runs the function once and keeps what plain Python computed as constants of the graph:
`x + random.random()` or `x * time.time()` would return the first call's value on every later
call, a wrong answer without an error. np.random's draws are caught by kiln._numpy_creation;
these are the standard library's: the module-level functions of `random` (its shared
generator), the clocks of `time`, os.urandom and uuid's random identifiers. While a trace runs
they are swapped for wrappers (kiln._numpy_creation.capturing, as NumPy's creation functions
are, and names bound to them with `from random import random` by with_numpy_names): called
from the user's code they are a graph break of the driver's opaque kind (the function is traced
again on every call; kiln.GraphBreak under fullgraph=True), and return the real value. Called
from the standard library (logging's timestamps), NumPy or kiln they pass through: those do not
make the traced values."""
import functools
import os
import random
import sys
import sysconfig
import time
import uuid

from ._graph_breaks import is_internal, opaque_value

_STANDARD_LIBRARY = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
_INSTALLED = tuple(os.path.realpath(sysconfig.get_paths()[key]) + os.sep
                   for key in ("purelib", "platlib"))


@functools.lru_cache(maxsize=1024)
def _makes_traced_values(filename):
    """Whether code in `filename` is the user's: not kiln's or NumPy's, and not the standard
    library's (installed packages are the user's, even where they lie inside its folder)."""
    if is_internal(filename) or filename.startswith("<frozen"):
        return False
    path = os.path.realpath(filename)
    return not path.startswith(_STANDARD_LIBRARY) or path.startswith(_INSTALLED)


def _wrapper(label, original, current_context):
    @functools.wraps(original)
    def call(*args, **kwargs):
        context = current_context()
        if context is not None and _makes_traced_values(sys._getframe(1).f_code.co_filename):
            opaque_value(context, f"{label} gives a new value on every call")
        return original(*args, **kwargs)
    return call


_RANDOM_NAMES = [name for name in dir(random) if not name.startswith("_")
                 and getattr(getattr(random, name), "__self__", None) is random._inst
                 and name not in ("seed", "getstate", "setstate")]
_TIME_NAMES = [name for name in ("time", "time_ns", "perf_counter", "perf_counter_ns",
                                 "monotonic", "monotonic_ns", "process_time", "process_time_ns",
                                 "thread_time", "thread_time_ns") if hasattr(time, name)]
_NAMESPACES = ((random, _RANDOM_NAMES), (time, _TIME_NAMES), (os, ["urandom"]),
               (uuid, ["uuid1", "uuid4"]))


def swapped(current_context):
    """(namespace, its wrappers while a trace runs, its own functions) for each namespace, the
    wrappers asking `current_context()` for the trace of the calling thread."""
    result = []
    for namespace, names in _NAMESPACES:
        originals = {name: getattr(namespace, name) for name in names}
        wrappers = {name: _wrapper(f"{namespace.__name__}.{name}", original, current_context)
                    for name, original in originals.items()}
        result.append((namespace, wrappers, originals))
    return tuple(result)
