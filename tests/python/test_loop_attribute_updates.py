"""Attributes a loop assigns (`self.t += self.dt`, `acc.count += 1`) carried through names
(kiln._loop_attribute_updates): the loop is one loop node whatever its trip count, and the
objects hold what NumPy's run leaves in them (values, Python's and NumPy's types, arrays updated
in place); where something besides the loop's own code could see the attributes, the loop runs
as written. Such loops were unrolled ("an assignment to an attribute or a subscript of one")."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs import _assert_same


class Integrator:
    def __init__(self, dt):
        self.dt = dt
        self.t = 0.0
        self.steps = 0
        self.energy = np.zeros(3)

    def run(self, u, n):
        for _ in range(n):
            u = u - self.dt * u
            self.t += self.dt
            self.steps += 1
            self.energy += u[:3] ** 2
        return u

    def run_until(self, u, end_time):
        while self.t < end_time:
            u = u + self.dt * np.sin(u)
            self.t = self.t + self.dt
        return u

    def count_crossings(self, x):
        for i in range(1, len(x)):
            if x[i - 1] < 0 <= x[i]:
                self.steps += 1
        return self.steps

    def first_above(self, x, level):
        for i in range(len(x)):
            self.t += x[i]
            if self.t > level:
                break
        return self.t


    def sum_of_positives(self, x):
        for i in range(len(x)):
            if x[i] < 0:
                continue
            self.t += x[i]
            self.steps += 1
        return self.t


class Settings:
    def __init__(self, rate):
        self.rate = rate


class Learner:
    def __init__(self, rate):
        self.settings = Settings(rate)
        self.weight = 1.0
        self.updates = 0

    def fit(self, x):
        for i in range(len(x)):
            self.weight -= self.settings.rate * (self.weight - x[i])
            self.updates += 1
        return self.weight

    def fit_through_settings(self, x):
        for i in range(len(x)):
            self.weight -= self.settings.rate * (self.settings.owner.weight - x[i])
            self.updates += 1
        return self.weight


class Accumulator:
    def __init__(self):
        self.total = 0.0
        self.count = 0


def mean_of_positives(x):
    acc = Accumulator()
    for i in range(len(x)):
        if x[i] > 0:
            acc.total += x[i]
            acc.count += 1
    return acc.total / max(acc.count, 1), acc.count


def check_method(make, method, *arguments):
    """kiln.compile of the bound method agrees with NumPy: its result and the object's
    attributes afterwards (a fresh object each)."""
    mine, theirs = make(), make()
    got = kiln.compile(getattr(mine, method))(*copy.deepcopy(arguments))
    expected = getattr(theirs, method)(*copy.deepcopy(arguments))
    _assert_same(got, expected, f"result of {method}")
    assert_same_state(mine, theirs, method)
    return mine


def assert_same_state(mine, theirs, what):
    """The same attributes with the same values, in objects they hold too."""
    assert vars(mine).keys() == vars(theirs).keys()
    for name, value in vars(theirs).items():
        if isinstance(value, (Settings, Learner)):
            assert_same_state(getattr(mine, name), value, f"{what}.{name}")
        else:
            _assert_same(getattr(mine, name), value, f"attribute {name} after {what}")


def loop_report(function, *arguments):
    explained = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in explained.loops], explained.op_count


def test_an_integrators_time_loop_is_one_loop_with_numpys_attributes():
    u = np.random.default_rng(0).standard_normal(6)
    for steps in (0, 1, 2, 7, 60):
        check_method(lambda: Integrator(0.01), "run", u, steps)
    (kinds, short), (long_kinds, long) = (loop_report(Integrator(0.01).run, u, steps)
                                          for steps in (20, 2000))
    assert kinds == long_kinds == ["loop"]
    assert long == short


def test_an_attribute_array_is_updated_in_place_as_numpys():
    integrator = Integrator(0.1)
    energy = integrator.energy
    kiln.compile(integrator.run)(np.ones(4), 5)
    assert integrator.energy is energy and np.all(energy > 0)


def test_a_while_loop_whose_test_reads_the_attribute():
    u = np.linspace(0.0, 1.0, 5)
    for end in (0.0, 0.005, 0.015, 0.5):
        check_method(lambda: Integrator(0.01), "run_until", u, end)
    kinds, _ = loop_report(Integrator(0.01).run_until, u, 3.0)
    assert "loop" in kinds and "unrolled" not in kinds


def test_an_attribute_counted_under_a_branch_on_the_data():
    x = np.sin(np.arange(40.0))
    for n in (0, 1, 2, 40):
        check_method(lambda: Integrator(0.1), "count_crossings", x[:n])
    kinds, _ = loop_report(Integrator(0.1).count_crossings, x)
    assert kinds.count("loop") == 1 and "unrolled" not in kinds


def test_an_attribute_updated_until_a_break():
    x = np.abs(np.cos(np.arange(30.0)))
    for level in (-1.0, 0.5, 3.0, 100.0):
        check_method(lambda: Integrator(0.1), "first_above", x, level)
    kinds, _ = loop_report(Integrator(0.1).first_above, x, 3.0)
    assert "loop" in kinds and "unrolled" not in kinds


def test_an_attribute_updated_after_a_continue():
    x = np.sin(np.arange(25.0))
    for n in (0, 1, 2, 25):
        check_method(lambda: Integrator(0.1), "sum_of_positives", x[:n])
    kinds, _ = loop_report(Integrator(0.1).sum_of_positives, x)
    assert "loop" in kinds and "unrolled" not in kinds


def test_an_attribute_read_through_a_settings_object():
    x = np.linspace(0.0, 2.0, 30)
    for n in (0, 1, 2, 30):
        check_method(lambda: Learner(0.1), "fit", x[:n])
    kinds, _ = loop_report(Learner(0.1).fit, x)
    assert kinds == ["loop"]


def linked_learner():
    learner = Learner(0.1)
    learner.settings.owner = learner  # the settings reach the object: the loop runs as written
    return learner


def test_a_settings_object_that_reaches_back_runs_the_loop_as_written():
    mine, theirs = linked_learner(), linked_learner()
    x = np.linspace(0.0, 2.0, 8)
    got = kiln.compile(mine.fit_through_settings)(x)
    _assert_same(got, theirs.fit_through_settings(x), "weight")
    assert (mine.weight, mine.updates) == (theirs.weight, theirs.updates)


def test_a_local_objects_attributes():
    x = np.random.default_rng(1).standard_normal(30)
    compiled = kiln.compile(mean_of_positives)
    for n in (0, 1, 2, 30):
        got, expected = compiled(x[:n].copy()), mean_of_positives(x[:n].copy())
        _assert_same(got[0], expected[0], "mean")
        _assert_same(got[1], expected[1], "count")
    kinds, _ = loop_report(mean_of_positives, x)
    assert kinds.count("loop") == 1 and "unrolled" not in kinds


# ---- where something else may see the attributes: the loop as written ----

class Walker:
    def __init__(self):
        self.position = 0.0
        self.visits = 0

    def step(self, x):
        self.visits += 1
        return x * self.visits

    def walk(self, x, n):
        for i in range(n):
            self.position += self.step(x[i % len(x)])
        return self.position


class Quantised:
    def __init__(self):
        self._level = 0.0

    @property
    def level(self):
        return self._level

    @level.setter
    def level(self, value):
        self._level = np.round(value * 2) / 2

    def fill(self, x):
        for i in range(len(x)):
            self.level += x[i]
        return self.level


class WeightedWalker(Walker):
    def walk_weighted(self, x, weight):
        for i in range(len(x)):
            self.visits += 1
            self.position += weight(x[i])
        return self.position


def add_twice(x):
    acc = Accumulator()
    alias = acc
    for i in range(len(x)):
        acc.count += 1
        alias.count += 2
        acc.total += x[i] * alias.count
    return acc.total, acc.count


def test_a_method_that_reads_the_attributes_runs_the_loop_as_written():
    check_method(Walker, "walk", np.arange(1.0, 4.0), 6)


def test_a_property_runs_the_loop_as_written():
    check_method(Quantised, "fill", np.full(5, 0.3))


WALKER = WeightedWalker()


def weight_by_walker(value):
    return value * (WALKER.visits + 1)


def test_a_helper_that_reaches_the_object_runs_the_loop_as_written():
    x = np.arange(1.0, 5.0)
    WALKER.__init__()
    got, state = kiln.compile(WALKER.walk_weighted)(x, weight_by_walker), dict(vars(WALKER))
    WALKER.__init__()
    _assert_same(got, WALKER.walk_weighted(x, weight_by_walker), "position")
    assert state == vars(WALKER)


def test_one_object_under_two_names():
    x = np.arange(1.0, 6.0)
    got, expected = kiln.compile(add_twice)(x), add_twice(x)
    for a, b in zip(got, expected):
        _assert_same(a, b, "total and count")


def test_an_exception_leaves_the_attributes_as_pythons_loop_left_them():
    class Failing(Integrator):
        def run_to_failure(self, u, n):
            for i in range(n):
                self.steps += 1
                self.t += self.dt
                if i == 3:
                    raise ValueError("step 3")
            return u

    mine, theirs = Failing(0.5), Failing(0.5)
    with pytest.raises(ValueError):
        kiln.compile(mine.run_to_failure)(np.ones(2), 10)
    with pytest.raises(ValueError):
        theirs.run_to_failure(np.ones(2), 10)
    assert (mine.steps, mine.t) == (theirs.steps, theirs.t) == (4, 2.0)
