"""Python's own sources of a new value on every call, as the traced function's code calls them.

A trace runs the function once and keeps what plain Python computed as constants of the graph:
`x + random.random()` or `x * time.time()` would return the first call's value on every later
call, a wrong answer without an error. np.random's draws are caught by kiln._numpy_creation;
these are the standard library's: the module-level functions of `random` (its shared
generator), the clocks of `time` (and its calendar functions given no time: `time.localtime()`),
datetime's `now()`, `utcnow()` and `today()`, os.environ, os.urandom and uuid's random
identifiers. While a trace runs they are swapped for wrappers (kiln._numpy_creation.capturing, as NumPy's creation functions
are, and names bound to them with `from random import random` by with_numpy_names): called
from the user's code they are a graph break of the driver's opaque kind (the function is traced
again on every call; kiln.GraphBreak under fullgraph=True), and return the real value. Called
from the standard library (logging's timestamps), NumPy or kiln they pass through: those do not
make the traced values."""
import collections.abc
import datetime
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


def _wrapper(label, original, current_context, reads_clock=None, depth=1):
    """`original` reporting an opaque value to the calling thread's trace when user code calls
    it (`depth` frames up; and `reads_clock(args)` says this call reads the clock, where
    given)."""
    @functools.wraps(original)
    def call(*args, **kwargs):
        context = current_context()
        if (context is not None and (reads_clock is None or reads_clock(args, kwargs))
                and _makes_traced_values(sys._getframe(depth).f_code.co_filename)):
            opaque_value(context, f"{label} gives a new value on every call")
        return original(*args, **kwargs)
    return call


def _without_time(position):
    """Whether a call of time's calendar functions has no time at `position` (`localtime()`,
    `strftime("%H")`): it reads the clock."""
    return lambda args, kwargs: len(args) <= position or args[position] is None


_CALENDAR = {"localtime": 0, "gmtime": 0, "ctime": 0, "asctime": 0, "strftime": 1}


def _clock_class(real, current_context):
    """A subclass of datetime's `real` (datetime, date) whose now(), utcnow() and today() are
    reported as _wrapper's are (a C type's methods cannot be wrapped in place); the class
    itself otherwise: isinstance and issubclass answer for `real`, and calling it makes
    `real`'s objects. (Only `type(d) is datetime.datetime` in traced code tells them apart.)"""
    class Clock(type(real)):
        def __instancecheck__(cls, instance):
            return isinstance(instance, real)

        def __subclasscheck__(cls, subclass):
            return issubclass(subclass, real)

        def __call__(cls, *args, **kwargs):
            return real(*args, **kwargs)

    def clock(name):
        method = getattr(real, name)
        wrapped = _wrapper(f"datetime.{real.__name__}.{name}", method, current_context, depth=2)
        return classmethod(lambda cls, *args, **kwargs: wrapped(*args, **kwargs))

    names = [name for name in ("now", "utcnow", "today") if hasattr(real, name)]
    return Clock(real.__name__, (real,), {"__module__": real.__module__,
                                          **{name: clock(name) for name in names}})


_RANDOM_NAMES = [name for name in dir(random) if not name.startswith("_")
                 and getattr(getattr(random, name), "__self__", None) is random._inst
                 and name not in ("seed", "getstate", "setstate")]
_TIME_NAMES = [name for name in ("time", "time_ns", "perf_counter", "perf_counter_ns",
                                 "monotonic", "monotonic_ns", "process_time", "process_time_ns",
                                 "thread_time", "thread_time_ns") if hasattr(time, name)]
_NAMESPACES = ((random, _RANDOM_NAMES), (time, _TIME_NAMES), (os, ["urandom"]),
               (uuid, ["uuid1", "uuid4"]))


# The files of the code between a user's read of os.environ and its __getitem__ (frozen modules)
_ENVIRONMENT_READERS = {collections.abc.Mapping.get.__code__.co_filename,
                        os.getenv.__code__.co_filename}


class _Environment(collections.abc.MutableMapping):
    """os.environ while a trace runs: the process's environment, which user code reading or
    writing it (`os.environ.get("SCALE")`, `os.getenv` reads it) is told to the trace as an
    opaque value; everything else passes through to os.environ."""

    def __init__(self, environ, current_context):
        self._environ, self._current_context = environ, current_context

    def _used(self):
        context = self._current_context()
        if context is None:
            return
        frame = sys._getframe(2)  # past the mapping's own methods (get, items) and os.getenv
        while frame is not None and frame.f_code.co_filename in _ENVIRONMENT_READERS:
            frame = frame.f_back
        if frame is not None and _makes_traced_values(frame.f_code.co_filename):
            opaque_value(context, "os.environ is the process's, read at every call")

    def __getitem__(self, key):
        self._used()
        return self._environ[key]

    def __setitem__(self, key, value):
        self._used()
        self._environ[key] = value

    def __delitem__(self, key):
        self._used()
        del self._environ[key]

    def __iter__(self):
        self._used()
        return iter(self._environ)

    def __len__(self):
        self._used()
        return len(self._environ)

    def __getattr__(self, name):  # copy(), encodekey and the rest of os._Environ's own
        return getattr(self._environ, name)


def swapped(current_context):
    """(namespace, its wrappers while a trace runs, its own functions) for each namespace, the
    wrappers asking `current_context()` for the trace of the calling thread."""
    result = []
    for namespace, names in _NAMESPACES:
        originals = {name: getattr(namespace, name) for name in names}
        wrappers = {name: _wrapper(f"{namespace.__name__}.{name}", original, current_context)
                    for name, original in originals.items()}
        result.append((namespace, wrappers, originals))
    calendar = {name: getattr(time, name) for name in _CALENDAR if hasattr(time, name)}
    result.append((time, {name: _wrapper(f"time.{name}", original, current_context,
                                         _without_time(_CALENDAR[name]))
                          for name, original in calendar.items()}, calendar))
    result.append((os, {"environ": _Environment(os.environ, current_context)},
                   {"environ": os.environ}))
    classes = {"datetime": datetime.datetime, "date": datetime.date}
    result.append((datetime, {name: _clock_class(real, current_context)
                              for name, real in classes.items()}, classes))
    return tuple(result)
