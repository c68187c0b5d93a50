"""Python-level tricks a user's code plays on kiln.compile: compiled functions calling compiled
functions (helpers, recursion, kiln.compile of a compiled function), results whose code runs
after the trace (generators, coroutines, closures), and argument dtypes kiln has no IR type for.
Each must match eager NumPy, never hand the caller a tracer of a finished trace."""
import asyncio
import collections
import dataclasses
import functools
import types
import warnings

import numpy as np
import pytest

import kiln

W = np.ones(3)


@kiln.compile
def scaled_by_w(x, s):
    return x * W * s


@kiln.compile
def calls_a_compiled_helper(x):
    return scaled_by_w(x, 2.0) + scaled_by_w(x, 3.0)


@kiln.compile
def recursive(x, n):
    if n == 0:
        return x
    return recursive(x + 1, n - 1) * 2


@kiln.compile
def recursive_on_shape(x):
    if x.shape[0] > 1:
        return recursive_on_shape(x[1:]) + x.sum()
    return x


def test_a_compiled_helper_is_inlined_and_reads_its_globals_at_each_call():
    global W
    x = np.arange(3.0)
    np.testing.assert_array_equal(calls_a_compiled_helper(x), x * 5)
    W = np.arange(3.0) + 10  # rebound: the helper's global is an input, not a constant
    np.testing.assert_array_equal(calls_a_compiled_helper(x), x * W * 5)
    W[0] = 100  # changed in place
    np.testing.assert_array_equal(calls_a_compiled_helper(x), x * W * 5)
    W = np.ones(3)


def test_a_compiled_function_calling_itself():
    np.testing.assert_array_equal(recursive(np.ones(2), 3), (np.ones(2) + 3) * 8)
    np.testing.assert_array_equal(recursive_on_shape(np.arange(5.0)), [40.0])


def test_compiled_functions_in_closures_and_compile_of_a_compiled_function():
    x = np.arange(3.0)
    inner = kiln.compile(np.sin)
    outer = kiln.compile(lambda y: inner(y) + 1)
    np.testing.assert_allclose(outer(x), np.sin(x) + 1)
    np.testing.assert_array_equal(kiln.compile(kiln.compile(lambda y: y * 4))(x), x * 4)
    breaks = kiln.compile(lambda y: y * 2 if y.sum() > 0 else -y)  # a graph break inside
    wrapper = kiln.compile(lambda y: breaks(y) + 1)
    np.testing.assert_array_equal(wrapper(x), x * 2 + 1)
    np.testing.assert_array_equal(wrapper(-x - 1), x + 2)


def generator(x):
    yield x + 1
    yield x * 2


def generator_expression(x):
    return (x * i for i in range(2))


def closure(x):
    y = x * 3
    return lambda: y + 1


def partial(x):
    return functools.partial(np.add, x)


@pytest.mark.parametrize("function, consume, expected", [
    (generator, list, [np.full(2, 2.0), np.full(2, 2.0)]),
    (generator_expression, list, [np.zeros(2), np.ones(2)]),
    (closure, lambda result: [result()], [np.full(2, 4.0)]),
    (partial, lambda result: [result(1.0)], [np.full(2, 2.0)]),
])
def test_results_whose_code_runs_after_the_trace_hold_real_arrays(function, consume, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = consume(kiln.compile(function)(np.ones(2)))
    assert all(type(value) is np.ndarray for value in values), values
    for value, wanted in zip(values, expected):
        np.testing.assert_array_equal(value, wanted)


def test_a_coroutine_runs_on_real_arrays_and_fullgraph_names_the_function():
    async def coroutine(x):
        return x + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = asyncio.run(kiln.compile(coroutine)(np.ones(2)))
    assert type(result) is np.ndarray
    np.testing.assert_array_equal(result, np.full(2, 2.0))
    with pytest.raises(kiln.Unsupported, match="generator returns a generator"):
        kiln.compile(generator, fullgraph=True)(np.ones(2))


LONG = np.arange(3, dtype=np.longdouble) / 3


@pytest.mark.parametrize("function, argument", [
    (lambda x: x + x, np.arange(3, dtype=np.longdouble) / 3),
    (lambda x: x * LONG, np.ones(3)),  # a global of that dtype
])
def test_long_double_arrays_run_eagerly_and_keep_their_precision(function, argument):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = kiln.compile(function)(argument)
    expected = function(argument)
    assert result.dtype == expected.dtype == np.longdouble
    np.testing.assert_array_equal(result, expected)


CALLS = [0]
LOG = []
SETTINGS = {"k": 1}


def counts_and_raises_on_the_first_trace(x):
    CALLS[0] += 1
    LOG.append(CALLS[0])
    SETTINGS["k"] = 5
    if CALLS[0] == 1:
        raise KeyError("first")
    return x * 2


def test_side_effects_on_global_containers_happen_while_tracing():
    # The trace once ran over copies of these containers: nothing reached the caller's, and a
    # function that raised on its first call raised on every call.
    compiled = kiln.compile(counts_and_raises_on_the_first_trace)
    with pytest.raises(KeyError):
        compiled(np.ones(2))
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    # The guards are recorded before each trace: the globals it changed make the next call
    # trace again, so the side effects happen on every call, as NumPy makes them.
    assert CALLS == [3] and LOG == [1, 2, 3] and SETTINGS == {"k": 5}


def test_a_list_argument_is_the_callers_and_arrays_in_it_still_trace():
    def record(x, seen, weights):
        seen.append(len(seen))
        return x * weights[0]
    seen = []
    np.testing.assert_array_equal(kiln.compile(record)(np.ones(2), seen, [np.full(2, 3.0)]),
                                  np.full(2, 3.0))
    assert seen == [0]


@kiln.compile
def module_level(x):
    return np.sin(x) + 1


def test_a_compiled_functions_cache_takes_only_a_guarded_cache():
    """A call reads the cache as kiln's GuardedCache, unchecked: anything else set there (or
    given to CompiledCall) would crash the process."""
    compiled = kiln.compile(lambda x: x + 1)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    with pytest.raises(TypeError, match="GuardedCache"):
        compiled.cache = 5
    with pytest.raises(TypeError, match="GuardedCache"):
        kiln._kiln.CompiledCall(5, print, print, print)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))


