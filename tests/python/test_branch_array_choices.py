"""A branch on a traced value that binds a name to one of two arrays (`u, v = v, u`, `w = a` or
`w = b`, `w = a if c else b`): NumPy's name then holds that array itself, and a write through it, or through the
array's own name, reaches the other. A select where(c, a, b) is a third array; where the
function writes arrays in place the branch is not a select (kiln._branch_capture: it runs the
side taken after a graph break), and where it does not, it stays one."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs import check_call


def swap_if(u, v, t):
    if u.sum() > t:
        u, v = v, u
    u[0] = -1.0
    return u, v


def pick_then_write(a, b, t):
    if a.sum() > t:
        w = a
    else:
        w = b
    w[1] = 7.0
    return a, b, w


def pick_then_write_the_original(a, b, t):
    w = b
    if a.sum() > t:
        w = a
    a[2] = 5.0  # w, where it is a, sees this
    return w + 0.0


def pick_expression(a, b, t):
    w = a if a.sum() > t else b
    w[1] = 7.0
    return a, b, w


def swap_expression(u, v, t):
    u, v = (v, u) if u.sum() > t else (u, v)
    u[0] = -1.0
    return u, v


def pick_expression_without_writes(a, b, t):
    return (a if a.sum() > t else b) * 2.0


def pick_without_writes(a, b, t):
    if a.sum() > t:
        w = a
    else:
        w = b
    return w * 2.0


@pytest.mark.parametrize("function", [swap_if, pick_then_write, pick_then_write_the_original,
                                      pick_expression, swap_expression])
@pytest.mark.parametrize("threshold", [-100.0, 100.0])
def test_the_array_chosen_is_the_one_written(function, threshold):
    # every one of these returned or left the unchosen arrays as they were (no error)
    compiled = kiln.compile(function)
    check_call(compiled, function, (np.arange(4.0), np.arange(4.0) * 10, threshold))


@pytest.mark.parametrize("function", [pick_without_writes, pick_expression_without_writes])
def test_a_choice_of_arrays_nothing_writes_stays_a_select(function):
    report = kiln.explain(kiln.compile(function))(np.arange(4.0), np.ones(4), 1.0)
    assert [loop.kind for loop in report.loops] == ["select"]
    assert report.graph_break_count == 0
    for threshold in (-1.0, 100.0):
        arguments = (np.arange(4.0), np.ones(4), threshold)
        check_call(kiln.compile(function), function, copy.deepcopy(arguments))
