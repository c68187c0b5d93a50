"""Sources of a new value on every call: Python's own (kiln/_impure_calls.py: random's module
functions, time's clocks, os.urandom, uuid's identifiers) called from the traced function, and a
NumPy Generator's or a `random.Random` instance's scalar draws (kiln/_random_state.py: its state
changed during the trace), are
the call's values on every call (a graph break), never the first call's baked into the graph;
a loop body or branch side that draws is not captured (one trace of it would draw once for
every iteration, or on both sides). The standard library's own calls of them (logging's
timestamps) do not break the graph."""
import logging
import random
import time
from random import random as draw

import numpy as np
import pytest

import kiln


def plus_random(x):
    return np.sin(x) + random.random()


def plus_bound_name(x):
    return x * 0 + draw()


def plus_clock(x):
    return x * 0 + time.perf_counter()


def plus_gauss_in_a_loop(x):
    for _ in range(3):
        x = x + random.gauss(0.0, 1.0)
    return x


def test_each_call_gets_new_values_as_python_gives_them():
    x = np.linspace(0, 1, 50)
    for fn in (plus_random, plus_bound_name, plus_gauss_in_a_loop):
        compiled = kiln.compile(fn)
        for seed in (1, 2, 1):
            random.seed(seed)
            expected = fn(x)
            random.seed(seed)
            np.testing.assert_allclose(compiled(x), expected, rtol=1e-12, atol=0)
    compiled = kiln.compile(plus_clock)
    first = compiled(x)[0]
    time.sleep(0.01)
    assert compiled(x)[0] > first + 0.005  # the clock as it reads at the second call


def test_fullgraph_names_the_call():
    with pytest.raises(kiln.GraphBreak, match=r"random\.random gives a new value on every call"):
        kiln.compile(plus_random, fullgraph=True)(np.ones(3))


def logged(x):
    logging.getLogger("kiln-test").info("called")  # logging reads time.time_ns itself
    return np.exp(x) * 2


def test_the_standard_librarys_own_calls_do_not_break_the_graph():
    logging.getLogger("kiln-test").setLevel(logging.INFO)
    explained = kiln.explain(logged)(np.ones(4))
    assert explained.graph_break_count == 0
    np.testing.assert_allclose(kiln.compile(logged)(np.ones(4)), np.exp(np.ones(4)) * 2)


def scalar_draw(x, rng):
    return x + rng.random()


def draws_per_iteration(x, rng):
    for _ in range(40):  # captured as a loop otherwise: one draw for all 40 iterations
        x = x * 0.5 + rng.random()
    return x


def draws_on_one_side(x, rng):
    if x.sum() > 0:  # captured as a select otherwise: a draw on each side
        y = x + rng.integers(10)
    else:
        y = x - rng.random()
    return y + rng.random()


GLOBAL_RNG = np.random.default_rng(11)


def global_generator(x):
    return x * GLOBAL_RNG.standard_normal()


@pytest.mark.parametrize("fn", [scalar_draw, draws_per_iteration, draws_on_one_side])
def test_generator_draws_are_each_calls_own(fn):
    compiled = kiln.compile(fn)
    for sign in (1.0, -1.0, 1.0):
        x = np.full(5, sign)
        got_rng, expected_rng = np.random.default_rng(3), np.random.default_rng(3)
        for _ in range(2):  # the same generator again: its later draws
            np.testing.assert_allclose(compiled(x, got_rng), fn(x, expected_rng), rtol=1e-12)
        assert got_rng.random() == expected_rng.random()  # drew exactly as many


def test_a_global_generators_draws_are_each_calls_own():
    compiled = kiln.compile(global_generator)
    state = GLOBAL_RNG.bit_generator.state
    expected = [global_generator(np.ones(3)) for _ in range(3)]
    GLOBAL_RNG.bit_generator.state = state
    for value in expected:
        np.testing.assert_allclose(compiled(np.ones(3)), value, rtol=1e-12)


PYTHON_RNG = random.Random(5)


def python_generator_global(x):
    return x * PYTHON_RNG.random()


def python_generator_argument(x, rng):
    for _ in range(4):  # captured as a loop otherwise: one draw for all four iterations
        x = x + rng.gauss(0.0, 1.0)
    return x


def test_a_python_random_instances_draws_are_each_calls_own():
    compiled = kiln.compile(python_generator_global)
    state = PYTHON_RNG.getstate()
    expected = [python_generator_global(np.ones(3)) for _ in range(3)]
    PYTHON_RNG.setstate(state)
    for value in expected:
        np.testing.assert_allclose(compiled(np.ones(3)), value, rtol=1e-12)
    compiled = kiln.compile(python_generator_argument)
    got_rng, expected_rng = random.Random(8), random.Random(8)
    for _ in range(3):
        np.testing.assert_allclose(compiled(np.zeros(2), got_rng),
                                   python_generator_argument(np.zeros(2), expected_rng), rtol=1e-12)
    assert got_rng.random() == expected_rng.random()  # drew exactly as many


def test_a_system_random_is_read_on_every_call():
    rng = random.SystemRandom()
    compiled = kiln.compile(lambda x: x + rng.random())
    values = {float(compiled(np.zeros(1))[0]) for _ in range(4)}
    assert len(values) == 4


def test_a_reachable_python_random_that_does_not_draw_keeps_the_compiled_graph():
    def scaled(x):
        return x * 2 if PYTHON_RNG is not None else x
    explained = kiln.explain(scaled)(np.ones(3))
    assert explained.graph_break_count == 0