def test_a_module_level_compiled_function_pickles_and_copies_by_reference():
    import copy
    import multiprocessing
    import pickle
    assert pickle.loads(pickle.dumps(module_level)) is module_level
    assert copy.copy(module_level) is module_level and copy.deepcopy(module_level) is module_level
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map(module_level, [np.ones(2), np.zeros(3)])
    np.testing.assert_allclose(results[0], np.sin(np.ones(2)) + 1)
    np.testing.assert_allclose(results[1], np.ones(3))
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(kiln.compile(lambda x: x))  # as a lambda: not found by its name


@dataclasses.dataclass
class Settings:
    scale: float
    offset: float = 0.0


class Weights:
    def __init__(self, w):
        self.w = w


Pair = collections.namedtuple("Pair", "w s")


def test_an_argument_object_whose_attributes_change_is_read_again():
    # The guard compared the object with itself (the same object): always equal, so the values
    # of its attributes at the first trace stayed in the graph.
    compiled = kiln.compile(lambda x, settings: x * settings.scale + settings.offset)
    settings = Settings(2.0)
    for scale in [2.0, 3.0, 5.0]:
        settings.scale = scale
        np.testing.assert_array_equal(compiled(np.ones(2), settings), np.full(2, scale))
    settings.offset = 1.0
    np.testing.assert_array_equal(compiled(np.ones(2), settings), np.full(2, 6.0))


@pytest.mark.parametrize("make", [lambda w: Weights(w), lambda w: Pair(w, 1.0),
                                  lambda w: types.SimpleNamespace(w=w, s=1.0)])
def test_arrays_held_by_an_argument_object_are_read_at_each_call(make):
    def apply(x, holder):
        return x * holder.w
    compiled = kiln.compile(apply)
    holder = make(np.arange(3.0))
    np.testing.assert_array_equal(compiled(np.ones(3), holder), np.arange(3.0))
    holder.w[0] = 100  # in place: the same object, the same attributes
    np.testing.assert_array_equal(compiled(np.ones(3), holder), [100.0, 1.0, 2.0])


def test_a_closure_object_whose_attributes_change_is_read_again():
    def make(settings):
        return kiln.compile(lambda x: x * settings.scale)
    settings = Settings(1.0)
    compiled = make(settings)
    for scale in [1.0, 2.0, 3.0]:
        settings.scale = scale
        np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, scale))
    holder = types.SimpleNamespace(w=np.ones(2))
    reads_holder = kiln.compile(lambda x: x * holder.w)
    reads_holder(np.ones(2))
    holder.w[0] = 7  # in place
    np.testing.assert_array_equal(reads_holder(np.ones(2)), [7.0, 1.0])


GLOBAL_SETTINGS = types.SimpleNamespace(scale=1.0, shift=np.ones(2))


def test_a_global_object_rebound_to_another_is_read_from_the_new_one():
    global GLOBAL_SETTINGS
    compiled = kiln.compile(lambda x: x * GLOBAL_SETTINGS.scale + GLOBAL_SETTINGS.shift)
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 2.0))
    GLOBAL_SETTINGS = types.SimpleNamespace(scale=7.0, shift=np.zeros(2))
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 7.0))
    GLOBAL_SETTINGS.scale = 9.0
    np.testing.assert_array_equal(compiled(np.ones(2)), np.full(2, 9.0))


class Model:
    def __init__(self):
        self.config = types.SimpleNamespace(scale=1.0)
        self.layer = types.SimpleNamespace(w=np.ones(2))

    def scaled(self, x):
        return x * self.config.scale

    def apply(self, x):
        return x * self.layer.w


NESTED = types.SimpleNamespace(inner=types.SimpleNamespace(scale=1.0))


def test_objects_inside_self_and_global_objects_are_read_at_each_call():
    model = Model()
    scaled, apply = kiln.compile(model.scaled), kiln.compile(model.apply)
    scaled(np.ones(2))
    model.config.scale = 5.0
    np.testing.assert_array_equal(scaled(np.ones(2)), np.full(2, 5.0))
    apply(np.ones(2))
    model.layer.w[0] = 9  # in place, one object deeper than self's attributes
    np.testing.assert_array_equal(apply(np.ones(2)), [9.0, 1.0])
    model.layer.w = np.full(2, 3.0)
    np.testing.assert_array_equal(apply(np.ones(2)), np.full(2, 3.0))
    nested = kiln.compile(lambda x: x * NESTED.inner.scale)
    nested(np.ones(2))
    NESTED.inner.scale = 4.0
    np.testing.assert_array_equal(nested(np.ones(2)), np.full(2, 4.0))


CONSTANTS = types.ModuleType("constants")
CONSTANTS.W = np.arange(3.0)


def test_a_module_holding_arrays_is_read_as_globals_are_not_run_eagerly():
    compiled = kiln.compile(lambda x: x * CONSTANTS.W)
    report = kiln.explain(compiled)(np.ones(3))
    assert report.graph_count == 1 and report.graph_break_count == 0
    np.testing.assert_array_equal(report.result, np.arange(3.0))
