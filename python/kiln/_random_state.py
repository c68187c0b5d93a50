"""The states of the random generators a call can reach, kept from before its trace.

A trace runs the function: a draw in it (rng.random(n), np.random.normal(...)) advances the
generator, and is this call's value: a trace that drew is traced again on every call (drew).
Where the trace is then given up (a graph break that cannot continue, a dynamic float that
must be static, a compile that fails or would cost more than eager calls: _retrace.py) the
call runs again, eagerly or traced anew: without the states put back it would draw twice, and
its values and every later draw would differ from NumPy's. Generators are found among the
call's leaves (arguments, and the globals the code names) and their objects' attributes, its
closure cells, a method's self, and np.random's and the random module's global ones; Python's
own `random.Random` instances count too. A `random.SystemRandom` has no state to compare:
reachable, it counts as drawn on every trace."""
import random
import types

import numpy as np


_GENERATORS = (np.random.Generator, np.random.BitGenerator, np.random.RandomState, random.Random)


def _generator_state(value):
    """(object, its state) of a Generator, RandomState, BitGenerator or random.Random; None for
    others."""
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
    return None


def _candidates(fn, leaves):
    yield np.random.mtrand._rand
    yield random._inst  # the random module's functions' (random.random())
    yield from leaves
    for leaf in leaves:  # an argument object's generator (cfg.rng)
        attributes = getattr(leaf, "__dict__", None)
        if type(attributes) is dict and not isinstance(leaf, (type, types.ModuleType)):
            yield from list(attributes.values())
    bound_to = fn.__self__ if isinstance(fn, types.MethodType) else None
    if bound_to is not None:
        yield from getattr(bound_to, "__dict__", {}).values()
        fn = fn.__func__
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            pass


def snapshot(fn, leaves):
    saved = {}
    for value in _candidates(fn, leaves):
        if isinstance(value, _GENERATORS) and id(value) not in saved:
            saved[id(value)] = _generator_state(value)
    return list(saved.values())


def restore(saved):
    for generator, state in saved:
        if isinstance(generator, random.SystemRandom):
            continue
        if isinstance(generator, random.Random):
            generator.setstate(state)
        elif isinstance(generator, np.random.RandomState):
            generator.set_state(state)
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
    """The generators of `saved`, and those among `values` (a loop's or branch's variables: a
    generator the function made itself, `rng = np.random.default_rng(seed)`, and a bound
    draw, `draw = rng.normal`), with their states now."""
    found = {id(generator): generator for generator, _ in saved}
    for value in values:
        owner = getattr(value, "__self__", value) if callable(value) else value
        if isinstance(owner, _GENERATORS):
            generator = _generator_state(owner)[0]  # a Generator's state is its bit generator's
            found.setdefault(id(generator), generator)
    return [(generator, _generator_state(generator)[1]) for generator in found.values()]
