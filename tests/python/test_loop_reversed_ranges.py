"""`for i in reversed(range(...))` (back substitution, backward recurrences): the loop rewrite
knew only `range(...)`, so such a loop was unrolled (3,000 iterations: 7 s of tracing, then a
graph too large to compile, run eagerly). kiln._reversed_ranges captures it as the range of the
same values in the other order, its bounds computed when the loop starts, from Python ints or
traced ones (an inner loop bounded by the outer index); only a step written as a number."""
import numpy as np
import pytest

from test_numpy_programs_sixth import check_calls, loop_kinds


def backward_recurrence(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in reversed(range(len(x))):
        acc = acc * 0.9 + x[i]
        out[i] = acc
    return out


def back_substitution(U, b):
    x = np.zeros(len(b))
    for i in reversed(range(len(b))):
        x[i] = (b[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


def stepped(x, start, step):
    s, last = 0.0, -1
    for i in reversed(range(start, len(x), 3)):
        s = s * 0.5 + x[i] * step
        last = i
    return s, last


def negative_step(x):
    s = 0.0
    for i in reversed(range(len(x) - 1, 0, -2)):
        s = s * 0.5 + x[i] * i
    return s, i


def between(x, a, b):
    s = 1.0
    for i in reversed(range(a, b)):
        s = s * 2 + x[i]
    return s


def triangle(x):
    out = np.zeros(len(x))
    for j in range(len(x)):
        s = 0.0
        for i in reversed(range(j)):
            s = s * 0.5 + x[i]
        out[j] = s
    return out


def triangle_stepped(x):
    out = np.zeros(len(x))
    for j in range(len(x)):
        s = 0.0
        for i in reversed(range(1, j, -(-2))):
            s = s * 0.5 + x[i]
        out[j] = s
    return out


def last_above(x, t):
    found = -1
    for i in reversed(range(len(x))):
        if x[i] > t:
            found = i
            break
    return found


CASES = [
    (backward_recurrence, lambda x, U: [(x,), (x[:1],), (x[:0],)]),
    (back_substitution, lambda x, U: [(U, x[:len(U)])]),
    (stepped, lambda x, U: [(x, 1, 2.0), (x, 0, 1.0), (x[:3], 2, 1.0)]),
    (negative_step, lambda x, U: [(x,), (x[:3],)]),
    (between, lambda x, U: [(x, 5, 5), (x, 7, 5), (x, 3, 25)]),
    (triangle, lambda x, U: [(x,), (x[:2],)]),
    (triangle_stepped, lambda x, U: [(x,), (x[:4],)]),
    (last_above, lambda x, U: [(x, 0.9), (x, 2.0)]),
]


@pytest.mark.parametrize("function, argument_sets", CASES,
                         ids=[function.__name__ for function, _ in CASES])
def test_reversed_ranges_agree_with_numpy(function, argument_sets):
    rng = np.random.default_rng(3)
    x = rng.random(300)
    U = np.triu(rng.random((40, 40))) + 40 * np.eye(40)
    check_calls(function, argument_sets(x, U))


@pytest.mark.parametrize("function, arguments", [
    (backward_recurrence, (np.arange(500.0),)), (stepped, (np.arange(500.0), 1, 2.0)),
    (negative_step, (np.arange(500.0),)), (triangle, (np.arange(60.0),)),
], ids=["backward_recurrence", "stepped", "negative_step", "triangle"])
def test_a_reversed_range_loop_is_captured(function, arguments):
    kinds, breaks = loop_kinds(function, *arguments)
    assert breaks == 0 and "unrolled" not in kinds and "loop" in kinds, kinds


def test_a_step_not_written_as_a_number_runs_as_written():
    def by_step(x, step):
        s = 0.0
        for i in reversed(range(0, len(x), step)):
            s = s * 0.5 + x[i]
        return s
    check_calls(by_step, [(np.arange(20.0), 3), (np.arange(20.0), 1)])
