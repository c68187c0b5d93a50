"""State read by a name the code does not spell (getattr(self, name), vars(obj)[key],
obj.__dict__[key], globals()[name], eval, sys.modules[__name__].G): kiln read at each call only
what the code names, so such a read was made once, by the trace, and every later call returned
the first call's value. Now every attribute of an object read that way is read at each call,
and a function reading module globals by computed names runs eagerly."""
import sys
import types

import numpy as np
import pytest

import kiln

X = np.arange(3.0)
SCALE = 2.0


def _agree(plain, compiled, *args):
    expected, got = plain(*args), compiled(*args)
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)


class Model:
    factor = 2.0

    def __init__(self):
        self.w = 2.0
        self.layer0 = np.ones(3)
        self.kind = "double"

    def double(self, x):
        return x * 2

    def triple(self, x):
        return x * 3

    def by_getattr(self, x, name):
        return x * getattr(self, name)

    def by_dict(self, x):
        return x * self.__dict__["w"] + vars(self)["layer0"]

    def by_class(self, x):
        return x * getattr(Model, "factor")

    def by_method_name(self, x):
        return getattr(self, self.kind)(x) + getattr(self, "layer0")


@pytest.mark.parametrize("method, args", [
    ("by_getattr", ("w",)), ("by_getattr", ("layer0",)), ("by_dict", ()), ("by_class", ()),
    ("by_method_name", ()),
])
def test_attributes_read_by_computed_name_are_read_at_every_call(method, args):
    mine, theirs = Model(), Model()
    compiled = kiln.compile(getattr(mine, method))
    for value in (2.0, 3.0, 5.0):
        for model in (mine, theirs):
            model.w = value
            model.layer0[0] = value          # changed in place
            model.kind = "triple" if value > 2 else "double"
        Model.factor = value
        _agree(getattr(theirs, method), compiled, X, *args)
    Model.factor = 2.0


def test_getattr_of_self_still_compiles_once():
    model = Model()
    compiled = kiln.compile(model.by_method_name)
    for _ in range(3):
        _agree(model.by_method_name, compiled, X)
    assert len(compiled._kiln_function.cache) == 1


def test_a_global_object_read_by_computed_name():
    config = types.SimpleNamespace(scale=2.0, shift=np.zeros(3))
    fn = lambda x, name: x * getattr(config, name) + vars(config)["shift"]  # noqa: E731
    compiled = kiln.compile(fn)
    for value in (2.0, 3.0, 4.0):
        config.scale = value
        config.shift[1] = value
        _agree(fn, compiled, X, "scale")


def act_relu(x):
    return np.maximum(x, 0)


def act_negate(x):
    return -x


def by_registry(x, name):
    return globals()["act_" + name](x)


def by_globals_get(x):
    return x * globals().get("SCALE", 0.0)


def by_eval(x):
    return x * eval("SCALE")


def by_sys_modules(x):
    return x * sys.modules[__name__].SCALE


@pytest.mark.parametrize("fn", [by_globals_get, by_eval, by_sys_modules])
def test_module_globals_read_by_computed_name_are_read_at_every_call(fn):
    global SCALE
    compiled = kiln.compile(fn)
    try:
        for value in (2.0, 3.0, 4.0):
            SCALE = value
            _agree(fn, compiled, X)
    finally:
        SCALE = 2.0


def test_a_registry_of_functions_by_name_sees_a_rebound_entry():
    global act_relu
    compiled = kiln.compile(by_registry)
    original = act_relu
    try:
        _agree(by_registry, compiled, X - 1, "relu")
        act_relu = lambda x: x * 100  # noqa: E731
        _agree(by_registry, compiled, X - 1, "relu")
        _agree(by_registry, compiled, X - 1, "negate")
    finally:
        act_relu = original


def test_attrgetter_and_getattribute_read_at_every_call():
    import operator

    class Holder:
        def __init__(self):
            self.w = 2.0

        def by_attrgetter(self, x):
            return x * operator.attrgetter("w")(self)

        def by_getattribute(self, x):
            return x * self.__getattribute__("w")

    holder = Holder()
    for method in ("by_attrgetter", "by_getattribute"):
        compiled = kiln.compile(getattr(holder, method))
        for value in (2.0, 3.0):
            holder.w = value
            _agree(getattr(holder, method), compiled, X)
