"""The states of the random generators a call can reach, kept from before its trace.

A trace runs the function: a draw in it (rng.random(n), np.random.normal(...)) advances the
generator, and is this call's value: a trace that drew is traced again on every call (drew).
Where the trace is then given up (a graph break that cannot continue, a dynamic float that
must be static, a compile that fails or would cost more than eager calls: _retrace.py) the
call runs again, eagerly or traced anew: without the states put back it would draw twice, and
its values and every later draw would differ from NumPy's. Generators are found by a walk
(bounded) of what the call reaches: its leaves (arguments, and the globals the code names),
containers, objects' and classes' attributes, callbacks' closure cells, defaults and globals,
a bound method's object, a partial's arguments, a user's module passed as an argument, and
np.random's and the random module's global ones; Python's own `random.Random` instances count
too, and a Generator's seed sequence (rng.spawn counts its children). A `random.SystemRandom`
has no state to compare: reachable, it counts as drawn on every trace."""
import collections
import functools
import itertools
import random
import types

import numpy as np

from ._code_names import _global_names
from ._user_code import _is_user_class, _is_user_function, _is_user_module, _plain_function


_GENERATORS = (np.random.Generator, np.random.BitGenerator, np.random.RandomState, random.Random)


def _generator_state(value):
    """(object, its state) of a Generator, RandomState, BitGenerator, SeedSequence or
    random.Random; None for others."""
    if isinstance(value, random.SystemRandom):  # the OS's entropy: a new value every draw
        return value, object()
    if isinstance(value, random.Random):
        return value, value.getstate()
    if isinstance(value, np.random.Generator):
        value = value.bit_generator
    if isinstance(value, np.random.BitGenerator):
        return value, value.state
    if isinstance(value, np.random.RandomState):  # its state holds the cached gauss too
        return value, value.get_state(legacy=False)
    if isinstance(value, np.random.SeedSequence):  # rng.spawn(2) counts its children
        return value, value.n_children_spawned
    return None


def _stateful(value):
    """The objects whose states stand for generator `value`'s: a Generator's bit generator
    and the seed sequence it spawns children from (rng.spawn, bit_generator.spawn)."""
    if isinstance(value, np.random.Generator):
        value = value.bit_generator
    found = [value]
    if isinstance(value, np.random.BitGenerator):
        # (public, and spawned from by Generator.spawn, since NumPy 1.25; 1.x's private
        # _seed_seq is spawned from by nothing a user calls, and its count cannot be put back)
        seed_sequence = getattr(value, "seed_seq", None)
        if isinstance(seed_sequence, np.random.SeedSequence):
            found.append(seed_sequence)
    return found


def _set_children_spawned(seed_sequence, count):
    """A SeedSequence's child count put back (it is read-only: through its pickled state);
    False where this NumPy's pickled state is not the one expected."""
    if seed_sequence.n_children_spawned == count:
        return True
    setstate = getattr(seed_sequence, "__setstate_cython__", None)
    try:
        state = list(seed_sequence.__reduce__()[2])
        where = [i for i, item in enumerate(state)
                 if type(item) is int and item == seed_sequence.n_children_spawned]
        if setstate is None or len(where) != 1:
            return False
        state[where[0]] = count
        setstate(tuple(state))
    except Exception:
        return False
    return seed_sequence.n_children_spawned == count


# The most objects looked at for generators (a call's leaves, what they hold, what callbacks
# and objects reach), and the most items of one container: past them the rest are not.
_MOST_LOOKED = 8192
_MOST_ITEMS = 4096
# How deep the walk goes from a leaf or the function (sim.cfg.rng is 2 attributes deep).
_DEEPEST = 6
_ATOMS = (np.ndarray, np.generic, int, float, complex, str, bytes, bool, type(None))


def _candidates(fn, leaves):
    """The objects a call can reach that may be generators: np.random's and random's global
    ones, and those reached from its leaves and function through containers, object and class
    attributes, a callback's closure cells, defaults and the globals its code names, a bound
    method's object (`g.random` passed as a callback), a partial's function and arguments, a
    user's module passed as an argument (kiln._environment's idea of the user's). Generators
    read through any of these draw in the trace as in the call that follows it."""
    yield np.random.mtrand._rand
    yield random._inst  # the random module's functions' (random.random())
    yield from _reached([fn, *leaves])


