"""What counts as the user's code, whose helpers, modules and classes a compiled function's
environment follows (kiln._environment): not the standard library's, an installed package's,
kiln's or NumPy's."""
import sys
import sysconfig
import types

from . import _kiln
from ._graph_breaks import is_internal

# Library code (the standard library, installed packages) is not searched for helpers.
_LIBRARY_DIRECTORIES = tuple(sorted({sysconfig.get_paths()[key] for key in
                                     ("stdlib", "platstdlib", "purelib", "platlib")}))


def _plain_function(value):
    """The Python function behind a kiln.compile'd one (its globals are read like a helper's,
    and a trace calls it inlined); anything else as it is."""
    if not isinstance(value, _kiln.CompiledCall):
        return value
    fn = getattr(getattr(value, "_kiln_function", None), "fn", None)
    return fn if isinstance(fn, types.FunctionType) else value


def _is_user_function(value):
    if not isinstance(value, types.FunctionType):
        return False
    filename = value.__code__.co_filename
    return not (is_internal(filename) or filename.startswith(_LIBRARY_DIRECTORIES))


def _is_user_module(value):
    """A module of the user's (`import config`; one made at run time too): not the standard
    library's, an installed package's, kiln's or a built-in one (whose attributes a trace takes
    as constants)."""
    if not isinstance(value, types.ModuleType) or value.__name__ in sys.builtin_module_names:
        return False
    filename = getattr(value, "__file__", None) or ""
    return not (is_internal(filename) or filename.startswith(_LIBRARY_DIRECTORIES))


def _is_numpy_or_math_module(value):
    """NumPy (its submodules too) or math: a library whose functions the code names
    (np.sin, math.exp) and a test or shim may replace (unittest.mock.patch("numpy.sin"))."""
    if not isinstance(value, types.ModuleType):
        return False
    name = value.__name__
    return name in ("numpy", "math", "cmath") or name.startswith("numpy.")


def _is_user_class(value):
    """A class defined in a user's module (its attributes, `Config.scale`, read by getattr)."""
    return isinstance(value, type) and _is_user_module(sys.modules.get(value.__module__))
