"""State a compiled function reads through names its code does not spell as attributes of a
global object: the attributes of a user's module (`import config; config.W`) and class
(`Config.scale`, `Config.W`), a user's object read through its methods, properties or
__getattr__ (`cfg.get("a")`), the standard library's UserDict and ChainMap, a random.Random's
state, a threading.local's attributes. Each was fixed at the first trace (an array, a number
baked into the graph; a guard on the object's identity), so a later change gave the old answer
silently; each must be read at every call, as eager NumPy reads it."""
import collections
import functools
import sys
import threading
import types

import numpy as np
import pytest

import kiln

X = np.arange(4.0)

config = types.ModuleType("kiln_test_config")  # a user's module (made here: no file)
config.W, config.scale = np.ones(4), 2.0
sys.modules[config.__name__] = config


def reads_a_module(x):
    return x * config.W + config.scale


def test_a_user_modules_attributes_are_read_at_each_call():
    compiled = kiln.compile(reads_a_module)
    for change in (lambda: None, lambda: config.W.__setitem__(1, 5.0),
                   lambda: setattr(config, "W", np.full(4, 3.0)),
                   lambda: setattr(config, "scale", 7.0), lambda: setattr(config, "scale", 8.5)):
        change()
        np.testing.assert_array_equal(compiled(X), reads_a_module(X))


def assigns_a_module_attribute(x):
    config.calls = getattr(config, "calls", 0) + 1
    return x * config.scale


def test_a_module_attribute_the_function_assigns_is_assigned_at_each_call():
    config.calls = 0
    compiled = kiln.compile(assigns_a_module_attribute)
    for calls in (1, 2, 3):
        np.testing.assert_array_equal(compiled(X), X * config.scale)
        assert config.calls == calls


class Settings:
    scale = 1.0
    offsets = np.zeros(4)


def reads_class_numbers(x):
    return x * Settings.scale


def reads_class_arrays(x):
    return x + Settings.offsets


def test_a_user_classs_attributes_are_read_at_each_call():
    compiled = kiln.compile(reads_class_numbers)
    for scale in (1.0, 2.0, 3.5, 4.0):  # changed numbers stay static: no tracer in the class
        Settings.scale = scale
        np.testing.assert_array_equal(compiled(X), X * scale)
    compiled = kiln.compile(reads_class_arrays)
    for value in (0.0, 1.0, 2.0):  # an array a class holds: the call runs eagerly
        Settings.offsets[2] = value
        np.testing.assert_array_equal(compiled(X), reads_class_arrays(X))


class Lookup:
    def __init__(self):
        self._table = {"a": 1.0}
        self._base = 1.0

    def get(self, key):
        return self._table[key]

    @property
    def base(self):
        return self._base * 2


class Forwarding:
    def __init__(self):
        self._store = {"v": 1.0}

    def __getattr__(self, name):
        return self._store[name]


lookup, forwarding = Lookup(), Forwarding()
user_dict, chain = collections.UserDict(a=1.0), collections.ChainMap({"a": 1.0})


def through_a_method(x):
    return x * lookup.get("a") + lookup.base


def through_getattr(x):
    return x * forwarding.v


def through_mappings(x):
    return x * user_dict["a"] + chain["a"]


@pytest.mark.parametrize("fn, change", [
    (through_a_method, lambda k: lookup._table.__setitem__("a", k + 2.0)),
    (through_a_method, lambda k: setattr(lookup, "_base", k + 3.0)),
    (through_getattr, lambda k: forwarding._store.__setitem__("v", k + 2.0)),
    (through_mappings, lambda k: user_dict.__setitem__("a", k + 2.0)),
    (through_mappings, lambda k: chain.maps[0].__setitem__("a", k - 2.0)),
])
def test_an_objects_state_read_through_its_own_code_is_read_at_each_call(fn, change):
    compiled = kiln.compile(fn)
    for k in range(4):
        change(k)
        np.testing.assert_array_equal(compiled(X), fn(X))


