"""What a compiled call changes of the caller's state happens as NumPy makes it happen: a trace
that changes a container the caller handed in (a list appended to, a dict key set, a dataclass
attribute assigned), assigns an attribute of self or of a global object, or stores a traced
array where the caller can see it, runs eagerly (the change was lost on a copy, or a dead
tracer was left behind); guards are recorded before the trace, so state it changed makes the
next call trace again rather than match stale values."""
import dataclasses
import types

import numpy as np
import pytest

import kiln

# NumPy 2: numbers that change between calls are graph inputs (one entry more); 1.x: static.
DYNAMIC = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


@dataclasses.dataclass
class State:
    x: np.ndarray
    v: np.ndarray


def assign_attribute(state):
    state.x = state.x + 1.0
    return state.v * 2.0


def append(items):
    items.append(items[0] * 2.0)
    return items[0] + 1.0


def set_key(mapping):
    mapping["y"] = mapping["x"] * 2.0
    return mapping["x"] + 1.0


def set_item(items):
    items[0] = items[0] * 2.0
    return items[0] + 1.0


def pop(items):
    return items.pop() + 1.0


@pytest.mark.parametrize("function, make", [
    (assign_attribute, lambda: State(np.ones(3), np.ones(3))),
    (append, lambda: [np.ones(3)]),
    (set_key, lambda: {"x": np.ones(3)}),
    (set_item, lambda: [np.ones(3)]),
    (pop, lambda: [np.ones(3), np.full(3, 2.0), np.full(3, 3.0), np.full(3, 4.0)]),
])
def test_changes_to_argument_containers_reach_the_caller(function, make):
    # They changed a copy holding tracers: the caller's list, dict or object stayed as it was.
    compiled = kiln.compile(function)
    mine, theirs = make(), make()
    for _ in range(3):
        np.testing.assert_array_equal(compiled(mine), function(theirs))
        flat_mine = vars(mine) if dataclasses.is_dataclass(mine) else mine
        flat_theirs = vars(theirs) if dataclasses.is_dataclass(theirs) else theirs
        assert repr(flat_mine) == repr(flat_theirs)
    report = kiln.explain(function)(make())
    assert report.break_reasons and "changes a list, dict or dataclass" in report.break_reasons[0].reason


LOG = []


def logged(x):
    y = x * 2.0
    LOG.append(y)
    return y + 1.0


def test_a_traced_array_stored_in_a_global_list_is_the_eager_array():
    # The global list kept a dead tracer from the trace, and later calls appended nothing.
    compiled = kiln.compile(logged)
    for n in (3, 3, 4):
        np.testing.assert_array_equal(compiled(np.ones(n)), np.full(n, 3.0))
    assert len(LOG) == 3
    assert all(type(entry) is np.ndarray for entry in LOG)
    np.testing.assert_array_equal(LOG[-1], np.full(4, 2.0))


class Simulation:
    def __init__(self):
        self.x, self.t, self.steps = np.ones(3), 0.0, 0

    def step(self, dt):
        self.t += dt
        self.steps += 1
        self.x = self.x * 0.5
        return self.x.sum()


class Adam:
    def __init__(self, w):
        self.w, self.m = w, np.zeros_like(w)

    def update(self, g):
        self.m = 0.9 * self.m + 0.1 * g
        self.w -= self.m  # in place: a write-back into the caller's array, compiled
        return self.w.sum()


