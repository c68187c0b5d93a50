"""A traced function's names that hold NumPy's creation functions (and Python's sources of new
values, the builtin `type`, np.ndarray) swapped for the tracer's versions, however the user's
code reached them: a global, a dict it holds, a closure cell, a default value, a helper's own
globals."""
import types

from . import _pytree
from ._code_names import _global_names, _names
from ._environment import _function
from ._user_code import _is_user_function
from ._trace_stores import _global_stores


def with_numpy_names(function, tracer, memo=None):
    """`function` with its global names, the dicts they hold, closure cells and default values
    that hold NumPy's creation functions (`from numpy import zeros`, `OPS = {"z": np.zeros}`)
    pointing at the tracer's versions: NumPy functions are recognised by identity, however the
    user's code reached them (np.zeros itself is swapped in the numpy namespace while tracing),
    and so are Python's sources of new values (`from time import perf_counter`,
    kiln._impure_calls); the helpers it reaches through them get theirs too (`memo`: id of a
    helper -> its version)."""
    table = getattr(tracer, "creation_substitutes", dict)()
    method_of = function.__self__ if isinstance(function, types.MethodType) else None
    fn = function.__func__ if method_of is not None else function
    code, globals_ = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if not table or code is None or globals_ is None:
        return function
    memo = {id(fn): fn} if memo is None else memo
    names = _names(code)

    def swapped(value):
        entry = table.get(id(value))
        if entry is not None and entry[0] is value:
            # a module (numpy) only where the code reads an attribute its stand-in replaces
            if isinstance(value, types.ModuleType) and not any(
                    name in vars(entry[1]) for name in names if not name.startswith("__")):
                return value
            return entry[1]
        if type(value) is dict and any(swapped(item) is not item for item in value.values()):
            return {key: swapped(item) for key, item in value.items()}
        if _is_user_function(value) and not _global_stores(value.__code__):
            # A helper's own names too (`from time import perf_counter` in its module); one
            # that rebinds a module global keeps its module's dict (GlobalStores reads it).
            if id(value) not in memo:
                memo[id(value)] = value  # a helper reaching itself: the original there
                memo[id(value)] = with_numpy_names(value, tracer, memo)
            return memo[id(value)]
        return value
    changes = {name: swapped(globals_[name]) for name in _global_names(code)
               if name in globals_}
    changes = {name: value for name, value in changes.items() if value is not globals_[name]}
    # builtins it names (type(x) of a traced array is NumPy's class), and the np.ndarray its
    # swapped names hold, which x.__class__ and type(x) answer with
    changes.update({name: value for name, value in tracer.traced_builtins().items()
                    if name in _global_names(code) and name not in globals_})
    ndarray_global, ndarray = tracer.ndarray_global()
    if any(value is ndarray or getattr(value, "ndarray", None) is ndarray
           for value in changes.values() if isinstance(value, (type, types.ModuleType))):
        changes[ndarray_global] = ndarray
    cells = fn.__closure__ or ()
    new_cells = tuple(types.CellType(swapped(cell.cell_contents)) if _pytree.cell_holds(cell) and
                      swapped(cell.cell_contents) is not cell.cell_contents else cell
                      for cell in cells)
    # default values too (`def f(x, make=np.zeros)`): `make is np.zeros` holds, as in NumPy
    defaults = fn.__defaults__ and tuple(swapped(value) for value in fn.__defaults__)
    kwdefaults = fn.__kwdefaults__ and {k: swapped(v) for k, v in fn.__kwdefaults__.items()}
    if (not changes and all(new is old for new, old in zip(new_cells, cells))
            and defaults == fn.__defaults__ and kwdefaults == fn.__kwdefaults__):
        return function
    rebuilt = _function(fn, {**globals_, **changes}, new_cells or None)
    rebuilt.__defaults__, rebuilt.__kwdefaults__ = defaults, kwdefaults
    return rebuilt if method_of is None else types.MethodType(rebuilt, method_of)