def _reached(roots):
    """The generators reached from `roots` by the bounded walk _candidates describes."""
    # Breadth first: a generator an attribute holds (h.rng) is found before what a long list
    # beside it holds; numbers and arrays are never queued.
    seen, queue = set(), collections.deque((value, 0) for value in roots)
    looked = 0  # objects and the items of containers, numbers too (a list of lists of floats)
    while queue and looked < _MOST_LOOKED:
        value, depth = queue.popleft()
        looked += 1
        if id(value) in seen or isinstance(value, _ATOMS):
            continue
        seen.add(id(value))
        if isinstance(value, _GENERATORS) or isinstance(value, np.random.SeedSequence):
            yield from _stateful(value)
            continue
        if depth < _DEEPEST:
            children = _held(value)
            looked += len(children)
            queue.extend((child, depth + 1) for child in children
                         if not isinstance(child, _ATOMS))


def _held(value):
    """What `value` holds that the walk follows (nothing for a library's objects and
    functions: np.sin's module is not walked)."""
    value = _plain_function(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(itertools.islice(value, _MOST_ITEMS))
    if isinstance(value, dict):
        return list(itertools.islice(value.values(), _MOST_ITEMS))
    if isinstance(value, types.MethodType):
        return [value.__self__, value.__func__]
    if isinstance(value, types.BuiltinMethodType):  # g.random: its object is the generator
        owner = value.__self__
        return [] if isinstance(owner, types.ModuleType) else [owner]
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    if isinstance(value, types.FunctionType):
        if not _is_user_function(value):
            return []
        held = list(value.__defaults__ or ()) + list((value.__kwdefaults__ or {}).values())
        for cell in value.__closure__ or ():
            try:
                held.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        names = value.__globals__
        held.extend(names[name] for name in _global_names(value.__code__) if name in names)
        return held
    if isinstance(value, types.ModuleType):
        return list(vars(value).values()) if _is_user_module(value) else []
    if isinstance(value, type):
        return list(vars(value).values()) if _is_user_class(value) else []
    held = []
    attributes = getattr(value, "__dict__", None)
    if type(attributes) is dict:
        held.extend(attributes.values())
    klass = type(value)
    if _is_user_class(klass):  # its class attributes (Env.rng read as self.rng) and methods
        for base in klass.__mro__[:-1]:
            held.extend(vars(base).values())
    return held


def snapshot(fn, leaves):
    saved = {}
    for value in _candidates(fn, leaves):
        if id(value) not in saved:
            saved[id(value)] = _generator_state(value)
    return list(saved.values())


def restorable(saved):
    """Whether every state of `saved` can be put back: a SeedSequence's child count only where
    this NumPy pickles its state (NumPy 1.x's has no __setstate_cython__)."""
    return all(not isinstance(generator, np.random.SeedSequence)
               or hasattr(generator, "__setstate_cython__") for generator, _ in saved)


def restore(saved):
    for generator, state in saved:
        if isinstance(generator, random.SystemRandom):
            continue
        if isinstance(generator, random.Random):
            generator.setstate(state)
        elif isinstance(generator, np.random.RandomState):
            generator.set_state(state)
        elif isinstance(generator, np.random.SeedSequence):
            _set_children_spawned(generator, state)
        else:
            generator.state = state


def _same(state, other):
    """States compared as values: MT19937's key is an array."""
    if isinstance(state, dict):
        return (isinstance(other, dict) and state.keys() == other.keys()
                and all(_same(state[key], other[key]) for key in state))
    if isinstance(state, np.ndarray):
        return isinstance(other, np.ndarray) and np.array_equal(state, other)
    return state == other


def drew(saved):
    """Whether a generator of `saved` (snapshot's) drew since: a scalar draw in the trace
    (rng.random(), rng.integers(10)) is a Python number the graph would keep as a constant, the
    first call's value on every later call."""
    return any(not _same(_generator_state(generator)[1], state) for generator, state in saved)


def current(saved, values=()):
    """The generators of `saved`, and those `values` reach (a loop's or branch's variables: a
    generator the function made itself, `rng = np.random.default_rng(seed)`, a bound draw,
    `draw = rng.normal`, and one an object it made holds, `agent.rng`: a branch whose sides
    both run would otherwise keep the draws of the side not taken), with their states now."""
    found = {id(generator): generator for generator, _ in saved}
    for generator in _reached(values):  # (a Generator's state is its bit generator's)
        found.setdefault(id(generator), generator)
    return [(generator, _generator_state(generator)[1]) for generator in found.values()]
