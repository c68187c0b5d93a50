"""kiln: a tensor compiler with a C++ core. `kiln.compile(fn)` captures a NumPy function as a
graph, fuses it into native kernels (C++/OpenMP), caches them in memory and on disk, and runs them
with a few microseconds of overhead per call.

    import kiln, numpy as np

    @kiln.compile
    def f(x, y):
        return np.sin(x) + np.cos(y)

See kiln.explain, kiln.config, kiln.set_logs, kiln.list_mode_options and kiln.list_options.
"""
import importlib

from . import _kiln
from ._config import config
from ._device import current_device, device

# The NumPy front end (kiln.compile and what it imports: the tracer, the loop capture, ~150
# modules, 0.35 s) is imported on first use, not by `import kiln`: the torch backend
# (kiln.torch), which torch.compile(backend="kiln") imports, needs none of it.
_LAZY = {"compile": "._compile", "reset": "._compile", "CompilerError": "._compile",
         "GraphBreak": "._compile", "Unsupported": "._compile", "wrap_numpy": "._wrap_numpy",
         "explain": "._explain"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name.startswith("_") and not name.startswith("__"):  # kiln._tracer etc., as before
        try:
            return importlib.import_module("." + name, __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__version__ = _kiln.__version__
# An index out of bounds where eager torch raises IndexError or RuntimeError by the tensor's
# layout (index_select under backend="kiln"): a subclass of both.
IndexOutOfRange = _kiln.IndexOutOfRange

# KILN_LOGS naming an unknown channel is an error at import, as TORCH_LOGS is in torch.
_kiln.check_log_environment()


def set_logs(channels=""):
    """Turns KILN_LOGS channels on from Python: a comma list ("graph,output_code"), "all",
    "all,-perf", or "" for none; an unknown channel is a ValueError. Channels:
    kiln._kiln.log_channels() (graph, passes, schedule, output_code, cache, perf, graph_breaks,
    recompiles, guards). Logs go to stderr as "[kiln:<channel>] ..."."""
    if not isinstance(channels, str):
        channels = ",".join(channels)
    _kiln.set_log_channels(channels)


def list_mode_options():
    """The settings behind each mode word (default, reduce-overhead, max-autotune, ...)."""
    return _kiln.list_mode_options()


def list_options():
    """Every compile option (kiln.compile(options={...})) and its meaning."""
    return _kiln.list_options()


__all__ = ["compile", "wrap_numpy", "device", "current_device", "explain", "reset", "config", "set_logs", "list_mode_options",
           "list_options", "GraphBreak", "Unsupported", "CompilerError",
           "IndexOutOfRange"]
