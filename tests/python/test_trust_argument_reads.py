"""State read through a function or object passed as an argument: a callback's globals, closure
variables, default values and the helpers it calls (`integrate(f, y)`), a bound method's object,
a partial's arguments, and a settings object's class attributes (`cfg.eps` where eps is the
class's). The guard held the argument itself, equal to itself whatever changed in what it
reads, so a later change gave the first trace's answer silently; each must be read at every
call, as eager NumPy reads it, and an array among them (a constant of the graph) must make the
call run eagerly."""
import functools
import types

import numpy as np

import kiln

X = np.arange(4.0)
SCALE = 2.0
TABLE = np.arange(4.0)


def apply(x, fn):
    return fn(x) + 1.0


def scaled(v):
    return v * SCALE


def twice_scaled(v):
    return scaled(v) * 2.0


def check_each_change(compiled, fn, args, changes):
    for change in (lambda: None, *changes):
        change()
        np.testing.assert_array_equal(compiled(*args), fn(*args))


def test_a_callbacks_globals_are_read_at_each_call(traces):
    global SCALE
    compiled = kiln.compile(apply)

    def set_scale(value):
        global SCALE
        SCALE = value
    try:
        check_each_change(compiled, apply, (X, scaled), [lambda: set_scale(5.0)])
        # and through a helper the callback calls
        check_each_change(compiled, apply, (X, twice_scaled), [lambda: set_scale(7.0)])
    finally:
        SCALE = 2.0
    calls = len(traces)
    compiled(X, scaled)
    compiled(X, scaled)
    assert len(traces) == calls  # nothing changed: the entry is used, no trace


def make_scaler(factor):
    def scale(v):
        return v * factor[0]
    return scale


def test_a_callbacks_closure_and_defaults_are_read_at_each_call():
    compiled = kiln.compile(apply)
    factor = [2.0]
    check_each_change(compiled, apply, (X, make_scaler(factor)),
                      [lambda: factor.__setitem__(0, 7.0)])

    def with_default(v, k=3.0):
        return v * k
    check_each_change(compiled, apply, (X, with_default),
                      [lambda: setattr(with_default, "__defaults__", (9.0,))])
    lambda_over = {"k": 1.5}
    check_each_change(compiled, apply, (X, lambda v: v * lambda_over["k"]),
                      [lambda: lambda_over.__setitem__("k", -2.0)])


class Scaler:
    offset = 1.0

    def __init__(self):
        self.factor = 2.0

    def __call__(self, v):
        return v * self.factor + self.offset

    def scale(self, v):
        return v * self.factor + self.offset


def test_a_bound_methods_object_and_class_are_read_at_each_call():
    compiled = kiln.compile(apply)
    scaler = Scaler()
    try:
        check_each_change(compiled, apply, (X, scaler.scale),
                          [lambda: setattr(scaler, "factor", 4.0),
                           lambda: setattr(Scaler, "offset", 10.0)])
    finally:
        Scaler.offset = 1.0


class GlobalScaler:
    def __call__(self, v):
        return v * SCALE

    def scale_of(self, v):
        return v + SCALE


def calls_scale_of(x, scaler):
    return scaler.scale_of(x) * 2.0


def test_what_an_argument_objects_methods_read_is_read_at_each_call():
    global SCALE
    try:
        for fn in (apply, calls_scale_of):
            SCALE = 2.0
            check_each_change(kiln.compile(fn), fn, (X, GlobalScaler()),
                              [lambda: globals().__setitem__("SCALE", 6.0)])
    finally:
        SCALE = 2.0


def test_a_partials_arguments_are_read_at_each_call():
    compiled = kiln.compile(apply)
    keywords = functools.partial(np.multiply, 2.0)
    check_each_change(compiled, apply, (X, keywords), [])

    def power(v, p):
        return v ** p
    partial = functools.partial(power, p=2.0)
    check_each_change(compiled, apply, (X, partial),
                      [lambda: partial.keywords.__setitem__("p", 3.0)])