def test_attributes_a_bound_method_assigns_reach_the_object():
    # The trace ran over a stand-in for self: t, steps and x stayed as they were, silently.
    # Each run of the graph assigns them now (t and steps dynamic numbers after one change).
    mine, theirs = Simulation(), Simulation()
    compiled = kiln.compile(mine.step)
    for _ in range(4):
        assert compiled(0.1) == theirs.step(0.1)
        assert (mine.t, mine.steps) == (theirs.t, theirs.steps)
        assert type(mine.t) is float and type(mine.steps) is int and type(mine.x) is np.ndarray
        np.testing.assert_array_equal(mine.x, theirs.x)
    assert len(compiled._kiln_function.cache) == (2 if DYNAMIC else 4)
    report = kiln.explain(Simulation().step)(0.1)
    assert not report.break_reasons and len(report.graphs) == 1
    optimizer, expected = Adam(np.ones(3)), Adam(np.ones(3))
    update = kiln.compile(optimizer.update)
    for step in range(3):
        gradient = np.full(3, float(step))
        np.testing.assert_allclose(update(gradient), expected.update(gradient), rtol=1e-15)
        np.testing.assert_allclose(optimizer.m, expected.m, rtol=1e-15)
        np.testing.assert_allclose(optimizer.w, expected.w, rtol=1e-15)


CONFIG = types.SimpleNamespace(scale=np.ones(2), calls=0)


def reads_and_counts(x):
    CONFIG.calls += 1
    return x * CONFIG.scale


def test_an_attribute_of_a_global_object_the_function_assigns_changes_on_every_call():
    compiled = kiln.compile(reads_and_counts)
    for calls in (1, 2, 3, 4):
        np.testing.assert_array_equal(compiled(np.ones(2)), np.ones(2))
        assert CONFIG.calls == calls and type(CONFIG.calls) is int
    assert len(compiled._kiln_function.cache) == (2 if DYNAMIC else 4)


class Forgets:
    def __init__(self):
        self.w, self.cache = np.ones(2), np.zeros(2)

    def step(self, x):
        del self.cache
        return x * self.w


def test_a_trace_that_deletes_an_attribute_runs_eagerly():
    forgets = Forgets()
    np.testing.assert_array_equal(kiln.compile(forgets.step)(np.ones(2)), np.ones(2))
    assert not hasattr(forgets, "cache")


def increments(x, counts):
    counts["n"] += 1
    return x * counts["n"]


def test_state_a_trace_changes_is_read_again_on_the_next_call():
    # Guards recorded after the trace held n == 2: the next call (n == 2, eagerly n becomes 3)
    # matched and returned x * 2.
    compiled, counts, expected = kiln.compile(increments), {"n": 1}, {"n": 1}
    for _ in range(3):
        np.testing.assert_array_equal(compiled(np.ones(2), counts),
                                      increments(np.ones(2), expected))
        assert counts == expected


class GradientDescent:
    """ML-From-Scratch's Regression.fit: weights and a history of the losses, in the object."""

    def fit(self, X, y, steps=5):
        self.w = np.zeros(X.shape[1])
        self.errors = []
        for _ in range(steps):
            residual = y - X @ self.w
            self.errors.append(np.mean(residual ** 2))   # np.float64: a static of the guards
            self.w = self.w + 0.01 * residual @ X
        return self.w


def test_a_call_structure_whose_traces_change_the_caller_runs_eagerly_without_tracing(
        monkeypatch):
    # Each fit left new losses in model.errors, so every call missed the guards, traced the
    # whole fit, gave up (the trace assigns the model's attributes) and ran eagerly anyway
    X, y = np.random.default_rng(1).normal(size=(20, 3)), np.arange(20.0)
    mine, theirs = GradientDescent(), GradientDescent()
    compiled = kiln.compile(lambda model, X, y: model.fit(X, y))
    function = compiled._kiln_function
    traces = []
    trace_once = function._trace_once
    monkeypatch.setattr(function, "_trace_once", lambda *a: traces.append(1) or trace_once(*a))
    for call in range(6):
        y = y + 1.0   # new data each call: new losses
        np.testing.assert_allclose(compiled(mine, X, y), theirs.fit(X, y), rtol=1e-12)
        np.testing.assert_allclose(mine.errors, theirs.errors, rtol=1e-12)
    # the first structure (no weights yet) once; the next twice, then eager without a trace
    assert len(traces) == 3
