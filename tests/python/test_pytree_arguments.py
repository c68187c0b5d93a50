"""Namedtuples and dataclass instances are pytree containers of a call's arguments and results:
their arrays graph inputs, their other fields guards (they ran eagerly, or were rebuilt only as
results)."""
import collections
import dataclasses
import typing

import numpy as np
import pytest

import kiln

Linear = collections.namedtuple("Linear", "w b")


class Scaled(typing.NamedTuple):
    w: np.ndarray
    scale: float


@dataclasses.dataclass
class State:
    x: np.ndarray
    v: np.ndarray
    dt: float = 0.1


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: np.ndarray
    n: int


def leapfrog(state):
    v = state.v - state.dt * state.x
    return State(state.x + state.dt * v, v, state.dt)


def explained(function, *args):
    report = kiln.explain(function)(*args)
    assert not report.break_reasons, report.break_reasons
    assert len(report.graphs) == 1
    return report.result


def test_namedtuple_arguments_are_compiled_and_read_at_each_call():
    def layer(p, q, x):
        return np.tanh(x @ p.w + p.b) * q.scale + q.w.sum()
    rng = np.random.default_rng(0)
    p = Linear(rng.standard_normal((4, 3)), rng.standard_normal(3))
    x = rng.standard_normal((2, 4))
    compiled = kiln.compile(layer)
    for scale in (2.0, 3.0, 5.0):
        q = Scaled(rng.standard_normal(5), scale)
        np.testing.assert_allclose(compiled(p, q, x), layer(p, q, x), rtol=1e-12)
        np.testing.assert_allclose(explained(layer, p, q, x), layer(p, q, x), rtol=1e-12)
    p.w[0, 0] = 100.0  # in place: read again
    np.testing.assert_allclose(compiled(p, q, x), layer(p, q, x), rtol=1e-12)
    # Another namedtuple class of the same fields is another entry, a plain tuple too.
    other = collections.namedtuple("Other", "w b")(p.w, p.b)
    np.testing.assert_allclose(compiled(other, q, x), layer(other, q, x), rtol=1e-12)
    with pytest.raises(AttributeError, match="'tuple' object has no attribute 'w'"):
        compiled(tuple(p), q, x)


def test_dataclass_arguments_and_results_are_containers():
    state = State(np.linspace(0.0, 1.0, 5), np.zeros(5))
    compiled = kiln.compile(leapfrog)
    expected = state
    for _ in range(4):
        state, expected = compiled(state), leapfrog(expected)
        assert type(state) is State and type(state.x) is np.ndarray and state.dt == 0.1
        np.testing.assert_allclose(state.x, expected.x, rtol=1e-14)
        np.testing.assert_allclose(state.v, expected.v, rtol=1e-14)
    state.dt = expected.dt = 0.25  # a changed field is a new guard value (or a dynamic one)
    np.testing.assert_allclose(compiled(state).x, leapfrog(expected).x, rtol=1e-14)
    assert type(explained(leapfrog, state)) is State
    frozen = kiln.compile(lambda f: f.a * f.n)
    for n in (2, 3, 4):
        np.testing.assert_array_equal(frozen(Frozen(np.arange(3.0), n)), np.arange(3.0) * n)


def test_a_dataclass_with_extra_attributes_guards_them():
    compiled = kiln.compile(lambda s: s.x * s.extra)
    state = State(np.ones(2), np.zeros(2))
    state.extra = 2.0
    np.testing.assert_array_equal(compiled(state), [2.0, 2.0])
    del state.extra
    with pytest.raises(AttributeError):
        compiled(state)


class Layer:
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.w, self.b = rng.standard_normal((n, n)), rng.standard_normal(n)

    def forward(self, x):
        return np.tanh(x @ self.w + self.b)

    @kiln.compile
    def compiled_forward(self, x):  # compiled in its class body: self is argument 0
        return np.tanh(x @ self.w + self.b)


