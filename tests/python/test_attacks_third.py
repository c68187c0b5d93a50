"""Attacks of a third round (test_attacks_second.py holds the second): each test is a careless
user's or an attacker's call that gave a wrong answer, a crash or an unclear error. This file:
the state held by the objects a function reads (test_attacks_third_values.py: the rest)."""
import functools

import numpy as np
import pytest

import kiln


# ---- objects inside the lists, dicts and tuples of an argument object ----

class _Setting:
    def __init__(self, value):
        self.value = value


class _Holder:
    def __init__(self):
        self.items = [_Setting(2.0)]
        self.table = {"k": _Setting(3.0)}
        self.pair = (_Setting(4.0),)
        self.nested = [{"deep": (_Setting(5.0),)}]


def _read_through_containers(x, holder):
    return (x * holder.items[0].value + holder.table["k"].value + holder.pair[0].value
            + holder.nested[0]["deep"][0].value)


@pytest.mark.parametrize("change", [
    lambda holder: setattr(holder.items[0], "value", 7.0),
    lambda holder: setattr(holder.table["k"], "value", 7.0),
    lambda holder: setattr(holder.pair[0], "value", 7.0),
    lambda holder: setattr(holder.nested[0]["deep"][0], "value", 7.0),
    lambda holder: setattr(holder.items[0], "__class__", type("Other", (_Setting,), {})),
])
def test_an_attribute_of_an_object_inside_an_argument_objects_container_is_seen(change):
    # holder.items[0].value = 7.0 after the first call: the call returned the first value
    compiled = kiln.compile(_read_through_containers)
    x, holder = np.ones(3), _Holder()
    np.testing.assert_array_equal(compiled(x, holder), _read_through_containers(x, holder))
    change(holder)
    np.testing.assert_array_equal(compiled(x, holder), _read_through_containers(x, holder))


class _Node:
    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def test_an_object_seven_levels_inside_an_argument_object_is_compared():
    # holder.a[0].b[0].c[0].value: past the snapshot's depth the object was held as itself
    def deep(x, holder):
        return x * holder.a[0].b[0].c[0].value

    compiled = kiln.compile(deep)
    x, holder = np.ones(2), _Node(a=[_Node(b=[_Node(c=[_Node(value=2.0)])])])
    compiled(x, holder)
    holder.a[0].b[0].c[0].value = 5.0
    np.testing.assert_array_equal(compiled(x, holder), deep(x, holder))


def test_an_object_inside_a_list_argument_read_again_after_its_attribute_changed():
    def scaled(x, settings):
        return x * settings[0].value

    compiled = kiln.compile(scaled)
    x, settings = np.ones(2), [_Setting(2.0)]
    compiled(x, settings)
    for value in (3.0, -0.0, float("nan")):
        settings[0].value = value
        np.testing.assert_array_equal(compiled(x, settings), scaled(x, settings))


class _ClassScaled:
    value = 2.0


_SCALE = 1.0


class _PropertyScaled:
    @property
    def value(self):
        return 2.0 * _SCALE


class _FallbackScaled:
    def __getattr__(self, name):
        return 3.0 * _SCALE


def _set_scale(value):
    global _SCALE
    _SCALE = value


@pytest.mark.parametrize("item, change", [
    (_ClassScaled(), lambda: setattr(_ClassScaled, "value", 5.0)),
    (_PropertyScaled(), lambda: _set_scale(4.0)),
    (_FallbackScaled(), lambda: _set_scale(6.0)),
])
def test_a_class_member_of_an_object_inside_an_argument_objects_list_is_read_each_call(item,
                                                                                    change):
    # holder.items[0].value a class attribute, a property or __getattr__ reading a global:
    # the object's snapshot compares its own attributes only, and the call kept the first value
    def scaled(x, holder):
        return x * holder.items[0].value

    original = _ClassScaled.value
    compiled = kiln.compile(scaled)
    x, holder = np.ones(2), _Holder()
    holder.items = [item]
    try:
        np.testing.assert_array_equal(compiled(x, holder), scaled(x, holder))
        change()
        np.testing.assert_array_equal(compiled(x, holder), scaled(x, holder))
    finally:
        _ClassScaled.value = original
        _set_scale(1.0)


class _Layered:
    def __init__(self):
        self.layers = [_ClassScaled()]

    def step(self, x):
        return x * self.layers[0].value


def _closure_over_a_list():
    layers = [_ClassScaled()]
    return lambda x: x * layers[0].value


_GLOBAL_HOLDER = _Layered()


def _global_objects_list(x):
    return x * _GLOBAL_HOLDER.layers[0].value


def _default_list(x, layers=[[_ClassScaled()]]):  # noqa: B006 (the default is the attack)
    return x * layers[0][0].value


@pytest.mark.parametrize("function", [
    _Layered().step, _closure_over_a_list(), _global_objects_list, _default_list,
])
def test_a_class_attribute_of_an_object_in_a_list_of_self_a_closure_a_global_or_default(
        function):
    # self.layers[0].value, value the class's: `_ClassScaled.value = 5.0` went unseen
    original = _ClassScaled.value
    compiled = kiln.compile(function)
    x = np.ones(2)
    try:
        np.testing.assert_array_equal(compiled(x), function(x))
        _ClassScaled.value = 5.0
        np.testing.assert_array_equal(compiled(x), function(x))
    finally:
        _ClassScaled.value = original


_STEP = 2.0


def _step_by_global(x):
    return x * _STEP


def _multiplied(x, factor):
    return x * factor


def _set_step(value):
    global _STEP
    _STEP = value


def _box_reader(box):
    return lambda x: x * box[0]


_BOX = [2.0]


@pytest.mark.parametrize("step, change", [
    (functools.partial(_multiplied, factor=2.0),
     lambda holder: holder.steps[0].keywords.update(factor=5.0)),
    (_step_by_global, lambda holder: _set_step(4.0)),
    (_box_reader(_BOX), lambda holder: _BOX.__setitem__(0, 9.0)),
])
def test_a_callback_in_an_argument_objects_list_is_read_each_call(step, change):
    # holder.steps[0](x): a partial's keywords, a function's global, a closure's list changed
    # after the first call went unseen
    def run(x, holder):
        return holder.steps[0](x)

    compiled = kiln.compile(run)
    x, holder = np.ones(2), _Node(steps=[step])
    try:
        np.testing.assert_array_equal(compiled(x, holder), run(x, holder))
        change(holder)
        np.testing.assert_array_equal(compiled(x, holder), run(x, holder))
    finally:
        _set_step(2.0)
        _BOX[0] = 2.0


class _Stepper:
    def __init__(self, step, in_list):
        self.step, self.steps = step, [step]
        self.in_list = in_list

    def run(self, x):
        return self.steps[0](x) if self.in_list else self.step(x)


@pytest.mark.parametrize("in_list", [False, True])
@pytest.mark.parametrize("make, change", [
    (lambda: functools.partial(_multiplied, factor=2.0),
     lambda step: step.keywords.update(factor=5.0)),
    (lambda: _step_by_global, lambda step: _set_step(4.0)),
])
def test_a_callback_self_holds_is_read_each_call(make, change, in_list):
    # self.step(x), self.steps[0](x): a partial's keywords or a function's global changed
    stepper = _Stepper(make(), in_list)
    compiled = kiln.compile(stepper.run)
    x = np.ones(2)
    try:
        np.testing.assert_array_equal(compiled(x), stepper.run(x))
        change(stepper.step)
        np.testing.assert_array_equal(compiled(x), stepper.run(x))
    finally:
        _set_step(2.0)