class Settings:
    eps = 1.0
    clip = 5.0


def uses_settings(x, cfg):
    return np.minimum(x * cfg.eps, cfg.clip)


def test_class_attributes_read_through_an_argument_are_read_at_each_call():
    compiled = kiln.compile(uses_settings)
    settings = Settings()
    try:
        check_each_change(compiled, uses_settings, (X, settings),
                          [lambda: setattr(Settings, "eps", 3.0),
                           lambda: setattr(Settings, "clip", 2.5),
                           lambda: setattr(settings, "eps", 0.5),  # now its own
                           lambda: delattr(settings, "eps")])
    finally:
        Settings.eps, Settings.clip = 1.0, 5.0


class WithTable:
    table = np.arange(4.0)


def adds_table(x, holder):
    return x + holder.table


def adds_global_table(v):
    return v + TABLE


def test_an_array_read_through_an_argument_runs_eagerly(compile_logged):
    logged, _ = compile_logged(adds_table, (X, WithTable()), "graph_breaks")
    assert "WithTable.table holds an array" in logged and "constant of the graph" in logged
    compiled = kiln.compile(adds_table)
    holder = WithTable()
    old = WithTable.table.copy()
    try:
        check_each_change(compiled, adds_table, (X, holder),
                          [lambda: WithTable.table.__setitem__(0, 100.0),
                           lambda: setattr(WithTable, "table", np.full(4, 3.0))])
    finally:
        WithTable.table = old
    compiled = kiln.compile(apply)
    check_each_change(compiled, apply, (X, adds_global_table),
                      [lambda: TABLE.__setitem__(1, 50.0)])
    TABLE[1] = 1.0
    weights = np.ones(4)
    check_each_change(compiled, apply, (X, lambda v: v @ weights * v),
                      [lambda: weights.__setitem__(2, 9.0)])


def test_numpy_functions_as_arguments_still_compile(traces):
    compiled = kiln.compile(apply)
    for fn in (np.sin, np.exp, np.sqrt):
        np.testing.assert_allclose(compiled(X, fn), apply(X, fn))
    calls = len(traces)
    compiled(X, np.sin)
    assert len(traces) == calls


BIG = {f"k{i}": float(i) for i in range(300)}


def reads_big(v):
    return v * BIG["k3"]


def test_a_large_container_read_through_an_argument_runs_eagerly(compile_logged):
    logged, _ = compile_logged(apply, (X, reads_big), "graph_breaks")
    assert "global 'BIG' of reads_big() is a mutable container too large" in logged
    compiled = kiln.compile(apply)
    try:
        check_each_change(compiled, apply, (X, reads_big), [lambda: BIG.__setitem__("k3", 9.0)])
    finally:
        BIG["k3"] = 3.0


def uses_a_class(x, klass):
    return x * klass.eps + klass.clip


def uses_a_module(x, module):
    return x * module.k + module.helper(x)


def test_a_class_or_module_passed_as_an_argument_is_read_at_each_call():
    compiled = kiln.compile(uses_a_class)
    try:
        check_each_change(compiled, uses_a_class, (X, Settings),
                          [lambda: setattr(Settings, "eps", 3.0),
                           lambda: setattr(Settings, "clip", -1.0)])
    finally:
        Settings.eps, Settings.clip = 1.0, 5.0
    module = types.ModuleType("kiln_test_argument_module")  # a user's module (no file)
    module.k, module.SHIFT = 2.0, 1.0
    exec("def helper(v):\n    return v + SHIFT\n", vars(module))
    compiled = kiln.compile(uses_a_module)
    check_each_change(compiled, uses_a_module, (X, module),
                      [lambda: setattr(module, "k", 5.0), lambda: setattr(module, "SHIFT", 7.0)])


class Layer:
    """An object holding arrays (a container of the call: its arrays are inputs) whose class
    attributes and methods read state of their own."""
    gain = 2.0
    unused = np.zeros(3)  # a class array the code never names: no reason to run eagerly

    def __init__(self):
        self.w = np.full(4, 0.5)

    def activation(self, v):
        return np.maximum(v, 0.0) * SCALE


