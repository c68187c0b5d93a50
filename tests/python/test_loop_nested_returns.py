"""Returns in nested loops (`for i: for j: if M[i, j] > t: return i, j`), and numbers whose type
the branch taken decides, returned.

- A return in a nested loop left the outer loop unrolled ("a nested loop returns"): a graph
  break per element, then the function ran eagerly, slower than NumPy. kiln._loop_returns now
  makes the return set the result and a flag and break, and each loop around it break on the
  flag, so the nest is captured like a loop whose body returns.
- A search returns `i, s` (NumPy's float64) or, when nothing is found, `-1, 0.0` (Python's
  float). The result's type depends on the data; returning it committed kiln's assumption of
  the NumPy side, a check that reran every call that took the other side eagerly. The side taken
  now comes out of the graph beside the value (kiln._assumed_numbers.returned), so the caller
  gets NumPy's type with no rerun.
"""
import numpy as np
import pytest

from test_numpy_programs import check_call
from test_numpy_programs_fifth import _python_runs
from test_numpy_programs_sixth import check_calls, loop_kinds

import kiln


def first_above(M, t):
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                return i, j
    return -1, -1


def first_negative_prefix(M):
    for i in range(M.shape[0]):
        s = 0.0
        for j in range(M.shape[1]):
            s += M[i, j]
            if s < 0:
                return i, s
    return -1, 0.0


def first_in_cube(V, t):
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            for k in range(V.shape[2]):
                if V[i, j, k] > t:
                    return (i * V.shape[1] + j) * V.shape[2] + k
    return -1


def marked_until_found(M, t):
    # writes before the return stay, as NumPy's do
    seen = np.zeros(M.shape, dtype=bool)
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            seen[i, j] = True
            if M[i, j] > t:
                return seen, M[i, j]
    return seen, None


def skipping_rows(M, t):
    # the inner loop's own break and continue beside the return
    for i in range(M.shape[0]):
        if M[i, 0] < 0:
            continue
        for j in range(M.shape[1]):
            if M[i, j] < -t:
                break
            if M[i, j] > t:
                return i, j
    return -1, -1


def inner_else(M, t):
    # the inner loop's `else` runs where it ends without returning (or breaking)
    count = 0
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                return count, i
        else:
            count += 1
    return count, -1


def while_inside_for(x, t):
    for i in range(len(x)):
        v = x[i]
        steps = 0
        while v < t:
            v = v * 2.0
            steps += 1
            if steps > 3:
                return i, v
    return -1, x[0]


def dict_result(M, t):
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if M[i, j] > t:
                return {"row": i, "column": j, "value": M[i, j]}
    return {"row": -1, "column": -1, "value": 0.0}


def halved_until_found(x, k):
    # the branch makes `acc` NumPy's float64 and may return; the loop in the side of the next
    # branch (the return's flag) only reads it, and its setter rebound it for its trace: the
    # side's end left the side's value bound, a value of a closed body that reached the graph
    # ("a value computed inside a loop body is used outside the loop", an internal error)
    acc = 0.0
    for i in range(len(k)):
        if k[i] > 0:
            acc = acc * 0.5 + np.float64(0.8)
            if acc > 1.5:
                return acc
        for j in range(3):
            if x[j] < 0.0:
                return acc
    return acc + 1.0


CASES = [
    (first_above, lambda M: [(M, 0.95), (M, 2.0), (M, -1.0), (M[:0], 0.5)]),
    (first_negative_prefix, lambda M: [(M,), (M - 0.3,), (M - 0.9,), (M[:, :0],)]),
    (first_in_cube, lambda M: [(M.reshape(4, 6, -1), 0.99), (M.reshape(4, 6, -1), 2.0)]),
    (marked_until_found, lambda M: [(M, 0.97), (M, 2.0)]),
    (skipping_rows, lambda M: [(M - 0.5, 0.45), (M - 0.5, 0.6), (0.5 - M, 0.45)]),
    (inner_else, lambda M: [(M, 0.999), (M, 2.0), (M, 0.0)]),
    (while_inside_for, lambda M: [(M[0], 0.5), (M[0] + 1.0, 0.5), (M[0], 100.0)]),
    (halved_until_found, lambda M: [(M[0], np.where(M[1] > 0.3, 1, -1)),
                                    (M[0] - 0.5, np.where(M[1] > 0.3, 1, -1)),
                                    (M[0], -np.ones(16, np.int64))]),
]


@pytest.mark.parametrize("function, argument_sets", CASES,
                         ids=[function.__name__ for function, _ in CASES])
def test_returns_in_nested_loops_agree_with_numpy(function, argument_sets):
    M = np.random.default_rng(5).random((24, 16))
    check_calls(function, argument_sets(M))


@pytest.mark.parametrize("function, arguments", [
    (first_above, (0.95,)), (first_negative_prefix, ()), (first_in_cube, (0.99,)),
    (skipping_rows, (0.45,)), (dict_result, (0.9,)),
], ids=lambda value: getattr(value, "__name__", ""))
def test_a_return_in_a_nested_loop_is_captured_with_its_loops(function, arguments):
    M = np.random.default_rng(5).random((24, 16))
    if function is first_in_cube:
        M = M.reshape(4, 6, -1)
    kinds, breaks = loop_kinds(function, M, *arguments)
    assert breaks == 0
    assert "unrolled" not in kinds and kinds.count("loop") >= 2, kinds


@pytest.mark.parametrize("t", [0.9, 2.0])
def test_a_dict_returned_from_a_nested_loop_agrees_with_numpy(t):
    M = np.random.default_rng(5).random((24, 16))
    got, expected = kiln.compile(dict_result)(M, t), dict_result(M, t)
    assert list(got) == list(expected)
    for key in expected:
        assert got[key] == expected[key] and type(got[key]) is type(expected[key]), key


@pytest.mark.parametrize("shift", [0.0, 0.3])
def test_a_returned_number_whose_type_the_branch_decides_runs_no_call_again(shift):
    # found: (i, NumPy's float64); not found: (-1, Python's 0.0), with no eager rerun
    M = np.random.default_rng(6).random((30, 20)) - shift
    compiled = kiln.compile(first_negative_prefix)
    check_call(compiled, first_negative_prefix, (M,))
    expected = first_negative_prefix(M)
    got = compiled(M)
    assert type(got[1]) is type(expected[1])
    assert _python_runs(first_negative_prefix, compiled, (M,)) == 0


def clipped_total(x, floor):
    total = x.sum()
    if total < floor:
        total = 0
    return total


def test_a_returned_choice_of_a_python_number_keeps_its_type_without_a_rerun():
    x = np.arange(5.0)
    compiled = kiln.compile(clipped_total)
    for floor in (3.0, 100.0, 3.0):
        got, expected = compiled(x, floor), clipped_total(x, floor)
        assert got == expected and type(got) is type(expected)
        assert _python_runs(clipped_total, compiled, (x, floor)) == 0
