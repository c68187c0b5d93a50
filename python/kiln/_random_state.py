"""The states of the random generators a call can reach, kept from before its trace.

A trace runs the function: a draw in it (rng.random(n), np.random.normal(...)) advances the
generator. Where the trace is then given up (a graph break that cannot continue, a dynamic
float that must be static, a compile that fails) the call runs again, eagerly or traced
anew: without the states put back it would draw twice, and its values and every later draw
would differ from NumPy's. Generators are found among the call's leaves (arguments, and the
globals the code names), its closure cells, a method's self, and np.random's global one."""
import types

import numpy as np


def _generator_state(value):
    """(object, its state) of a Generator, RandomState or BitGenerator; None for others."""
    if isinstance(value, np.random.Generator):
        value = value.bit_generator
    if isinstance(value, np.random.BitGenerator):
        return value, value.state
    if isinstance(value, np.random.RandomState):  # its state holds the cached gauss too
        return value, value.get_state(legacy=False)
    return None


def _candidates(fn, leaves):
    yield np.random.mtrand._rand
    yield from leaves
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
        if isinstance(value, (np.random.Generator, np.random.BitGenerator,
                              np.random.RandomState)) and id(value) not in saved:
            saved[id(value)] = _generator_state(value)
    return list(saved.values())


def restore(saved):
    for generator, state in saved:
        if isinstance(generator, np.random.RandomState):
            generator.set_state(state)
        else:
            generator.state = state
