"""np.errstate and np.seterr while a trace runs. kiln's kernels compute IEEE values without
checking for floating-point errors, so a function that asks NumPy to raise FloatingPointError,
call a handler or log on one (`with np.errstate(divide="raise"):`) runs eagerly, where NumPy
checks; so does one that makes NumPy's RuntimeWarning an error (`warnings.simplefilter("error")`,
whose `except RuntimeWarning:` would never run), or records the warnings
(`warnings.catch_warnings(record=True)` in the user's code: its list would stay empty). A call
made while such a state is already set runs eagerly before any trace (the compiled call
checks: src/python/numpy_errors.h). Only the thread tracing is refused: another thread setting
these meanwhile is not tracing."""
import sys
import warnings

import numpy as np

from ._graph_breaks import GraphBreakSignal, is_internal, user_location

_CHECKED_MODES = ("raise", "call", "log")
_CONDITIONS = ("all", "divide", "over", "under", "invalid")


def _checked_modes(settings):
    return any(isinstance(settings.get(condition), str) and settings[condition] in _CHECKED_MODES
               for condition in _CONDITIONS)


def _raised_warnings(action, category):
    return action == "error" and isinstance(category, type) and issubclass(RuntimeWarning,
                                                                           category)


def swapped(current_context):
    """(namespace, its wrappers while a trace runs, its own functions) for numpy's error state
    and Python's warnings filters, the wrappers asking `current_context()` whether the calling
    thread traces."""
    originals = {"errstate": np.errstate, "seterr": np.seterr}
    filters = {"simplefilter": warnings.simplefilter, "filterwarnings": warnings.filterwarnings,
               "catch_warnings": warnings.catch_warnings}

    def refuse(name, reason):
        # only the user's code: kiln and NumPy record warnings themselves (kiln gives NumPy's
        # warnings at the user's line, kiln._object_operands)
        caller = sys._getframe(2).f_code.co_filename
        if current_context() is not None and not is_internal(caller):
            raise GraphBreakSignal(f"{name} {reason}, which kiln's kernels do not check",
                                   user_location())

    class errstate(np.errstate):  # noqa: N801 - stands in for np.errstate (isinstance)
        __doc__ = np.errstate.__doc__

        def __init__(self, **settings):
            if _checked_modes(settings):
                refuse("np.errstate", "asks NumPy to raise, call or log on floating-point errors")
            super().__init__(**settings)

    def seterr(**settings):
        if _checked_modes(settings):
            refuse("np.seterr", "asks NumPy to raise, call or log on floating-point errors")
        return originals["seterr"](**settings)

    def simplefilter(action, category=Warning, *args, **kwargs):
        if _raised_warnings(action, category):
            refuse("warnings.simplefilter", "makes NumPy's RuntimeWarning an error")
        return filters["simplefilter"](action, category, *args, **kwargs)

    def filterwarnings(action, message="", category=Warning, *args, **kwargs):
        if _raised_warnings(action, category):
            refuse("warnings.filterwarnings", "makes NumPy's RuntimeWarning an error")
        return filters["filterwarnings"](action, message, category, *args, **kwargs)

    class catch_warnings(filters["catch_warnings"]):  # noqa: N801 - (isinstance)
        __doc__ = filters["catch_warnings"].__doc__

        def __init__(self, *, record=False, action=None, category=Warning, **kwargs):
            if record:
                refuse("warnings.catch_warnings(record=True)", "records the RuntimeWarnings "
                       "NumPy emits")
            if _raised_warnings(action, category):
                refuse("warnings.catch_warnings", "makes NumPy's RuntimeWarning an error")
            super().__init__(record=record, action=action, category=category, **kwargs)

    for wrapper, module in ((errstate, "numpy"), (seterr, "numpy"), (simplefilter, "warnings"),
                            (filterwarnings, "warnings"), (catch_warnings, "warnings")):
        wrapper.__module__, wrapper.__qualname__ = module, wrapper.__name__
    return ((np, {"errstate": errstate, "seterr": seterr}, originals),
            (warnings, {"simplefilter": simplefilter, "filterwarnings": filterwarnings,
                        "catch_warnings": catch_warnings}, filters))
