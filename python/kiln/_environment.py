"""What a compiled function reads besides its arguments: the globals its code names (nested
code objects such as comprehensions and lambdas included), the arrays held by globals of the
Python helper functions it reaches through them (transitively), the attributes it names of the
user's modules and classes it reaches (`config.scale`, `Config.W`), and its closure cells.

The C++ GuardedCache reads these at every call: arrays become graph inputs and other values
guards, so an array rebound or mutated between calls is seen, as it would be by eager NumPy.
To trace, the function and the helpers it reaches are rebuilt over copies of their globals in
which those values are replaced by tracers (`rebuilt`).
"""
import functools
import inspect
import sys
import types

import numpy as np

from . import _pytree
from ._stand_ins import (Attributes, _has_slots, _is_plain_object, _slot_names, _stand_in,
                         _with_methods)
from ._code_names import (_attribute_getter, _class_data, _class_names, _class_value,
                          _global_names, _imported_names, _member_function, _names,
                          _names_read, _public_names, _reads_computed_names,
                          _unwatched_namespace_read)
from ._computed_attributes import computed_attribute_read
from ._environment_objects import (object_methods, read_class_members, read_class_of,
                                   read_held_items, read_held_objects, read_nested_modules)
from ._environment_reads import _attributes_read, _bound_object, _unbound_name_reads
from ._trace_stores import _CELL_STORES, _global_stores
from ._user_code import (_is_numpy_or_math_module, _is_user_class, _is_user_function,
                         _is_user_module, _plain_function)

