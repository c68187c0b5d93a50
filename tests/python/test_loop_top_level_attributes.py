"""Attributes of objects a list, dict or tuple holds, assigned at the loop's own level through
an item (`particles[0].x = particles[0].x + particles[0].v * dt`, `objs[k].v = ...`): carried
by the loop as the inner-loop form is (kiln._loop_object_attributes), one loop node holding
what NumPy's loop leaves in the objects. Such loops were refused before they were traced ("an
assignment to an attribute or a subscript of one"): 2,000 steps unrolled into 2,004 ops. An
index the loop varies, an object two items deep, a namespace, a computed attribute, a method
assigning another attribute and such an assignment in a branch still leave the loop (or the
branch) as written, with NumPy's values."""
import types

import numpy as np

from test_loop_list_items import check, loop_kinds
from test_loop_object_attributes import Clamped, Counted, Particle


def first_particle_drifts(x, v, n, dt):
    particles = [Particle(x.copy(), v.copy()), Particle(x * 2.0, v * 0.5)]
    for t in range(n):
        particles[0].x = particles[0].x + particles[0].v * dt
    return [q.x for q in particles]


def keyed_objects_with_python_numbers(x, n):
    objs = {"a": Particle(x.copy(), 0.0), "b": Particle(x * 2.0, 1.0)}
    k = "b"
    for t in range(n):
        objs[k].v = objs[k].v * 0.5 + 1.0
        objs["a"].x = objs["a"].x * 0.9 + objs[k].v
    return objs["a"].x, objs["b"].v, objs["b"].x


def one_object_under_three_names(x, n):
    p = Particle(x.copy(), 1.5)
    particles = (p, p)
    for t in range(n):
        particles[0].x = particles[1].x * 0.5 + p.v
        p.v = p.v + 1.0
    return p.x, p.v, particles[1].x


def namespaces_in_a_list(x, n):
    items = [types.SimpleNamespace(x=x.copy()), types.SimpleNamespace(x=x * 2.0)]
    for t in range(n):
        items[1].x = items[1].x + items[0].x
    return items[0].x, items[1].x


def callers_particles(particles, n, dt):
    for t in range(n):
        particles[-1].x = particles[-1].x + particles[-1].v * dt
    return len(particles)


def index_the_loop_varies(x, n):
    particles = [Particle(x.copy(), 1.0), Particle(x * 2.0, 2.0)]
    for t in range(n):
        particles[t % 2].x = particles[t % 2].x + particles[t % 2].v
    return particles[0].x, particles[1].x


def index_the_loop_carries(x, n):
    particles = [Particle(x.copy(), 1.0), Particle(x * 2.0, 2.0)]
    k = 0
    for t in range(n):
        particles[k].x = particles[k].x * 0.5 + particles[k].v
        k = 1 - k
    return particles[0].x, particles[1].x, k


def two_items_deep(x, n):
    grid = [[Particle(x.copy(), 1.0)], [Particle(x * 2.0, 2.0)]]
    for t in range(n):
        grid[1][0].x = grid[1][0].x + 1.0
    return grid[1][0].x, grid[0][0].x


def computed_attribute(x, n):
    items = [Clamped(x.copy()), Clamped(x * 0.5)]
    for t in range(n):
        items[0].x = items[0].x + 0.25
    return [item.x for item in items]


def method_assigning_another_attribute(x, n):
    items = [Counted(x.copy(), 0.0)]
    for t in range(n):
        items[0].x = items[0].moved(0.5)
    return items[0].x, items[0].moves


def item_attribute_in_a_branch_of_the_loop(x, n):
    particles = [Particle(x.copy(), 1.0), Particle(x * 2.0, 2.0)]
    for t in range(n):
        if particles[0].x.sum() > 3.0:
            particles[0].x = particles[0].x * 0.5
        else:
            particles[1].x = particles[1].x + particles[0].x
    return particles[0].x, particles[1].x


def array_shape_in_a_branch(x):
    arrays = [x.copy()]
    if x.sum() > 0:  # (a branch traces both sides: the shape was set where NumPy's was not)
        arrays[0].shape = (2, 3)
    return arrays[0]


def _not_unrolled(function, short, long):
    (kinds, ops), (long_kinds, long_ops) = loop_kinds(*short), loop_kinds(*long)
    assert kinds == long_kinds == ["loop"], (kinds, long_kinds)
    assert ops == long_ops


def test_an_item_attribute_at_the_loops_level_is_one_loop():
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(20), rng.standard_normal(20)
    for n in (0, 1, 2, 3, 40):
        check(first_particle_drifts, x, v, n, 0.01)
    _not_unrolled(first_particle_drifts, (first_particle_drifts, x, v, 20, 0.01),
                  (first_particle_drifts, x, v, 300, 0.01))


def test_objects_a_dict_holds_under_a_key_variable():
    x = np.linspace(0.0, 1.0, 7)
    for n in (0, 1, 2, 25):
        check(keyed_objects_with_python_numbers, x, n)
    _not_unrolled(keyed_objects_with_python_numbers,
                  (keyed_objects_with_python_numbers, x, 5),
                  (keyed_objects_with_python_numbers, x, 50))


def test_one_object_under_several_names_moves_as_numpys():
    x = np.arange(5.0)
    for n in (0, 1, 2, 9):
        check(one_object_under_three_names, x, n)
    kinds, _ = loop_kinds(one_object_under_three_names, x, 9)
    assert kinds == ["loop"]


def test_namespaces_in_a_list_are_assigned_every_iteration():
    # (left as written, as in the inner-loop form: assigned once, they gave a wrong answer)
    x = np.ones(3)
    for n in (0, 1, 4, 10):
        check(namespaces_in_a_list, x, n)


def test_the_callers_particle_moves_as_numpys():
    rng = np.random.default_rng(2)
    particles = [Particle(rng.standard_normal(6), 0.5), Particle(rng.standard_normal(6),
                                                                 rng.standard_normal(6))]
    for n in (0, 1, 4, 20):
        check(callers_particles, particles, n, 0.1, calls=3)


def test_forms_left_as_written_keep_numpys_values():
    x = np.linspace(-1.0, 1.0, 4)
    for function in (index_the_loop_varies, index_the_loop_carries, two_items_deep,
                     computed_attribute):
        for n in (0, 1, 2, 7):
            check(function, x, n)
    for n in (1, 2, 7):  # (no `moves` until the method runs, in NumPy's loop as in kiln's)
        check(method_assigning_another_attribute, x, n)
    for n in (0, 1, 6):
        check(item_attribute_in_a_branch_of_the_loop, np.ones(3), n)


def test_an_item_attribute_in_a_branch_keeps_numpys_shape():
    x = np.arange(6.0)
    for sign in (1.0, -1.0):
        check(array_shape_in_a_branch, x * sign)
