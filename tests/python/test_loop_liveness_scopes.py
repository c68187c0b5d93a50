"""A loop's names read after it (`live`: kiln._loop_scope_reads) as Python's scopes decide:
a comprehension, generator expression or lambda after the loop that reuses the name of an
inner loop's target (`[p.x for p in particles]` after `for p in particles:`) reads its own
`p`, not the loop's, and the time loop is one loop node (it was refused: "the loop changes the
Python value of `p`", 2,000 steps unrolled into 4,007 ops). Free reads of the loop's names in
such scopes, a comprehension's first iterable and `:=` inside a comprehension (which binds in
the function) still make them live: those loops give NumPy's values. A `:=` in a comprehension
of a loop body rebinds the loop's name (it raised "cannot access free variable")."""
import numpy as np

from test_loop_list_items import check, loop_kinds


class Particle:
    def __init__(self, x, v):
        self.x = x
        self.v = v


def _particles(x, v):
    return [Particle(x.copy(), v.copy()), Particle(x * 2.0, v * 0.5), Particle(x - 1.0, 1.5)]


def list_comprehension_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return [p.x for p in particles]


def set_and_dict_comprehensions_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    sizes = {p.x.size for p in particles}
    return {k: p.x for k, p in enumerate(particles)}, sorted(sizes)


def generator_expression_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return tuple(p.x * 2.0 for p in particles)


def nested_comprehensions_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    scaled = [[p.x * w for w in (1.0, 0.5)] for p in particles]
    chosen = [p.x for p in [p for p in particles if p.x.size]]
    return scaled, chosen


def lambda_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    position = lambda p: p.x  # noqa: E731 (its own `p`)
    return [position(particle) for particle in particles]


def free_read_in_a_comprehension_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return [q.x - p.x for q in particles]  # the loop's last `p`


def first_iterable_reads_the_loops_name(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    return [p.x for p in [p]]  # `[p]` is evaluated in the function: the loop's `p`


def free_read_in_a_lambda_after(x, v, n, dt):
    particles = _particles(x, v)
    for t in range(n):
        for p in particles:
            p.x = p.x + p.v * dt
    last = lambda: p.x  # noqa: E731
    return last()


def walrus_in_a_comprehension_after(x, n):
    h = x.copy()
    for t in range(n):
        h = np.tanh(h * 0.5 + x)
    return [(h := h * w) for w in (0.5, 2.0, 3.0)]  # reads (and binds) the function's `h`


def walrus_binding_the_loops_name_after(x, n):
    h = x.copy()
    for t in range(n):
        h = np.tanh(h * 0.5 + x)
    firsts = [(h := row) for row in (x, x * 2.0)]
    return firsts, h


def walrus_in_a_comprehension_in_the_body(x, n):
    s = x.copy()
    total = x * 0.0
    for t in range(n):
        total = total + sum([(s := s * 0.5 + w) for w in (1.0, 2.0)])
    return s, total


def comprehension_in_the_body_reads_a_carried_name(x, n):
    h = x.copy()
    for t in range(n):
        h = sum([h * w for w in (0.25, 0.5)])
    return h


def _arguments():
    rng = np.random.default_rng(0)
    return rng.standard_normal(12), rng.standard_normal(12)


def _assert_one_time_loop(function, *arguments):
    kinds, ops = loop_kinds(function, *arguments)
    assert "loop" in kinds, kinds  # the time loop (the inner one is traced in its body)
    long_kinds, long_ops = loop_kinds(function, *arguments[:2], 200, *arguments[3:])
    assert long_kinds == kinds and long_ops == ops  # not unrolled: as many ops for 200 steps


def _check_and_assert_captured(function):
    x, v = _arguments()
    for n in (0, 1, 2, 7):
        check(function, x, v, n, 0.01)
    _assert_one_time_loop(function, x, v, 20, 0.01)


def test_a_list_comprehension_reusing_the_inner_target_is_not_a_read():
    _check_and_assert_captured(list_comprehension_after)


def test_set_and_dict_comprehensions_reusing_it_are_not_reads():
    _check_and_assert_captured(set_and_dict_comprehensions_after)


def test_a_generator_expression_reusing_it_is_not_a_read():
    _check_and_assert_captured(generator_expression_after)


def test_nested_comprehensions_reusing_it_are_not_reads():
    _check_and_assert_captured(nested_comprehensions_after)


def test_a_lambda_parameter_of_the_same_name_is_not_a_read():
    _check_and_assert_captured(lambda_after)


def test_free_reads_in_comprehensions_and_lambdas_keep_numpys_values():
    x, v = _arguments()
    for function in (free_read_in_a_comprehension_after, first_iterable_reads_the_loops_name,
                     free_read_in_a_lambda_after):
        for n in (1, 2, 7):
            check(function, x, v, n, 0.01)


def test_walrus_in_a_comprehension_reads_and_binds_the_functions_name():
    x, _ = _arguments()
    for function in (walrus_in_a_comprehension_after, walrus_binding_the_loops_name_after):
        for n in (0, 1, 3, 12):
            check(function, x, n)
    kinds, _ = loop_kinds(walrus_in_a_comprehension_after, x, 12)
    assert kinds == ["loop"]


def test_walrus_in_a_comprehension_in_the_body_is_carried():
    # its `s` was left out of the body's names: "cannot access free variable 's'"
    x, _ = _arguments()
    for n in (0, 1, 3, 12):
        check(walrus_in_a_comprehension_in_the_body, x, n)
    kinds, _ = loop_kinds(walrus_in_a_comprehension_in_the_body, x, 12)
    assert kinds == ["loop"]


def test_a_comprehension_in_the_body_reads_within_the_loop():
    x, _ = _arguments()
    for n in (0, 1, 3, 12):
        check(comprehension_in_the_body_reads_a_carried_name, x, n)
    kinds, _ = loop_kinds(comprehension_in_the_body_reads_a_carried_name, x, 12)
    assert kinds[-1] == "loop", kinds
