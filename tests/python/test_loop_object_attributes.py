"""Attributes of objects a list holds, assigned in a time loop through an inner loop's target
(`for p in particles: p.x = p.x + p.v * dt`), carried by the loop (kiln._loop_object_attributes):
one loop node, the objects holding what NumPy's loop leaves in them. Such loops unrolled ("an
attribute of an object the body reaches changes"). Objects whose attributes are computed or
whose other attributes the body changes run the loop as written; the standard library's
namespaces are watched as the user's objects are (their attributes were assigned once, a wrong
answer). The objects of an argument are compared by identity as a loop given up over them puts
them back (`!=` asked bool() of their arrays, a graph break); such a call still runs eagerly,
as any that assigns an argument object's attribute does."""
import types

import numpy as np

from test_loop_list_items import check, loop_kinds


class Particle:
    def __init__(self, x, v):
        self.x = x
        self.v = v


class Clamped:
    def __init__(self, x):
        self._x = x

    @property
    def x(self):
        return self._x

    @x.setter
    def x(self, value):
        self._x = np.minimum(value, 1.0)


class Counted(Particle):
    def moved(self, dx):
        self.moves = getattr(self, "moves", 0) + 1  # another attribute, once per call
        return self.x + dx


def drift(x, v, n, dt):
    particles = [Particle(x.copy(), v.copy()), Particle(x * 2.0, v * 0.5), Particle(x - 1.0, 1.5)]
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return [particle.x for particle in particles]


def drift_with_a_step_count(x, n):
    walker = Particle(x.copy(), 0)
    walkers = {"a": walker, "b": Particle(x * 3.0, 0)}
    for t in range(n):
        for w in walkers.values():
            w.x = w.x * 0.9 + 0.1
            w.v += 1
    return walker.x, walker.v, walkers["b"].x, walkers["b"].v


def clamped_growth(x, n):
    items = [Clamped(x.copy()), Clamped(x * 0.5)]
    for t in range(n):
        for item in items:
            item.x = item.x + 0.25
    return [item.x for item in items]


def counted_moves(x, n):
    items = [Counted(x.copy(), 0.0), Counted(x + 1.0, 0.0)]
    for t in range(n):
        for item in items:
            item.x = item.moved(0.5)
    return [(item.x, item.moves) for item in items]


def namespaces(x, n):
    items = [types.SimpleNamespace(x=x.copy()), types.SimpleNamespace(x=x * 2.0)]
    for t in range(n):
        for item in items:
            item.x = item.x + 1.0
    return items[0].x, items[1].x


def drift_of_callers_particles(particles, n, dt):
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return len(particles)


def test_particles_in_a_list_are_one_loop():
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(30), rng.standard_normal(30)
    for n in (0, 1, 2, 3, 40):
        check(drift, x, v, n, 0.01)
    (kinds, short), (long_kinds, long) = (loop_kinds(drift, x, v, n, 0.01) for n in (20, 300))
    assert kinds[-1] == long_kinds[-1] == "loop" and "loop" not in kinds[:-1]
    assert long == short


def test_objects_a_dict_holds_with_python_numbers():
    x = np.linspace(0.0, 1.0, 6)
    for n in (0, 1, 2, 3, 25):
        check(drift_with_a_step_count, x, n)
    kinds, _ = loop_kinds(drift_with_a_step_count, x, 25)
    assert kinds[-1] == "loop"


def test_a_computed_attribute_runs_the_loop_as_written():
    x = np.linspace(0.0, 1.0, 5)
    for n in (0, 1, 3, 9):
        check(clamped_growth, x, n)


def test_a_method_assigning_another_attribute_runs_the_loop_as_written():
    x = np.arange(4.0)
    for n in (1, 3, 6):
        check(counted_moves, x, n)


def test_namespace_attributes_are_assigned_every_iteration():
    x = np.zeros(3)
    for n in (0, 1, 3, 10):
        check(namespaces, x, n)


def test_the_callers_particles_move_as_numpys():
    rng = np.random.default_rng(3)
    particles = [Particle(rng.standard_normal(8), rng.standard_normal(8)),
                 Particle(rng.standard_normal(8), 0.5)]
    for n in (0, 1, 4, 20):
        check(drift_of_callers_particles, particles, n, 0.1, calls=3)
