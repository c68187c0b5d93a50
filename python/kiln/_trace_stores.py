"""What a trace rebinds that NumPy would rebind at every call: module globals (`global G;
G = ...`) and closure cells (`nonlocal n; n += 1`), as they were before it, and what it stores
where kiln does not see (a functools.lru_cache's values); such a trace runs eagerly
(kiln._compile)."""
import dis
import functools
import types

from . import _pytree


_STORES = frozenset(("STORE_GLOBAL", "DELETE_GLOBAL"))
_CELL_STORES = frozenset(("STORE_DEREF", "DELETE_DEREF"))
_MISSING = object()


def _global_stores(code, opnames=_STORES):
    """[(name, "file:line")] of the module globals `code` (and the code nested in it) rebinds
    or deletes (`global G; G = ...`); with _CELL_STORES, of its cell variables."""
    stores, line = [], code.co_firstlineno
    for instruction in dis.get_instructions(code):
        line = instruction.starts_line or line
        if instruction.opname in opnames:
            stores.append((instruction.argval, f"{code.co_filename}:{line}"))
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            stores.extend(_global_stores(constant, opnames))
    return stores


class CellStores:
    """The closure cells of the function a trace runs (the caller's, or fresh ones holding
    tracers, Environment.rebuilt) as they were before it. A trace that rebinds one (`nonlocal
    n; n += 1`) wrote a fresh cell the caller never sees, or the caller's once for every run
    of the graph; NumPy rebinds it at every call, so such a trace runs eagerly (changed())."""

    def __init__(self, function):
        while isinstance(function, (functools.partial, types.MethodType)):
            function = getattr(function, "func", None) or function.__func__
        code = getattr(function, "__code__", None)
        cells = getattr(function, "__closure__", None) or ()
        self.code = code
        self.saved = [(cell, name, _contents(cell))
                      for cell, name in zip(cells, code.co_freevars if code else ())]

    def changed(self):
        """(name, location) of the first cell the trace rebound, or None; each is put back as
        it was (the eager run that follows rebinds the caller's)."""
        first = None
        for cell, name, before in self.saved:
            if _contents(cell) is before:
                continue
            if first is None:
                stores = [where for stored, where in _global_stores(self.code, _CELL_STORES)
                          if stored == name]
                first = (name, stores[0] if stores else "")
            if before is _MISSING:
                del cell.cell_contents
            else:
                cell.cell_contents = before
        return first


def _contents(cell):
    return cell.cell_contents if _pytree.cell_holds(cell) else _MISSING


class GlobalStores:
    """The module globals a trace may rebind, as they were before it. The trace runs over
    copies of the globals (Environment.rebuilt), where a store is lost, or over the module's
    own, where it leaves a tracer: either way NumPy's behaviour (the module's variable assigned
    at each call) is not what the graph does, so such a trace runs eagerly (changed())."""

    def __init__(self, stores, copies, globals_ids=(), location=""):
        # (the module's dict, the dict the trace runs over, name, location, value before)
        self.saved = []
        for globals_, name, location_of_store in stores:
            running = copies.get(id(globals_), globals_)
            self.saved.append((globals_, running, name, location_of_store,
                               running.get(name, _MISSING)))
        # The globals' copies whole: a store no instruction names (`globals()["G"] = y`)
        # changes one (not the copies of objects' attributes, which a trace may assign).
        self.copies = [(copy, dict(copy)) for key, copy in copies.items() if key in globals_ids]
        self.location = location

    def changed(self):
        """(name, location) of the first global the trace rebound, or None; the module's own
        globals are put back as they were (the eager run that follows assigns them)."""
        first = None
        for globals_, running, name, location, before in self.saved:
            if running.get(name, _MISSING) is before:
                continue
            first = first or (name, location)
            if running is globals_:
                if before is _MISSING:
                    globals_.pop(name, None)
                else:
                    globals_[name] = before
        for copy, before in self.copies:
            if first is not None:
                break
            changed = [name for name in copy.keys() | before.keys()
                       if copy.get(name, _MISSING) is not before.get(name, _MISSING)]
            if changed:
                first = (sorted(changed)[0], self.location)
        return first



class MemoStores:
    """The functools.lru_cache wrappers the function names (Environment.memoized) and how many
    misses each had before a trace. One that missed during it (`buf(n)` making np.zeros(n))
    stored the trace's value where the caller's later calls look, which no guard or graph
    sees: later calls reused one graph where NumPy's shared, changing array accumulated, then
    read a tracer of an ended trace."""

    def __init__(self, wrappers, cached_properties=(), attributes=None):
        self.saved = [(wrapper, wrapper.cache_info().misses) for wrapper in wrappers]
        # self's cached properties not computed yet (`@cached_property def buf`): the trace
        # computes them into self's stand-in, each run of the graph would assign a new value
        # where NumPy's later calls share the first one
        self.uncached = [name for name in cached_properties
                         if attributes is not None and name not in attributes]

    def changed(self):
        """The name of the first cache that stored a value during the trace (or may have: a
        cached property of self not computed before it), or None; each lru_cache that did is
        emptied (the eager run that follows fills it with NumPy's values)."""
        first = self.uncached[0] if self.uncached else None
        for wrapper, misses in self.saved:
            if wrapper.cache_info().misses != misses:
                wrapper.cache_clear()
                first = first or getattr(wrapper, "__qualname__", repr(wrapper))
        return first
