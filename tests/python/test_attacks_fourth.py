"""Attacks of a fourth round: what a compiled call reads that can change between calls
unseen (callbacks held beyond the arguments), aliasing, the cache, errors and threads."""
import functools

import numpy as np
import pytest

import kiln


# ---- partials and bound methods held by closures, defaults, self and global containers ----

def _scaled(x, w=1.0, k=1):
    return x * w + k


def _in_a_cell(callback):
    def f(x):
        return callback(x)
    return f


def _in_a_default(callback):
    def f(x, step=callback):
        return step(x)
    return f


def _in_a_cell_list(callback):
    steps = [callback]

    def f(x):
        return steps[0](x)
    return f


class _Holder:
    def __init__(self, callback):
        self.step = callback

    def run(self, x):
        return self.step(x)


_STEPS = []


def _from_a_global_list(x):
    return _STEPS[0](x)


def _in_a_global_list(callback):
    _STEPS[:] = [callback]
    return _from_a_global_list


@pytest.mark.parametrize("holding", [_in_a_cell, _in_a_default, _in_a_cell_list,
                                     lambda p: _Holder(p).run, _in_a_global_list])
def test_a_held_partials_keywords_and_arguments_changed_in_place_are_seen(holding):
    # the partial's snapshot compared it as itself: k=5 set, w changed, the call gave k=2's
    weights = np.full(3, 2.0)
    step = functools.partial(_scaled, weights, k=2)
    f = holding(step)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), f(x))
    step.keywords["k"] = 5
    np.testing.assert_array_equal(compiled(x), [7.0, 7.0, 7.0])
    weights[:] = 7.0
    np.testing.assert_array_equal(compiled(x), [12.0, 12.0, 12.0])


class _Model:
    def __init__(self):
        self.k = 2
        self.w = np.full(3, 2.0)

    def forward(self, x):
        return x * self.w + self.k


def test_a_bound_method_held_by_a_closure_reads_its_objects_state_at_each_call():
    model = _Model()
    forward = model.forward
    f = _in_a_cell(forward)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [4.0, 4.0, 4.0])
    model.k = 9  # a number: a guard
    np.testing.assert_array_equal(compiled(x), [11.0, 11.0, 11.0])
    model.w[:] = 5.0  # an array of the object (the trace made it a constant): seen
    np.testing.assert_array_equal(compiled(x), [14.0, 14.0, 14.0])


_GLOBAL_MODEL = _Model()
_GLOBAL_FORWARD = _GLOBAL_MODEL.forward


def _through_a_global_bound_method(x):
    return _GLOBAL_FORWARD(x)


def _through_a_nested_partial():
    model = _Model()
    step = functools.partial(functools.partial(_Model.forward, model))
    return _in_a_cell(step), model


def _through_a_lambda_holding_a_bound_method():
    model = _Model()
    forward = model.forward
    return _in_a_cell(lambda x: forward(x)), model


@pytest.mark.parametrize("make", [lambda: (_through_a_global_bound_method, _GLOBAL_MODEL),
                                  _through_a_nested_partial,
                                  _through_a_lambda_holding_a_bound_method])
def test_an_objects_attribute_read_through_a_held_callback_is_read_at_each_call(make):
    f, model = make()
    compiled, x = kiln.compile(f), np.ones(3)
    model.k = 2
    np.testing.assert_array_equal(compiled(x), f(x))
    model.k = 9
    np.testing.assert_array_equal(compiled(x), [11.0, 11.0, 11.0])


def test_a_global_partial_without_arrays_in_a_closure_stays_compiled():
    f = _in_a_cell(functools.partial(_scaled, k=2))
    report = kiln.explain(f)(np.ones(3))
    assert not report.break_reasons and len(report.graphs) == 1


# ---- statics equal by == that iterate in another order ----

def _values_in_order(x, items):
    return x * np.array(list(items))


@pytest.mark.parametrize("make", [lambda items: set(items), frozenset])
def test_a_set_argument_with_the_same_items_in_another_order_is_traced_again(make):
    # {1, 9} == {9, 1}, but they iterate in the order they were filled (1 and 9 share a slot)
    first, second = make([1, 9]), make([9, 1])
    assert list(first) != list(second)
    compiled, x = kiln.compile(_values_in_order), np.ones(2)
    for items in (first, second, first):
        np.testing.assert_array_equal(compiled(x, items), _values_in_order(x, items))


class _Settings:
    pass


def _attribute_values(x, settings):
    return x * np.array(list(settings.weights.values())) + np.array(list(settings.weights))


def test_a_dict_held_by_an_object_reordered_or_rekeyed_in_place_is_seen():
    settings = _Settings()
    settings.weights = {1: 1.0, 2: 2.0}
    compiled, x = kiln.compile(_attribute_values), np.ones(2)
    np.testing.assert_array_equal(compiled(x, settings), [2.0, 4.0])
    settings.weights[1] = settings.weights.pop(1)  # now {2: 2.0, 1: 1.0}
    np.testing.assert_array_equal(compiled(x, settings), [4.0, 2.0])
    settings.weights = {2.0: 2.0, 1.0: 1.0}  # equal keys of another type: a float result
    got = compiled(x, settings)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, _attribute_values(x, settings))


