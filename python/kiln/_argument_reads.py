"""What a function or object passed as an argument reads besides itself: a callback's globals,
closure variables and default values (`integrate(f, y)` where f reads a global SCALE, or a
`make_loss(weights)` closure), the helpers it calls and what they read, and the class
attributes of a settings object (`cfg.eps` where eps is Cfg's). The guard holds the argument
itself, which is equal to itself whatever changed in what it reads, so these are read again at
every call (src/python/guard_states.h: changed_read); an array among them, which the trace
would make a constant of the graph, or a container too large to check, makes the call run
eagerly (eager_reason)."""
import functools
import types

import numpy as np

from . import _kiln, _pytree
from ._code_names import (_COMPUTED_NAME_ATTRIBUTES, _COMPUTED_NAME_READERS, _class_data,
                          _class_names, _class_reads, _class_value, _global_names,
                          _member_function, _names, _names_read)
from ._user_code import _is_user_class, _is_user_function, _is_user_module, _plain_function

# What calling a user's class passed as an argument runs besides __call__'s of its objects.
_CONSTRUCTORS = frozenset(("__new__", "__init__", "__post_init__"))
# What reading an attribute an object lacks runs (cfg.scale answered by Cfg.__getattr__).
_ATTRIBUTE_FALLBACK = frozenset(("__getattr__",))
# The most levels of objects held in objects walked (cfg.model.optim.lr: three).
_MOST_NESTING = 4
# The most values read for one call's arguments: past it the rest stay fixed at the trace.
_MOST_READS = 256
# The most items of a held list, tuple or dict whose objects are walked (a global's too).
_MOST_ITEMS = 64
_COMPUTED_NAMES = _COMPUTED_NAME_READERS | _COMPUTED_NAME_ATTRIBUTES


def argument_reads(args, kwargs, leaves, spec, codes, environment=None):
    """{leaf index or ("object", n): [(holder, name, label), ...]} for the argument leaves and
    object containers (the environment's values are _environment.py's reads) that read state
    beyond themselves; empty when none does. `codes`: the code objects of the
    compiled function and its helpers (the methods of an argument object they name are
    walked). With `environment` (kiln._environment.Environment), also the partials and bound
    methods among the environment's leaves (_callback_leaf_reads)."""
    count = _leaf_count(spec[1][0]) + _leaf_count(spec[1][1])
    objects = []  # the objects made containers (a dataclass of arrays), in flatten order
    _find_objects(spec[1][0], args, objects)
    _find_objects(spec[1][1], kwargs or {}, objects)
    reads, seen = {}, set()
    names = None
    for key, value in [*enumerate(leaves[:count]),
                       *((("object", n), value) for n, value in enumerate(objects))]:
        if names is None and (_is_user_class(type(value)) or _is_user_class(value)
                              or _is_user_module(value)):
            names = {name for code in codes for name in _names(code)} | {"__call__"}
        found = _Reads(seen)
        found.argument(value, names)
        if found.reads:
            reads[key] = found.reads[:_MOST_READS]
    if environment is not None:
        reads.update(_callback_leaf_reads(environment, leaves, spec, count, seen))
    return reads


def _callback_leaf_reads(environment, leaves, spec, count, seen):
    """{leaf index: reads} for the partials and bound methods among the environment's leaves
    (a closure variable, a default value, self's attribute, an item of a global list holding
    `partial(g, w, k=2)` or `obj.step`): their snapshot compares them as themselves, so a
    keyword set, an argument or the object's attribute changed went unseen and the call
    returned the first trace's value. Read as an argument's are. Not a global partial that
    the environment reads itself (its arguments replaced by tracers when tracing)."""
    own_partials = {(id(globals_), name) for globals_, name, _ in environment.partials}
    reads, offset = {}, count
    for k, value_spec in enumerate(spec[1][2][-1]):
        size = _leaf_count(value_spec)
        for index in range(offset, offset + size):
            leaf = leaves[index]
            if not isinstance(leaf, (functools.partial, types.MethodType)):
                continue
            if size == 1 and k < len(environment.reads):
                holder, name, _ = environment.reads[k]
                if (id(holder), name) in own_partials:
                    continue
            found = _Reads(seen)
            found.reached(leaf, None, f"{_environment_label(environment, k)}")
            if found.reads:
                reads[index] = found.reads[:_MOST_READS]
        offset += size
    return reads