def forward(layer, x):
    return layer.activation(x * layer.w) * layer.gain


def test_an_argument_holding_arrays_has_its_class_and_methods_read_at_each_call(traces):
    global SCALE
    compiled = kiln.compile(forward)
    layer = Layer()
    try:
        check_each_change(compiled, forward, (layer, X),
                          [lambda: setattr(Layer, "gain", 3.0),
                           lambda: globals().__setitem__("SCALE", 5.0),
                           lambda: layer.w.__setitem__(0, 9.0)])
    finally:
        Layer.gain, SCALE = 2.0, 2.0
    calls = len(traces)
    compiled(layer, X)
    assert len(traces) == calls  # traced, not eager, and the entry is used


class Problem:
    """An ODE problem object holding its right-hand side (solve_ivp-style code)."""

    def __init__(self, rhs, y0=None):
        self.rhs = rhs
        if y0 is not None:
            self.y0 = y0


def euler(problem, y, h, steps):
    for _ in range(steps):
        y = y + h * problem.rhs(y)
    return y


def test_a_callback_held_by_an_argument_object_has_what_it_reads_read_at_each_call(traces):
    # problem.rhs reads the global SCALE: the object's snapshot compared the callback only
    global SCALE
    compiled = kiln.compile(euler)
    plain, holding = Problem(scaled), Problem(scaled, y0=np.ones(4))  # (a container of arrays)
    try:
        for problem in (plain, holding):
            check_each_change(compiled, euler, (problem, X, 0.1, 3),
                              [lambda: globals().__setitem__("SCALE", 5.0),
                               lambda: globals().__setitem__("SCALE", -1.0)])
    finally:
        SCALE = 2.0
    calls = len(traces)
    compiled(plain, X, 0.1, 3)
    assert len(traces) == calls  # no change: no new trace


class Oscillator:
    def __init__(self, k):
        self.k = k

    def rhs(self, y):
        return -self.k * y

    def __call__(self, y):
        return self.rhs(y)


def step_with(model, y):
    return y + 0.1 * model(y) + model.rhs(y)


def test_a_method_replaced_on_an_argument_objects_class_is_seen(traces):
    # The trace ran the old method: the object's snapshot and its class's data were the same
    original_rhs, original_call = Oscillator.rhs, Oscillator.__call__
    compiled = kiln.compile(step_with)
    model = Oscillator(2.0)
    try:
        check_each_change(compiled, step_with, (model, X), [
            lambda: setattr(Oscillator, "rhs", lambda self, y: self.k * y * 10),
            lambda: setattr(Oscillator, "__call__", lambda self, y: self.rhs(y) * 100)])
    finally:
        Oscillator.rhs, Oscillator.__call__ = original_rhs, original_call
    compiled(model, X)
    calls = len(traces)
    compiled(model, X)
    assert len(traces) == calls  # no change: no new trace


class Scaled:
    def __init__(self, v):
        self.v = v * SCALE  # a global the constructor reads


def construct(cls, x):
    return cls(x).v + 1.0


def test_a_compiled_callback_and_a_class_called_have_what_they_read_read_at_each_call(traces):
    # A kiln.compile'd callback's globals, and a class's constructor's, were read at the trace
    global SCALE
    compiled_apply, compiled_construct = kiln.compile(apply), kiln.compile(construct)
    compiled_scaled = kiln.compile(scaled)
    try:
        check_each_change(compiled_apply, apply, (X, compiled_scaled),
                          [lambda: globals().__setitem__("SCALE", 5.0)])
        check_each_change(compiled_construct, construct, (Scaled, X),
                          [lambda: globals().__setitem__("SCALE", -1.0)])
    finally:
        SCALE = 2.0
    compiled_construct(Scaled, X)
    calls = len(traces)
    compiled_construct(Scaled, X)
    assert len(traces) == calls
