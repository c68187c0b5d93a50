"""Loops that call a nested function which rebinds the enclosing function's variables through
`nonlocal` (kiln._loop_names.nested_rebinds): the loop carries those variables as if it assigned
them, and is one loop node with Python's values and types at every trip count. Such functions
were not rewritten at all (their loops unrolled, growing with the trip count), and where the
`nonlocal` sat in a function defined in an `if` or in a method of a local class, the loop was
captured without them: the variable changed once, not once an iteration, no error."""
import copy

import numpy as np

import kiln
from test_numpy_programs import _assert_same


def check_calls(function, argument_sets):
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        got = compiled(*copy.deepcopy(arguments))
        expected = function(*copy.deepcopy(arguments))
        assert len(got) == len(expected)
        for n, (a, b) in enumerate(zip(got, expected)):
            _assert_same(a, b, f"result {n} of {function.__name__}{arguments[1:]}")


def explained(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in report.loops], report.op_count


def simulate(x, n):
    count = 0
    total = 0.0

    def step(v):
        nonlocal count, total
        count += 1
        total = total + v.sum()
        return v * 0.9

    for _ in range(n):
        x = step(x)
    return x, count, total


def smoothed(x, alpha):
    state = x[0]

    def update(v):
        nonlocal state
        state = alpha * v + (1 - alpha) * state
        return state

    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = update(x[i])
    return out, state


def positives(x):
    count, total = 0, 0.0

    def note(v):
        nonlocal count, total
        count += 1
        total = total + v

    for i in range(len(x)):
        if x[i] > 0:
            note(x[i])
    return count, total


def through_another(x, n):
    calls = 0

    def counted():
        nonlocal calls
        calls += 1

    def step(v):
        counted()
        return v * 0.5 + 1

    for _ in range(n):
        x = step(x)
    return x, calls


def decay_until(x, limit, n):
    count = 0

    def step(v):
        nonlocal count
        count += 1
        return v * 0.5

    for _ in range(n):
        x = step(x)
        if x.sum() < limit:
            break
    return x, count


def advance_until(x, end):
    t, steps = 0.0, 0

    def advance(v, dt):
        nonlocal t, steps
        t += dt
        steps += 1
        return v + dt * np.cos(v)

    while t < end:
        x = advance(x, 0.1)
    return x, t, steps


def test_a_time_loop_calling_a_counting_function_is_one_loop():
    x = np.linspace(0.0, 1.0, 5)
    check_calls(simulate, [(x, n) for n in (0, 1, 2, 50)])
    (kinds, short), (long_kinds, long) = (explained(simulate, x, n) for n in (30, 3000))
    assert kinds == long_kinds == ["loop"] and long == short


def test_a_closures_state_updated_every_iteration():
    x = np.random.default_rng(0).standard_normal(40)
    check_calls(smoothed, [(x[:n], 0.2) for n in (1, 2, 40)])
    assert explained(smoothed, x, 0.2)[0] == ["loop"]


def test_a_call_under_a_branch_on_the_data():
    x = np.array([0.5, -1.0, 2.0, 3.0, -0.5, 1.5])
    check_calls(positives, [(x[:n],) for n in (0, 1, 2, 6)])
    kinds, _ = explained(positives, np.tile(x, 10))
    assert kinds.count("loop") == 1 and "unrolled" not in kinds


def test_a_function_that_calls_the_rebinding_one():
    check_calls(through_another, [(np.ones(2), n) for n in (0, 1, 2, 40)])
    assert explained(through_another, np.ones(2), 40)[0] == ["loop"]


def test_a_loop_that_calls_it_and_breaks():
    x = np.full(3, 8.0)
    check_calls(decay_until, [(x, limit, n) for limit in (0.5, 30.0, 100.0)
                              for n in (0, 1, 2, 40)])
    kinds, _ = explained(decay_until, x, 0.5, 40)
    assert "loop" in kinds and "unrolled" not in kinds


def test_a_while_loop_whose_body_calls_it():
    check_calls(advance_until, [(np.zeros(3), end) for end in (0.0, 0.05, 0.15, 3.0)])
    assert "loop" in explained(advance_until, np.zeros(3), 3.0)[0]


# ---- wrong answers on main, and forms the loop leaves as written ----

def defined_in_a_branch(x, n, counting):
    count = 0
    if counting:
        def step(v):
            nonlocal count
            count += 1
            return v * 0.9
    else:
        def step(v):
            return v * 0.9
    for _ in range(n):
        x = step(x)
    return x, count


def method_of_a_local_class(x, n):
    count = 0

    class Counter:
        def bump(self, v):
            nonlocal count
            count += 1
            return v * 0.5

    counter = Counter()
    for _ in range(n):
        x = counter.bump(x)
    return x, count


def handed_to_numpy(x):
    seen = 0

    def row_sum(row):
        nonlocal seen
        seen += 1
        return row.sum()

    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.apply_along_axis(row_sum, 0, x[i])
    return out, seen


def checked_by_its_test(x, limit):
    tests = 0

    def more(v):
        nonlocal tests
        tests += 1
        return v.sum() < limit

    while more(x):
        x = x * 1.5 + 0.1
    return x, tests


def test_a_rebinding_function_defined_in_a_branch():
    check_calls(defined_in_a_branch, [(np.ones(3), n, counting) for n in (0, 1, 10)
                                      for counting in (True, False)])


def test_a_method_of_a_local_class_that_rebinds():
    check_calls(method_of_a_local_class, [(np.ones(3), n) for n in (0, 1, 10)])


def test_a_rebinding_function_handed_on_or_called_by_a_test():
    check_calls(handed_to_numpy, [(np.ones((4, 3)),)])
    check_calls(checked_by_its_test, [(np.ones(2), limit) for limit in (0.0, 3.0, 50.0)])