def _environment_label(environment, k):
    """The words for the k-th value of the environment (its reads, then its cells)."""
    if k < len(environment.reads):
        return environment.reads[k][2]
    names = environment.cell_names
    cell = k - len(environment.reads)
    return f"closure variable '{names[cell]}'" if cell < len(names) else "a closure variable"


def _find_objects(spec, node, found):
    """The objects among `node` that its spec made containers, in the order the C++ guard
    records them (depth first)."""
    kind = spec[0]
    if kind == _pytree._LEAF:
        return
    if kind == _pytree._OBJECT:
        found.append(node)
        children = list(vars(node).values())
    else:
        children = list(node.values() if kind == _pytree._DICT else node)
    for child_spec, child in zip(spec[-1], children):
        _find_objects(child_spec, child, found)


def unwatched_read(reads):
    """Why a read (argument_reads) cannot be watched by its guard, or None: its value holds an
    array (a constant of the graph), or a mutable container too large to snapshot (held as
    itself: src/python/guard_states.h), a change to either unseen."""
    for leaf_reads in reads.values():
        for holder, name, label in leaf_reads:
            value = holder.get(name) if isinstance(holder, dict) else getattr(holder, name, None)
            if _pytree.holds_array(value, lambda v: isinstance(v, np.ndarray)):
                return f"{label} holds an array: it would be a constant of the graph"
            if not _kiln.snapshot_complete(value):
                return f"{label} is a mutable container too large to check at each call"
    return None


def callback_reads(value, label):
    """What a callback an object holds reads beyond itself (self.step a partial, a function
    reading a global, a closure), as an argument's are: [(holder, name, label), ...]."""
    walker = _Reads(set())
    walker.reached(value, None, label)
    return walker.reads


def _leaf_count(spec):
    return 1 if spec[0] == _pytree._LEAF else sum(_leaf_count(child) for child in spec[-1])