local = threading.local()
local.scale = 1.0


def reads_a_thread_local(x):
    return x * local.scale


def test_a_thread_locals_attributes_are_read_at_each_call():
    compiled = kiln.compile(reads_a_thread_local)
    for scale in (1.0, 3.0, 4.0, 5.0):
        local.scale = scale
        np.testing.assert_array_equal(compiled(X), X * scale)


def scaled_by_its_attribute(x):
    return x * scaled_by_its_attribute.scale


scaled_by_its_attribute.scale = 1.0
settings_list = [Lookup(), Lookup()]
buffer = bytearray(b"\x01\x02\x03\x04")
view = memoryview(buffer)


def reads_an_object_in_a_list(x):
    return x * settings_list[1].get("a")


def reads_a_memoryview(x):
    return x * view[1]


@pytest.mark.parametrize("fn, change", [
    (scaled_by_its_attribute, lambda k: setattr(scaled_by_its_attribute, "scale", k + 2.0)),
    (reads_an_object_in_a_list, lambda k: settings_list[1]._table.__setitem__("a", k + 2.0)),
    (reads_a_memoryview, lambda k: buffer.__setitem__(1, k + 5)),
])
def test_function_attributes_objects_in_containers_and_memoryviews_are_read_at_each_call(
        fn, change):
    compiled = kiln.compile(fn)
    for k in range(4):
        change(k)
        np.testing.assert_array_equal(compiled(X), fn(X))


SCALE = 1.0
WEIGHTS = np.ones(4)
OPERATIONS = {"scale": lambda v: v * SCALE}
STEPS = [lambda v: v + SCALE]


def scaled_helper(v, k):
    return v * SCALE * k


SCALED = functools.partial(scaled_helper, k=2.0)


class Model:
    def apply(self, v):
        return v * SCALE

    def __call__(self, v):
        return v * WEIGHTS

    @staticmethod
    def shift(v):
        return v + SCALE


model = Model()


def through_containers_and_partials(x):
    return OPERATIONS["scale"](x) + STEPS[0](x) + SCALED(x)


def through_methods(x):
    return model.apply(x) + Model.shift(x) + model(x)


@pytest.mark.parametrize("fn", [through_containers_and_partials, through_methods])
def test_helpers_reached_through_values_read_their_globals_at_each_call(fn):
    global SCALE, WEIGHTS
    compiled = kiln.compile(fn)
    try:
        for scale in (1.0, 2.0, 3.0):
            SCALE = scale
            np.testing.assert_array_equal(compiled(X), fn(X))
        WEIGHTS[1] = 7.0  # in place (the call runs eagerly: no tracer in the module)
        np.testing.assert_array_equal(compiled(X), fn(X))
        WEIGHTS = np.full(4, 3.0)
        np.testing.assert_array_equal(compiled(X), fn(X))
    finally:
        SCALE, WEIGHTS = 1.0, np.ones(4)


lazy_config = types.ModuleType("kiln_test_lazy_config")  # imported inside the functions below
lazy_config.G = 1.0
sys.modules[lazy_config.__name__] = lazy_config


def imports_as_it_runs(x):
    import kiln_test_lazy_config
    return x * kiln_test_lazy_config.G


def imports_a_name_as_it_runs(x):
    from kiln_test_lazy_config import G
    return x * G


def holds_a_module(module):
    def reads(x):
        return x * module.G
    return reads


@pytest.mark.parametrize("fn", [imports_as_it_runs, imports_a_name_as_it_runs,
                                holds_a_module(lazy_config)])
def test_a_module_imported_in_the_body_or_held_in_a_closure_is_read_at_each_call(fn):
    # the trace read `config.G` of a module imported inside the function (or held in a
    # closure cell) once: a later change to it went unseen
    compiled = kiln.compile(fn)
    try:
        for value in (1.0, 2.0, 3.0):
            lazy_config.G = value
            np.testing.assert_array_equal(compiled(X), fn(X))
    finally:
        lazy_config.G = 1.0
