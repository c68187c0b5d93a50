"""np.errstate and np.seterr while a trace runs. kiln's kernels compute IEEE values without
checking for floating-point errors, so a function that asks NumPy to raise FloatingPointError,
call a handler or log on one (`with np.errstate(divide="raise"):`) runs eagerly, where NumPy
checks. A call made while such a state is already set runs eagerly before any trace (the
compiled call checks: src/python/numpy_errors.h)."""
import numpy as np

from ._graph_breaks import GraphBreakSignal, user_location

_CHECKED_MODES = ("raise", "call", "log")
_CONDITIONS = ("all", "divide", "over", "under", "invalid")


def _refuse_checked_modes(name, settings):
    if any(isinstance(settings.get(condition), str) and settings[condition] in _CHECKED_MODES
           for condition in _CONDITIONS):
        raise GraphBreakSignal(f"np.{name} asks NumPy to raise, call or log on floating-point "
                               "errors, which kiln's kernels do not check", user_location())


class errstate(np.errstate):  # noqa: N801 - stands in for np.errstate (a subclass: isinstance)
    __doc__ = np.errstate.__doc__

    def __init__(self, **settings):
        _refuse_checked_modes("errstate", settings)
        super().__init__(**settings)


def seterr(**settings):
    _refuse_checked_modes("seterr", settings)
    return ORIGINALS["seterr"](**settings)


errstate.__module__ = seterr.__module__ = "numpy"
ORIGINALS = {"errstate": np.errstate, "seterr": np.seterr}
WRAPPERS = {"errstate": errstate, "seterr": seterr}
