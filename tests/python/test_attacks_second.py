"""Attacks of a second round (tests/python/test_trust_*.py hold the first): each test is a
careless user's or an attacker's call that gave a wrong answer, a crash or an unclear error."""
import numpy as np

import kiln


# ---- class attributes read through an object: shadowed, revealed, or the class swapped ----

class _Scaled:
    scale = 2.0

    def times(self, x):
        return x * self.scale

    def shifted(self, x):
        return x + 1.0


class _OtherScaled:
    scale = 3.0

    def times(self, x):
        return x * self.scale * 10.0

    def shifted(self, x):
        return x + 100.0


def _compiled_calls(compiled, x, changes):
    """compiled(x)[1] before and after each change."""
    results = [float(compiled(x)[1])]
    for change in changes:
        change()
        results.append(float(compiled(x)[1]))
    return results


def test_an_attribute_set_on_self_after_the_trace_shadows_the_class_attribute():
    # `model.scale = 7.0` on an object whose class says scale = 2.0: the method kept 2.0
    model = _Scaled()
    compiled = kiln.compile(model.times)
    x = np.arange(3.0)

    def delete():
        del model.scale
    results = _compiled_calls(compiled, x, [lambda: setattr(model, "scale", 7.0), delete,
                                            lambda: setattr(_Scaled, "scale", 6.0)])
    _Scaled.scale = 2.0
    assert results == [2.0, 7.0, 2.0, 6.0]


class _Settings:
    scale = 2.0


SETTINGS = _Settings()
SETTINGS.scale = 4.0


def _times_global_settings(x):
    return x * SETTINGS.scale


def test_a_global_objects_own_attribute_deleted_reveals_the_class_attribute_read_each_call():
    # the class attribute was not read while the object shadowed it: after `del`, Settings.scale
    # changed and the call kept the value the retrace found
    compiled = kiln.compile(_times_global_settings)
    x = np.arange(3.0)

    def delete():
        del SETTINGS.scale
    results = _compiled_calls(compiled, x, [delete, lambda: setattr(_Settings, "scale", 6.0),
                                            lambda: setattr(SETTINGS, "scale", 7.0)])
    _Settings.scale = 2.0
    assert results == [4.0, 2.0, 6.0, 7.0]


def test_a_closure_objects_class_swapped_is_read_from_then_on():
    holder = _Scaled()

    def scaled_and_shifted(x):
        return x * holder.scale + holder.shifted(x)
    compiled = kiln.compile(scaled_and_shifted)
    x = np.arange(3.0)

    def delete():
        del holder.scale
    results = _compiled_calls(compiled, x, [
        lambda: setattr(holder, "scale", 4.0), lambda: setattr(holder, "__class__", _OtherScaled),
        delete, lambda: setattr(_OtherScaled, "scale", 6.0)])
    _OtherScaled.scale = 3.0
    assert results == [4.0, 6.0, 105.0, 104.0, 107.0]


def test_a_class_swapped_on_self_a_global_or_an_argument_is_seen():
    x = np.arange(3.0)
    model = _Scaled()
    compiled = kiln.compile(model.times)   # the bound function stays _Scaled.times
    assert _compiled_calls(compiled, x, [lambda: setattr(model, "__class__", _OtherScaled)]) \
        == [2.0, 3.0]

    def global_settings(x):
        return x * SETTINGS.scale
    compiled = kiln.compile(global_settings)
    saved = SETTINGS.__dict__.pop("scale")
    try:
        assert _compiled_calls(compiled, x, [
            lambda: setattr(SETTINGS, "__class__", _OtherScaled)]) == [2.0, 3.0]
    finally:
        SETTINGS.__class__ = _Settings
        SETTINGS.scale = saved

    @kiln.compile
    def through_argument(x, settings):
        return settings.shifted(x) * settings.scale
    argument = _Scaled()
    assert [float(through_argument(x, argument)[1])] + _compiled_calls(
        lambda x: through_argument(x, argument), x,
        [lambda: setattr(argument, "__class__", _OtherScaled)])[1:] == [4.0, 303.0]


class _Fast:
    pass


class _Slow:
    pass


FAST = _Fast()


def test_isinstance_of_an_object_whose_class_is_swapped_answers_for_the_new_class():
    # the object's guard compared its attributes, not its class: the branch stayed the first's
    x = np.arange(3.0)

    @kiln.compile
    def through_argument(x, kind):
        return x * 2.0 if isinstance(kind, _Fast) else x * 3.0
    kind = _Fast()
    assert _compiled_calls(lambda x: through_argument(x, kind), x,
                           [lambda: setattr(kind, "__class__", _Slow)]) == [2.0, 3.0]

    @kiln.compile
    def through_global(x):
        return x * 2.0 if isinstance(FAST, _Fast) else x * 3.0
    try:
        assert _compiled_calls(through_global, x,
                               [lambda: setattr(FAST, "__class__", _Slow)]) == [2.0, 3.0]
    finally:
        FAST.__class__ = _Fast

    held = _Fast()
    compiled = kiln.compile(lambda x: x * 2.0 if isinstance(held, _Fast) else x * 3.0)
    assert _compiled_calls(compiled, x, [lambda: setattr(held, "__class__", _Slow)]) == [2.0, 3.0]