class Network:
    def __init__(self, n):
        self.layers = [Layer(n, seed) for seed in range(3)]
        self.scale = 2.0

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x * self.scale


def test_objects_holding_arrays_are_containers():
    # They ran eagerly: a method compiled in its class body (self holding arrays), a callable
    # object whose layers hold the arrays, a closure over such an object.
    x = np.linspace(-1.0, 1.0, 8).reshape(2, 4)
    layer, network = Layer(4, 0), Network(4)
    bound = kiln.compile(network)
    closure = kiln.compile(lambda x: layer.forward(x) * 3.0)
    for _ in range(2):
        np.testing.assert_allclose(layer.compiled_forward(x), layer.forward(x), rtol=1e-14)
        np.testing.assert_allclose(bound(x), network(x), rtol=1e-14)
        np.testing.assert_allclose(closure(x), layer.forward(x) * 3.0, rtol=1e-14)
        layer.w[0, 0] += 1.0  # in place: read again
        network.layers[2].b[:] = 0.5
    network.layers[1] = Layer(4, 7)  # assigned: a new object, the same guards
    np.testing.assert_allclose(bound(x), network(x), rtol=1e-14)
    network.scale = 3.0
    np.testing.assert_allclose(bound(x), network(x), rtol=1e-14)
    for report in (kiln.explain(Layer.compiled_forward)(layer, x), kiln.explain(network)(x),
                   kiln.explain(closure)(x)):
        assert not report.break_reasons and len(report.graphs) == 1


class Slotted:
    __slots__ = ("w", "__dict__")

    def __init__(self, w):
        self.w, self.scale = w, 2.0


class Computed:
    def __init__(self, w):
        self.w = w

    def __getattr__(self, name):
        return self.w * 2.0 if name == "doubled" else super().__getattribute__(name)


class Finalized:
    closed = 0

    def __init__(self, w):
        self.w = w

    def __del__(self):  # a copy's would run too: the caller's object counted closed
        Finalized.closed += 1


def test_objects_that_cannot_be_copied_as_containers_run_eagerly():
    x = np.ones(3)
    shared = Layer(3, 0)
    finalized = Finalized(np.arange(3.0))
    cases = [(lambda pair: pair[0].w.sum() + pair[1].w.sum(), [shared, shared]),
             (lambda s: s.w * s.scale, Slotted(np.arange(3.0))),
             (lambda c: c.doubled + 1.0, Computed(np.arange(3.0))),
             (lambda f: f.w * 2.0, finalized)]
    for function, argument in cases:
        np.testing.assert_allclose(kiln.compile(function)(argument), function(argument))
        report = kiln.explain(function)(argument)
        assert report.break_reasons and "holds arrays" in report.break_reasons[0].reason
    assert Finalized.closed == 0
    cycle = Layer(3, 1)
    cycle.parent = cycle  # reached through itself
    np.testing.assert_allclose(kiln.compile(Layer.forward)(cycle, x), cycle.forward(x))


class Attention:
    def __init__(self):
        self.W = np.ones((2, 2))


class Block:
    def __init__(self):
        self.attention = Attention()


class Encoder:
    def __init__(self):
        self.blocks = [Block(), Block()]


class Model:
    def __init__(self):
        self.encoder = Encoder()


def encode(model, x):
    for block in model.encoder.blocks:
        x = x @ block.attention.W
    return x


def test_arrays_deep_in_an_argument_object_are_read_at_each_call():
    # Five levels down, the weights were found by no depth-limited search: baked into the
    # graph as constants, a change made in place to them went unseen.
    model, x = Model(), np.ones(2)
    compiled = kiln.compile(encode)
    np.testing.assert_array_equal(compiled(model, x), encode(model, x))
    model.encoder.blocks[0].attention.W[:] = 3.0
    np.testing.assert_array_equal(compiled(model, x), encode(model, x))
    report = kiln.explain(encode)(model, x)
    assert not report.break_reasons and len(report.graphs) == 1