def test_an_ordered_dicts_move_to_end_is_seen():
    import collections
    weights = collections.OrderedDict(a=1.0, b=2.0)

    def f(x):
        return x * np.array(list(weights.values()))
    compiled, x = kiln.compile(f), np.ones(2)
    np.testing.assert_array_equal(compiled(x), [1.0, 2.0])
    weights.move_to_end("a")
    np.testing.assert_array_equal(compiled(x), [2.0, 1.0])


def test_a_global_set_rebound_to_an_equal_one_in_another_order_is_seen():
    holder = {"items": {1, 9}}

    def f(x):
        return x * np.array(list(holder["items"]))
    compiled, x = kiln.compile(f), np.ones(2)
    np.testing.assert_array_equal(compiled(x), [1.0, 9.0])
    holder["items"] = {9, 1}
    np.testing.assert_array_equal(compiled(x), [9.0, 1.0])


# ---- class attributes read by class methods ----

def _scaling_class():
    class Scaling:
        k = 2.0

        @classmethod
        def apply(cls, x):
            return cls.chained(x)

        @classmethod
        def chained(cls, x):
            return x * cls.k

        def through_type(self, x):
            return type(self).apply(x)

        def through_self(self, x):
            return self.apply(x)
    return Scaling


_SCALING = _scaling_class()


def _global_class_method(x):
    return _SCALING.apply(x)


def _closure_class_method():
    scaling = _scaling_class()

    def f(x):
        return scaling.apply(x)
    return f, scaling


def _self_class_method(name):
    scaling = _scaling_class()
    return getattr(scaling(), name), scaling


@pytest.mark.parametrize("make", [
    lambda: (_global_class_method, _SCALING), _closure_class_method,
    lambda: _self_class_method("through_type"), lambda: _self_class_method("through_self")])
def test_a_class_attribute_a_class_method_reads_set_after_a_call_is_seen(make):
    f, scaling = make()
    compiled, x = kiln.compile(f), np.ones(2)
    scaling.k = 2.0
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0])
    scaling.k = 5.0  # the class method read cls.k once: the call returned 2's
    np.testing.assert_array_equal(compiled(x), [5.0, 5.0])


_METACLASS_STATE = {"k": 2.0}


class _ComputingMeta(type):
    @property
    def k(cls):
        return _METACLASS_STATE["k"]

    def __getattr__(cls, name):
        if name == "j":
            return _METACLASS_STATE["k"] + 1
        raise AttributeError(name)


class _Computed(metaclass=_ComputingMeta):
    pass


def _metaclass_property(x):
    return x * _Computed.k


def _metaclass_getattr(x):
    return x * _Computed.j


@pytest.mark.parametrize("f", [_metaclass_property, _metaclass_getattr])
def test_a_class_attribute_its_metaclass_computes_is_computed_at_each_call(f):
    compiled, x = kiln.compile(f), np.ones(2)
    _METACLASS_STATE["k"] = 2.0
    np.testing.assert_array_equal(compiled(x), f(x))
    _METACLASS_STATE["k"] = 5.0  # the trace fixed the metaclass's answer
    np.testing.assert_array_equal(compiled(x), f(x))


def test_a_mapping_proxy_in_a_closure_shows_its_dicts_changes():
    import types
    settings = {"k": 2.0}
    view = types.MappingProxyType(settings)

    def f(x):
        return x * view["k"]
    compiled, x = kiln.compile(f), np.ones(2)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0])
    settings["k"] = 6.0  # the proxy was compared as itself
    np.testing.assert_array_equal(compiled(x), [6.0, 6.0])


# ---- a number the guard made dynamic, gone since ----

class _Slotted:
    __slots__ = ("k",)

    def __init__(self):
        self.k = 2.0

    def scaled(self, x):
        return x * self.k


def test_a_dynamic_numbers_slot_deleted_raises_attribute_error_as_python_does():
    # the guard read the unset slot as null and converted it as a float: a segfault
    holder = _Slotted()
    compiled, x = kiln.compile(holder.scaled), np.ones(2)
    np.testing.assert_array_equal(compiled(x), [2.0, 2.0])
    holder.k = 7.0  # a changed number: a graph input from now on
    np.testing.assert_array_equal(compiled(x), [7.0, 7.0])
    del holder.k
    with pytest.raises(AttributeError):
        compiled(x)
    holder.k = 3.0
    np.testing.assert_array_equal(compiled(x), [3.0, 3.0])


def test_a_dynamic_numbers_global_deleted_raises_name_error_as_python_does():
    namespace = {"np": np}
    exec("def scaled(x):\n    return x * K\n", namespace)  # noqa: S102 - a module of its own
    scaled = namespace["scaled"]
    compiled, x = kiln.compile(scaled), np.ones(2)
    for k in (2.0, 7.0):
        namespace["K"] = k
        np.testing.assert_array_equal(compiled(x), [k, k])
    del namespace["K"]
    with pytest.raises(NameError):
        compiled(x)