class _Reads:
    def __init__(self, seen):
        self.reads = []
        self.seen = seen  # ids of the functions and objects walked (over all arguments)

    def add(self, holder, name, label):
        self.reads.append((holder, name, label))

    def argument(self, value, names, depth=0):
        value = _plain_function(value)  # a kiln.compile'd callback: its function's reads
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
            self.reached(value, None, "the argument")
        elif id(value) in self.seen:
            return
        elif _is_user_module(value):  # f(x, config): the attributes the code names
            self.seen.add(id(value))
            attributes = vars(value)
            for name in names & attributes.keys():
                self.add(attributes, name, f"{value.__name__}.{name}")
                self.reached(attributes[name], None, f"{value.__name__}.{name}")
        elif _is_user_class(value) or _is_user_class(type(value)):
            self.seen.add(id(value))
            klass = value if isinstance(value, type) else type(value)
            # The methods the function names (cfg.scale_of(x)), and __call__: what they read;
            # a class called (make(Layer, x)) runs its constructor's.
            called = names | (_CONSTRUCTORS if klass is value else _ATTRIBUTE_FALLBACK)
            read = set(called)
            for name in called:
                member = _member_function(klass, name)
                if _is_user_function(member):
                    read.update(_names(member.__code__))
                    if id(member) not in self.seen:
                        self.seen.add(id(member))
                        self.function(member)
            # The class attributes they name (all of them where one reads by computed names:
            # getattr(cfg, name)), where the object has no attribute of its own of that name.
            if not _COMPUTED_NAMES.isdisjoint(read):
                read = set(_class_names(klass))
            own = {} if klass is value else getattr(value, "__dict__", None) or {}
            if not isinstance(own, dict):
                own = {}
            # Callbacks it holds that the code names (problem.rhs(t, y), rhs reading a
            # global): what they read (the object's snapshot compares only themselves).
            for name in names & own.keys():
                self.reached(own[name], None, f"{klass.__name__}'s '{name}'")
            class_reads = [name for name in _class_names(klass)
                           if name in read and name not in own and _class_value(klass, name)]
            for name in class_reads:
                self.add(klass, name, f"{klass.__name__}.{name}")
            if klass is not value:
                self.class_of(value)
                self.held_objects(own, names, f"{klass.__name__}'s", depth)

    def reached(self, value, code, where):
        """A value a callback's code (None: the argument itself) reaches."""
        value = _plain_function(value)
        if id(value) in self.seen or len(self.reads) >= _MOST_READS:
            return
        if isinstance(value, types.MethodType):
            self.seen.add(id(value))
            # its object's own attributes are compared by the object's snapshot
            self.add(value, "__self__", f"the object of {where}")
            self.reached(value.__func__, code, where)
            self.class_data(value.__self__, value.__func__.__code__)
        elif isinstance(value, functools.partial):
            self.seen.add(id(value))
            self.add(value, "args", f"the arguments of the partial {where}")
            self.add(value, "keywords", f"the keywords of the partial {where}")
            self.reached(value.func, code, where)
        elif _is_user_function(value):
            self.seen.add(id(value))
            self.function(value)
        elif code is None:
            return
        elif _is_user_module(value) or _is_user_class(value):
            self.seen.add(id(value))
            attributes = vars(value)
            for name in _names_read(code, attributes):
                if isinstance(value, types.ModuleType):
                    self.add(attributes, name, f"{value.__name__}.{name}")
                    self.reached(attributes[name], code, f"{value.__name__}.{name}")
                elif _class_data(value, name):
                    self.add(value, name, f"{value.__name__}.{name}")
        else:
            self.class_data(value, code)

    def class_data(self, value, code):
        """The class attributes `code` names of a user's object (cfg.eps, eps its class's)."""
        klass = type(value)
        if _is_user_class(klass):
            names = _class_reads(value, code)
            for name in names:
                self.add(klass, name, f"{klass.__name__}.{name}")
            if names:
                self.class_of(value)

    def held_objects(self, own, names, owner, depth):
        """The user's objects among an object's attributes that the code names (cfg.optim of
        cfg.optim.lr), and among the items of the lists, tuples and dicts there
        (cfg.layers[0].rate, cfg.steps[0](x)): its snapshot compares them by their own
        attributes, not their class members, what their properties and __getattr__ read nor
        what a callback reads, so each is walked as an argument is, _MOST_NESTING levels deep. Not those holding arrays: containers whose
        arrays are inputs (kiln._pytree)."""
        if depth >= _MOST_NESTING:
            return
        for name, held in own.items():
            if name in names:
                self.held_object(held, names, f"{owner} '{name}'", depth, (own, name))

    def held_object(self, held, names, label, depth, holder=None):
        """One value held by an object (`holder`: its attribute, read too) or by an item of a
        container it holds."""
        if (len(self.reads) >= _MOST_READS or isinstance(held, type) or id(held) in self.seen
                or _pytree.holds_array(held, lambda v: isinstance(v, np.ndarray))):
            return
        if type(held) in (list, tuple, dict) and len(held) <= _MOST_ITEMS:
            # (an item replaced is seen by the snapshot, which compares it as itself)
            for key, item in (held.items() if type(held) is dict else enumerate(held)):
                self.held_object(item, names, f"{label}[{key!r}]", depth + 1)
        elif _is_user_class(type(held)):
            if holder is not None:
                self.add(*holder, label)
            self.argument(held, names, depth + 1)
        else:  # a callback in a list (holder.steps[0](x)): what it reads, as an argument's
            self.reached(held, None, label)

    def class_of(self, value):
        """The class of a user's object: the object's snapshot compares its own attributes, not
        its class (`cfg.__class__ = Other`: Other's attributes read, isinstance answered)."""
        self.add(value, "__class__", f"the class of a {type(value).__name__} argument")

    def function(self, fn):
        """A user's function's default values, closure variables and the globals it names,
        and what the functions, modules and objects among them read."""
        code, qualname = fn.__code__, fn.__qualname__
        for attribute, label in (("__defaults__", "default arguments"),
                                 ("__kwdefaults__", "keyword-only defaults")):
            if getattr(fn, attribute) is not None:
                self.add(fn, attribute, f"{qualname}'s {label}")
        for cell, name in zip(fn.__closure__ or (), code.co_freevars):
            if _pytree.cell_holds(cell):
                self.add(cell, "cell_contents", f"{qualname}'s closure variable '{name}'")
                self.reached(cell.cell_contents, code, f"{qualname}'s '{name}'")
        globals_ = fn.__globals__
        for name in _global_names(code):
            if name in globals_:
                self.add(globals_, name, f"global '{name}' of {qualname}()")
                self.reached(globals_[name], code, f"global '{name}'")