# ---- attributes computed by a property, a descriptor or __getattr__ from a global ----

LEVEL = 2.0


class _FromLevel:
    def __get__(self, instance, owner):
        return LEVEL


class _Computed:
    by_descriptor = _FromLevel()

    @property
    def by_property(self):
        return LEVEL

    def __getattr__(self, name):
        return LEVEL

    def times_property(self, x):
        return x * self.by_property

    def times_descriptor(self, x):
        return x * self.by_descriptor


COMPUTED = _Computed()


def _with_level(compiled, x):
    """compiled(x)[1] with LEVEL 2.0, then 5.0."""
    global LEVEL
    try:
        return _compiled_calls(compiled, x, [lambda: globals().update(LEVEL=5.0)])
    finally:
        LEVEL = 2.0


def test_a_global_a_property_or_descriptor_of_self_reads_is_read_at_each_call():
    x = np.arange(3.0)
    computed = _Computed()
    assert _with_level(kiln.compile(computed.times_property), x) == [2.0, 5.0]
    assert _with_level(kiln.compile(computed.times_descriptor), x) == [2.0, 5.0]


def test_a_global_a_descriptor_or_getattr_of_an_argument_or_global_reads_is_read_each_call():
    x = np.arange(3.0)
    through_argument = kiln.compile(lambda x, settings: x * settings.by_descriptor)
    assert _with_level(lambda x: through_argument(x, _Computed()), x) == [2.0, 5.0]
    by_getattr = kiln.compile(lambda x, settings: x * settings.missing)
    assert _with_level(lambda x: by_getattr(x, _Computed()), x) == [2.0, 5.0]

    def through_global(x):
        return x * COMPUTED.by_descriptor + COMPUTED.missing
    assert _with_level(kiln.compile(through_global), x) == [4.0, 10.0]


# ---- settings objects held in an argument object ----

class _Optimizer:
    momentum = 0.9

    def __init__(self):
        self.rate = 0.5


class _Training:
    def __init__(self):
        self.optimizer = _Optimizer()


def test_a_setting_of_an_object_held_in_an_argument_changed_between_calls_is_seen():
    # the argument's guard compared its own attributes, the held object as itself: a change of
    # training.optimizer.rate kept the first trace's value
    @kiln.compile
    def step(x, training):
        return x * training.optimizer.rate + training.optimizer.momentum
    training = _Training()
    x = np.arange(3.0)

    def set_momentum():
        training.optimizer.momentum = 0.1

    def delete_momentum():
        del training.optimizer.momentum

    results = _compiled_calls(lambda x: step(x, training), x, [
        lambda: setattr(training.optimizer, "rate", 2.0), set_momentum, delete_momentum,
        lambda: setattr(_Optimizer, "momentum", 0.0)])
    _Optimizer.momentum = 0.9
    assert results == [1.4, 2.9, 2.1, 2.9, 2.0]


class _Model:
    def __init__(self):
        self.training = _Training()

    def step(self, x):
        return x * self.training.optimizer.momentum


MODEL = _Model()


def test_a_class_attribute_of_an_object_held_by_self_a_global_or_a_closure_is_read_each_call():
    # self.training.optimizer.momentum, momentum _Optimizer's: _Optimizer.momentum = 0.1 unseen
    x = np.arange(3.0)
    held = _Model()
    compiled = [kiln.compile(_Model().step),
                kiln.compile(lambda x: x * MODEL.training.optimizer.momentum),
                kiln.compile(lambda x: x * held.training.optimizer.momentum)]
    for function in compiled:
        try:
            assert _compiled_calls(function, x, [
                lambda: setattr(_Optimizer, "momentum", 0.1)]) == [0.9, 0.1]
        finally:
            _Optimizer.momentum = 0.9



REGISTRY = {"optimizer": _Optimizer()}


def test_a_class_attribute_of_an_object_in_a_global_dict_is_read_each_call():
    # the dict's guard compared the object's own attributes: _Optimizer.momentum = 0.1 unseen
    compiled = kiln.compile(lambda x: x * REGISTRY["optimizer"].momentum)
    try:
        assert _compiled_calls(compiled, np.arange(3.0), [
            lambda: setattr(_Optimizer, "momentum", 0.1)]) == [0.9, 0.1]
    finally:
        _Optimizer.momentum = 0.9


TRAININGS = [_Training()]


def test_a_setting_of_an_object_held_by_an_item_of_a_global_list_is_seen():
    # TRAININGS[0].optimizer.rate: the list's guard held the optimizer as itself
    compiled = kiln.compile(lambda x: x * TRAININGS[0].optimizer.rate)
    assert _compiled_calls(compiled, np.arange(3.0), [
        lambda: setattr(TRAININGS[0].optimizer, "rate", 2.0)]) == [0.5, 2.0]