class Environment:
    def __init__(self, fn):
        # functools.partial(f, w, s=2): f is read as the function, and the partial's arguments
        # at each call (an array among them changed in place, a keyword set, is seen).
        self.partial = fn if isinstance(fn, functools.partial) else None
        if self.partial is not None:
            fn = _plain_function(fn.func)
        # A bound method is rebuilt from its function and bound again (one of a function
        # without Python code, types.MethodType(np.add, w), as a C function bound to w).
        python_method = (isinstance(fn, types.MethodType)
                         and getattr(fn.__func__, "__code__", None) is not None)
        self.bound_to = fn.__self__ if python_method else None
        fn = fn.__func__ if python_method else fn
        self.fn = fn
        self.reads = []      # (globals dict, name, label), in the order of values()
        self.links = []      # (globals dict, name, helper function) to rebind when tracing
        self.methods = []    # (name, function) of the methods of self reached
        self.objects = []    # (globals dict, name, object) whose attributes are read
        self.in_place_reads = []  # indices in reads of attributes the trace reads in place
        self.cell_helpers = set()  # id() of user functions held in closure cells
        self.global_stores = []  # (globals dict, name, location) the code may rebind
        self.partials = []  # (globals dict, name, partial) whose arguments are read
        self.memoized = []  # functools.lru_cache wrappers the code names (kiln._trace_stores)
        self.cached_properties = []  # names of self's functools.cached_property the code reads
        self.globals_ids = set()  # id() of the globals dicts of fn and its helpers
        self.codes = []  # (function, its __code__) of fn and the helpers it reaches
        self.classes = []  # (object, its class) of the objects whose class members are read
        self.unwatched_read = None  # why fn reads module globals no guard can watch
        code, globals_ = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
        if code is None or globals_ is None:  # builtins, callable objects: arguments only
            self.cells, self.cell_names = None, []
            # ...and what they are given or bound to, read at each call as a Python
            # function's are (partial(np.add, w), an array's w.__add__: w changed in place
            # was a constant of the graph, the result stale)
            self._read_partial()
            if _bound_object(fn) is not None:
                self.reads.append((fn, "__self__", f"the object of {fn.__name__}"))
            elif (not isinstance(getattr(type(fn), "__call__", None), types.FunctionType)
                  and _pytree.holds_array(fn, lambda value: isinstance(value, np.ndarray))):
                # operator.methodcaller("dot", w): arrays in C state no read reaches
                self.unwatched_read = (f"the {type(fn).__name__} compiled holds arrays kiln "
                                       "cannot read at each call")
            return
        self.cells, self.cell_names = fn.__closure__, list(code.co_freevars)
        self.reads = [(globals_, name, f"global '{name}'") for name in _global_names(code)]
        self._read_partial()
        # Default values are read at each call too (by getattr: a default dict or array
        # changed in place, or __defaults__ assigned, is seen as a changed argument would be).
        for name, label in (("__defaults__", "default arguments"),
                            ("__kwdefaults__", "keyword-only defaults")):
            if getattr(fn, name) is not None:
                self.reads.append((fn, name, f"{fn.__qualname__}'s {label}"))
        # A method's instance attributes (self.w) are read like globals, from self.__dict__,
        # and its __slots__ attributes by getattr; a classmethod's class (its __dict__ a
        # mappingproxy) is not read: fixed at the trace.
        self.attributes = (self.bound_to.__dict__ if _is_plain_object(self.bound_to)
                           else None)
        self.slots = _slot_names(self.bound_to) if _has_slots(self.bound_to) else {}
        self._find_helpers(fn)

    def _read_partial(self):
        if self.partial is not None:
            self.reads += [(self.partial, "args", "the partial's arguments"),
                           (self.partial, "keywords", "the partial's keywords")]

    def _find_helpers(self, fn):
        """Helpers fn reaches through its globals, and methods through self (transitively):
        the arrays their globals hold, and the attributes of self they name, are read too."""
        seen, pending = {id(fn)}, [fn]
        read = {(id(g), name) for g, name, _ in self.reads}
        owner = type(self.bound_to)

        def add_read(globals_, name, label):
            if (id(globals_), name) not in read:
                read.add((id(globals_), name))
                self.reads.append((globals_, name, label))

        klass = (self.bound_to if isinstance(self.bound_to, type) else type(self.bound_to))
        reads_class = self.bound_to is not None and _is_user_class(klass)

        def add_self_read(name):
            # self.eps, type(self).table, cls.scale: a class attribute, read from the class
            # itself as Config.scale is (a trace read it once: later calls kept it), and from
            # self's own attributes, which shadow it (`model.eps = 0.1` set after the trace;
            # `del model.eps` revealing it)
            class_data = reads_class and _class_data(klass, name)
            if class_data:
                add_read(klass, name, f"{klass.__name__}.{name}")
                self._read_in_place(klass)
            if self.attributes is not None and (class_data or name in self.attributes):
                add_read(self.attributes, name, f"self.{name}")
            elif name in self.slots:
                add_read(self.bound_to, self.slots[name], f"self.{name}")
            else:
                return class_data
            return True

        if reads_class and klass is not self.bound_to:
            read_class_of(self, self.bound_to, "self", add_read)
        reads_self = self.attributes is not None or bool(self.slots)
        unlinked = set()  # ids of helpers the trace calls as they are (_indirect_helpers)
        reaches = {}      # id of a helper -> the helpers it reaches through its globals
        processed = []
        while pending:
            function = pending.pop()
            processed.append(function)
            # Its code is read at each call too: one replaced in place (IPython's autoreload
            # of an edited function) misses every entry compiled from the old (code_replaced).
            self.codes.append((function, function.__code__))
            add_read(function, "__code__", f"{function.__qualname__}'s code")
            if function is not fn:
                # a helper's default values too (`def helper(x, w=W)`, W changed in place),
                # which its clone takes from this call's (rebuilt), as fn's are read
                for attribute, label in (("__defaults__", "default arguments"),
                                         ("__kwdefaults__", "keyword-only defaults")):
                    if getattr(function, attribute) is not None:
                        add_read(function, attribute, f"{function.__qualname__}'s {label}")
            read_held_items(self, function.__defaults__, function.__code__, add_read,
                            f"{function.__qualname__}'s default arguments")  # (cfg=[Cfg()])
            globals_ = function.__globals__
            self.global_stores += [(globals_, name, location)
                                   for name, location in _global_stores(function.__code__)]
            self.globals_ids.add(id(globals_))
            global_names = _global_names(function.__code__)
            for holder, name, label in _unbound_name_reads(function, global_names,
                                                           function is not fn):
                add_read(holder, name, label)
            self.unwatched_read = (self.unwatched_read
                                   or _unwatched_namespace_read(function.__code__, globals_))
            names = _names(function.__code__)
            if reads_self and _reads_computed_names(function.__code__):
                # getattr(self, name): every attribute and method of self may be read
                names = list(dict.fromkeys(
                    names + _public_names(self.attributes or {}) + list(self.slots)
                    + _public_names(_class_names(owner))))
            for name in names:  # self's attributes and methods by name
                method = getattr(owner, name, None) if reads_self else None
                if isinstance(method, functools._lru_cache_wrapper) and all(
                        memo is not method for memo in self.memoized):
                    self.memoized.append(method)  # an lru_cache'd method (self.table(n))
                if (isinstance(method, functools.cached_property) and self.attributes is not None
                        and name not in self.cached_properties):
                    self.cached_properties.append(name)
                if add_self_read(name):
                    pass
                elif _is_user_function(method):
                    # read at each call: the method on the class (`Model.step = other`) and
                    # self's own attribute that would shadow it (`model.step = other`)
                    if _class_value(owner, name):
                        add_read(owner, name, f"{owner.__name__}.{name}")
                        self._read_in_place(owner)
                    if self.attributes is not None:
                        add_read(self.attributes, name, f"self.{name}")
                    if id(method) not in seen:
                        seen.add(id(method))
                        pending.append(method)
                        self.methods.append((name, method))
                    # the bases' methods of that name (super().f(x)), which the trace calls
                    # as they are: the attributes of self and globals they read too
                    for base in owner.__mro__[1:-1]:
                        overridden = vars(base).get(name)
                        if _is_user_function(overridden) and id(overridden) not in seen:
                            seen.add(id(overridden))
                            pending.append(overridden)
                            unlinked.add(id(overridden))
                elif reads_self and _is_user_function(getter := (
                        _member_function(owner, name) if isinstance(
                            inspect.getattr_static(owner, name, None), (staticmethod, classmethod))
                        else _attribute_getter(inspect.getattr_static(owner, name, None)))):
                    # self.scale of a property or descriptor: its getter runs on the stand-in
                    # for self as it is, so the attributes of self it names and its globals
                    # (`return SCALE`) are read as a base-class method's are; so are a class or
                    # static method's (self.a(x), type(self).a(x): cls.k set later was unseen).
                    if id(getter) not in seen:
                        seen.add(id(getter))
                        pending.append(getter)
                        unlinked.add(id(getter))
                if name not in global_names:
                    continue
                value = _plain_function(globals_.get(name))
                if isinstance(value, functools._lru_cache_wrapper) and all(
                        memo is not value for memo in self.memoized):
                    self.memoized.append(value)
                if _is_user_function(value):
                    self.links.append((globals_, name, value))
                    # Attributes of the function named (`step.count`, `f.scale = 2` set
                    # after): read at each call, in place (its clones copy them).
                    named = _names_read(function.__code__, vars(value))
                    for attribute in named:
                        add_read(vars(value), attribute, f"{name}.{attribute}")
                    if named:
                        self._read_in_place(value)
                    reaches.setdefault(id(function), []).append(value)
                    if id(value) not in seen:
                        seen.add(id(value))
                        pending.append(value)
                    continue
                if type(value) is functools.partial and all(
                        p is not value for _, _, p in self.partials):
                    # scale = partial(np.multiply, W): its arguments read at each call, as a
                    # compiled partial's are (W changed in place, keywords set)
                    add_read(value, "args", f"{name}'s arguments")
                    add_read(value, "keywords", f"{name}'s keywords")
                    self.partials.append((globals_, name, value))
                for helper in object_methods(self, value, function.__code__, add_read):
                    unlinked.add(id(helper))
                    if id(helper) not in seen:
                        seen.add(id(helper))
                        pending.append(helper)
                if function is not fn and name in globals_:
                    # Every global a helper names is read as fn's own are: an array changed
                    # in place, a number or object rebound (EPS = 1e-3) is seen.
                    add_read(globals_, name, f"global '{name}' of {function.__qualname__}()")
                if _is_user_module(value) or _is_user_class(value):
                    self._read_namespace(function, globals_, name, value, add_read)
                elif _is_numpy_or_math_module(value):
                    self._read_library_functions(function, name, value, add_read)
                elif _is_plain_object(value) or _has_slots(value):
                    # cfg.scale, cfg.w of a global object: read like self's attributes
                    attributes = getattr(value, "__dict__", None)
                    attributes = attributes if isinstance(attributes, dict) else {}
                    slots = _slot_names(value)
                    names = _attributes_read(value, attributes, slots, function.__code__)
                    for attribute in names:
                        if attribute in attributes or attribute not in slots:
                            # (a cached_property not computed yet: absent from the dict now)
                            add_read(attributes, attribute, f"{name}.{attribute}")
                        else:
                            add_read(value, slots[attribute], f"{name}.{attribute}")
                    if names and all(o is not value for _, _, o in self.objects):
                        self.objects.append((globals_, name, value))
                        own = getattr(value, "__dict__", None)
                        set_slots = {slot: getattr(value, slot) for slot in slots.values()
                                     if hasattr(value, slot)}
                        if _stand_in(value, dict(own) if isinstance(own, dict) else None,
                                     set_slots) is value:
                            self._read_in_place(value)
                    read_class_members(self, value, function.__code__, add_read, name)
                    read_held_objects(self, value, function.__code__, add_read, name)
                else:
                    read_held_items(self, value, function.__code__, add_read, name)
            # Helpers held in closure cells (a decorator's wrapper calling the function it
            # wraps, `h = helper; lambda x: h(x)`): their globals are read too, and the trace
            # runs clones of them over the copies (rebuilt).
            for module_name in _imported_names(function.__code__):
                module = sys.modules.get(module_name)
                if _is_user_module(module):  # `import config` in the function's body
                    self._read_held_namespace(function, module, add_read)
            rebound = {name for name, _ in _global_stores(function.__code__, _CELL_STORES)}
            for cell, free_name in zip(function.__closure__ or (), function.__code__.co_freevars):
                value = _plain_function(cell.cell_contents) if _pytree.cell_holds(cell) else None
                if _pytree.cell_holds(cell) and _is_plain_object(cell.cell_contents):
                    read_class_members(self, cell.cell_contents, function.__code__, add_read,
                                             free_name)
                    read_held_objects(self, cell.cell_contents, function.__code__, add_read,
                                            free_name)
                elif _pytree.cell_holds(cell):  # objects in a closure's list (objs[0].eps)
                    read_held_items(self, cell.cell_contents, function.__code__, add_read,
                                    free_name)
                if _is_user_module(value) or _is_user_class(value):  # a closure's config module
                    self._read_held_namespace(function, value, add_read, free_name)
                if _is_user_class(value):  # its methods the code calls (Local.scale(x))
                    for helper in object_methods(self, value, function.__code__, add_read):
                        unlinked.add(id(helper))
                        if id(helper) not in seen:
                            seen.add(id(helper))
                            pending.append(helper)
                if _is_user_function(value):
                    self.cell_helpers.add(id(value))
                    reaches.setdefault(id(function), []).append(value)
                    if id(value) not in seen:
                        seen.add(id(value))
                        pending.append(value)
                elif (function is not fn and _pytree.cell_holds(cell)
                      and free_name not in rebound):
                    # A helper's own closure variable (`act = make_act(alpha)`, a loss made
                    # over weights): read at each call as fn's are, the clone a fresh cell
                    # holding it (rebuilt); one the helper rebinds stays the caller's cell.
                    add_read(cell, "cell_contents",
                             f"{function.__qualname__}'s closure variable '{free_name}'")
        if self.attributes is not None:
            for function in processed:
                read_held_objects(self, self.bound_to, function.__code__, add_read, "self")
        self._read_unlinked_in_place(processed, unlinked, reaches)

    def _note_computed_attributes(self, function, name, namespace):
        """Attributes `function` reads off `name` (a user's module or class) that no read of
        its dict finds (_computed_attributes): the call runs eagerly."""
        if self.unwatched_read is None:
            self.unwatched_read = computed_attribute_read(function.__code__, name, namespace)

    def _read_held_namespace(self, function, value, add_read, name=None):
        """The attributes `function` reads of a user's module or class it holds in a closure
        cell or imports as it runs: read at each call from the module or class itself, as a
        class's are (_read_namespace): no copy of them holds tracers."""
        self.read_held_namespace(function.__code__, value, add_read, name)

    def read_held_namespace(self, code, value, add_read, name=None, within=()):
        """_read_held_namespace for `code`; also a module or class an item of a global
        container holds (CFG["m"].k: kiln._environment_objects.read_held_value), and a module
        another holds (config.sub.k), read in place as a held one is."""
        attributes = vars(value)
        is_module = isinstance(value, types.ModuleType)
        if self.unwatched_read is None:
            self.unwatched_read = computed_attribute_read(
                code, name or getattr(value, "__name__", "").split(".")[0], value)
        for attribute in _names_read(code, attributes):
            # a class's functions and staticmethods too (one replaced on a class a container
            # holds, CFG["K"].h, ran the old); a classmethod is a new object at each read
            if is_module or not isinstance(attributes[attribute], (classmethod, property)):
                add_read(attributes if is_module else value, attribute,
                         f"{value.__name__}.{attribute}")
        self._read_in_place(value)
        read_nested_modules(self, code, value, add_read, within)

    def _read_unlinked_in_place(self, processed, unlinked, reaches):
        """The globals read by helpers the trace calls as they are (and by the helpers those
        reach) are read in place: no copy of their module's globals holds tracers for them."""
        pending = [f for f in processed if id(f) in unlinked]
        while pending:
            for helper in reaches.get(id(pending.pop()), ()):
                if id(helper) not in unlinked:
                    unlinked.add(id(helper))
                    pending.append(helper)
        for function in processed:
            if id(function) in unlinked:
                names = set(_global_names(function.__code__))
                cells = {id(cell) for cell in function.__closure__ or ()}
                self.in_place_reads += [
                    k for k, (holder, name, _) in enumerate(self.reads)
                    if (holder is function.__globals__ and name in names
                        or id(holder) in cells or holder is function)
                    and k not in self.in_place_reads]

    def _read_namespace(self, function, globals_, name, value, add_read):
        """The attributes `function` names of a user's module or class (`config.scale`,
        `Config.W`), read at each call: one rebound, or an array in it changed in place, is
        seen as a global's would be. A module's are read from its __dict__ and the trace runs
        over a stand-in module holding tracers (rebuilt). A class's are read by getattr and the
        trace runs over the class itself, where no tracer may go (other threads read it):
        _read_in_place."""
        attributes = vars(value)
        names = _names_read(function.__code__, attributes)
        self._note_computed_attributes(function, name, value)
        if _reads_computed_names(function.__code__) and not isinstance(value, types.ModuleType):
            # a class's methods are code, not state (a classmethod is a new object each read)
            names = [a for a in names if not isinstance(
                attributes[a], (types.FunctionType, classmethod, staticmethod, property))]
        for attribute in names:
            label = f"{name}.{attribute}"
            if isinstance(value, types.ModuleType):
                add_read(attributes, attribute, label)
            else:
                add_read(value, attribute, label)
        if not isinstance(value, types.ModuleType):
            self._read_in_place(value)
        read_nested_modules(self, function.__code__, value, add_read)
        if (names and isinstance(value, types.ModuleType)
                and all(o is not value for _, _, o in self.objects)):
            self.objects.append((globals_, name, value))

    def _read_library_functions(self, function, name, module, add_read, seen=()):
        """The attributes `function` names of NumPy or math (np.sin, np.pi, np.linalg.norm),
        read at each call in place: one replaced since the trace (unittest.mock.patch(
        "numpy.sin", ...), a compatibility shim assigning np.float_) is seen, as Python's call
        would see it, instead of the graph of the function the trace called. Only the names the
        code holds (a getattr by a computed name reads none: guarding all of NumPy would cost
        every call more than it runs). The trace runs over the module itself."""
        attributes = vars(module)
        seen = (*seen, module)
        for attribute in _names(function.__code__):
            if attribute not in attributes or attribute.startswith("__"):
                continue
            add_read(attributes, attribute, f"{name}.{attribute}")
            value = attributes[attribute]
            if _is_numpy_or_math_module(value) and all(value is not m for m in seen):
                self._read_library_functions(function, f"{name}.{attribute}", value,
                                             add_read, seen)
        self._read_in_place(module)

    def _read_in_place(self, value):
        """The reads of `value`'s attributes are made by the trace from `value` itself (a class,
        an object no stand-in can be made for: a threading.local): its numbers stay static
        (in_place_values) and a call where one holds an array runs eagerly (in_place_arrays),
        where they would be constants of the graph."""
        attributes = getattr(value, "__dict__", None)
        self.in_place_reads += [k for k, (holder, _, _) in enumerate(self.reads)
                                if (holder is value or holder is attributes)
                                and k not in self.in_place_reads]

    def in_place_arrays(self, values):
        """The label of the first attribute read in place holding an array now, or None."""
        for k in self.in_place_reads:
            if _pytree.holds_array(values[k], lambda value: isinstance(value, np.ndarray)):
                return self.reads[k][2]
        return None

    def in_place_values(self, values):
        """The values of the attributes read in place among `values` (reads' order)."""
        return [values[k] for k in self.in_place_reads]

    def stale(self):
        """Whether a binding this environment was found through holds another object now: a
        helper function, partial or global object rebound (a notebook cell defining `helper`
        again), a method of self's class replaced. Its helpers, reads and stand-ins are the old
        objects', and a trace over them would run the old helper (a wrong answer, no error):
        the caller finds the environment again. So does a code replaced in place (IPython's
        autoreload of an edited function): its names, helpers and stores are the old code's."""
        if self.code_replaced() or any(type(value) is not klass for value, klass in self.classes):
            return True
        for globals_, name, helper in self.links:
            if _plain_function(globals_.get(name)) is not helper:
                return True
        for globals_, name, value in self.partials + self.objects:
            if globals_.get(name) is not value:
                return True
        if self.methods:
            owner = type(self.bound_to)
            own = self.attributes or {}
            for name, method in self.methods:
                current = _plain_function(own[name]) if name in own else _member_function(
                    owner, name)
                if current is not method:
                    return True
        return False

    def code_replaced(self):
        """Whether fn's or a helper's __code__ is not the one this environment was found in:
        its names, helpers and stores are the old code's, so nothing compiled from them fits."""
        return any(function.__code__ is not code for function, code in self.codes)

    def rebuilt(self, values):
        """(fn over copies of its (and its helpers') globals and cells holding `values` (the
        GuardedCache's environment order: reads, then cells), the Attributes of the objects
        it reads attributes of: self's, and global objects')."""
        copies = {}
        got = {}  # id(object) -> {name: value} of the reads by getattr (slots, defaults)

        def copy_of(globals_):
            if id(globals_) not in copies:
                copies[id(globals_)] = dict(globals_)
            return copies[id(globals_)]

        for (globals_, name, _), value in zip(self.reads, values):
            if not isinstance(globals_, dict):
                # an unset slot stays unset; an object's class is a guard (_read_class_of)
                if name != "__class__" and hasattr(globals_, name):
                    got.setdefault(id(globals_), {})[name] = value
            elif name in globals_:
                copy_of(globals_)[name] = value
        clones = {}

        def is_cell_helper(cell):
            return (_pytree.cell_holds(cell)
                    and id(_plain_function(cell.cell_contents)) in self.cell_helpers)

        def clone_of(helper):
            if id(helper) not in clones:
                closure = helper.__closure__ or ()
                # New cells for the helpers it holds (filled once it is registered: a closure
                # may reach itself) and for its closure variables read at each call (holding
                # this call's values), its other cells shared with the original.
                fresh = tuple(types.CellType() if is_cell_helper(cell)
                              else types.CellType(got[id(cell)]["cell_contents"])
                              if "cell_contents" in got.get(id(cell), {}) else cell
                              for cell in closure)
                clones[id(helper)] = clone = _function(helper, copy_of(helper.__globals__),
                                                       fresh or None)
                defaults = got.get(id(helper), {})
                clone.__defaults__ = defaults.get("__defaults__", clone.__defaults__)
                clone.__kwdefaults__ = defaults.get("__kwdefaults__", clone.__kwdefaults__)
                for new, old in zip(fresh, closure):
                    if is_cell_helper(old):
                        new.cell_contents = clone_of(_plain_function(old.cell_contents))
            return clones[id(helper)]

        def with_clone(value):
            plain = _plain_function(value)
            return clone_of(plain) if id(plain) in self.cell_helpers else value

        for globals_, name, helper in self.links:
            copy_of(globals_)[name] = clone_of(helper)
        for globals_, name, partial in self.partials:
            bound = got.get(id(partial), {})
            copy_of(globals_)[name] = functools.partial(
                partial.func, *bound.get("args", partial.args),
                **bound.get("keywords", partial.keywords))
        objects = []  # (the caller's object, the one the trace runs over)
        for globals_, name, value in self.objects:
            attributes = getattr(value, "__dict__", None)
            attributes = copy_of(attributes) if isinstance(attributes, dict) else None
            objects.append((value, _stand_in(value, attributes, got.get(id(value)))))
            copy_of(globals_)[name] = objects[-1][1]
        cells = self.cells
        if cells is not None:
            cells = tuple(types.CellType(with_clone(value))
                          for value in values[len(self.reads):])
        if getattr(self.fn, "__code__", None) is None:  # a C function: bound to this call's
            bound = got.get(id(self.fn), {})
            function = (self.fn if "__self__" not in bound
                        else types.MethodType(self.fn.__func__, bound["__self__"])
                        if isinstance(self.fn, types.MethodType)
                        else getattr(bound["__self__"], self.fn.__name__))
        else:
            function = _function(self.fn, copy_of(self.fn.__globals__), cells)
            defaults = got.get(id(self.fn), {})
            function.__defaults__ = defaults.get("__defaults__", function.__defaults__)
            function.__kwdefaults__ = defaults.get("__kwdefaults__", function.__kwdefaults__)
        if self.bound_to is not None:
            objects.append((self.bound_to, self._instance(copy_of, clone_of, got)))
            function = types.MethodType(function, objects[-1][1])
        if self.partial is not None:
            bound = got.get(id(self.partial), {})
            function = functools.partial(function, *bound.get("args", self.partial.args),
                                         **bound.get("keywords", self.partial.keywords))
        return function, Attributes(objects, copies)

    @property
    def object_values(self):
        """Per value (reads, then cells): whether objects in it are pytree containers
        (_pytree.flatten_call): in self's and global objects' attributes and closure variables;
        not in globals, whose objects' attributes are reads of their own."""
        return ([not label.startswith("global '") and label != "kiln.device"
                 for _, _, label in self.reads] + [True] * len(self.cells or ()))

    def attribute_state(self):
        """The Attributes of the objects fn reads attributes of, where it runs over them."""
        return Attributes([(value, value) for _, _, value in self.objects]
                          + [(self.bound_to, self.bound_to)])

    def _instance(self, copy_of, clone_of, got):
        """A stand-in for self: its attributes the copy holding tracers, its methods rebuilt
        (an object that cannot be made that way is used as it is: its arrays are baked in)."""
        if self.attributes is None and not self.slots:
            return self.bound_to
        attributes = copy_of(self.attributes) if self.attributes is not None else None
        stand_in = _stand_in(self.bound_to, attributes, got.get(id(self.bound_to)))
        if stand_in is self.bound_to:
            return stand_in
        klass = type(self.bound_to)
        if attributes is None and self.methods:  # no __dict__ for them: a subclass's methods
            return _with_methods(stand_in, {
                name: staticmethod(clone_of(method)) if _is_static(klass, name)
                else clone_of(method) for name, method in self.methods})
        for name, method in self.methods:  # instance attributes shadow the class's functions
            clone = clone_of(method)
            stand_in.__dict__[name] = (clone if _is_static(klass, name)
                                       else types.MethodType(clone, stand_in))
        return stand_in


def _is_static(klass, name):
    """Whether klass's `name` is a staticmethod: self.act(z) calls its function unbound."""
    return isinstance(inspect.getattr_static(klass, name, None), staticmethod)


def _function(fn, globals_, closure):
    function = types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, closure)
    function.__kwdefaults__ = fn.__kwdefaults__
    function.__qualname__ = fn.__qualname__
    function.__dict__.update(fn.__dict__)  # its attributes (`fn.scale`), as fn's code reads them
    return function
