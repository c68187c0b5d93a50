"""Aliasing, ninth round: a branch on traced data that binds a name to one of two arrays the
function reaches through a list, a dict, a tuple or an object's attribute (`w = L[0]` or
`w = L[1]`, `w = d["x"] if c else d["y"]`, `w = h.buf`), then writes it in place. NumPy's name
holds the chosen array itself; a select where(c, a, b) is a third array, and the write was
lost. Each call is compared with NumPy on copies: results and every array the arguments
reach, lists' items among them."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs import _assert_same


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def check_call(function, arguments):
    mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
    got, expected = kiln.compile(function)(*mine), function(*theirs)
    got_leaves, expected_leaves = _leaves(got), _leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for n, (a, b) in enumerate(zip(got_leaves, expected_leaves)):
        _assert_same(a, b, f"result {n} of {function.__name__}")
    for n, (a, b) in enumerate(zip(_leaves(list(mine)), _leaves(list(theirs)))):
        if isinstance(b, np.ndarray):
            _assert_same(a, b, f"argument array {n} of {function.__name__} (updated in place)")


def list_item_pick(a, b, t):
    L = [a, b]
    if a.sum() > t:
        w = L[0]
    else:
        w = L[1]
    w[0] = 9.0
    return a.sum() + b.sum()


def nested_list_pick(a, b, t):
    L = [[a], [b]]
    if a.sum() > t:
        w = L[0][0]
    else:
        w = L[1][0]
    w[2] = 4.0
    return a.sum()


def dict_item_pick(a, b, t):
    d = {"x": a, "y": b}
    w = d["x"] if a.sum() > t else d["y"]
    w += 1.0
    return a.sum() + b.sum()


class Holder:
    def __init__(self, a, b):
        self.buf, self.other = a, b


def attribute_pick(a, b, t):
    h = Holder(a, b)
    if a.sum() > t:
        w = h.buf
    else:
        w = h.other
    w[0] = -2.0
    return a.sum() + b.sum()


def zero_d_list_pick(a, b, t):
    z = [np.array(1.0), np.array(2.0)]
    w = z[0] if a.sum() > t else z[1]
    w[()] = 7.0
    return z[0] + z[1]


def list_argument_pick(L, t):
    if L[0].sum() > t:
        w = L[0]
    else:
        w = L[1]
    w[0] = 9.0
    return w.sum()


def list_argument_pick_in_loop(L, t):
    for i in range(3):
        if L[i].sum() > t:
            w = L[i]
        else:
            w = L[(i + 1) % 3]
        w[0] += 1.0
    return L[0].sum() + L[1].sum() + L[2].sum()


@pytest.mark.parametrize("function", [list_item_pick, nested_list_pick, dict_item_pick,
                                      attribute_pick, zero_d_list_pick])
@pytest.mark.parametrize("threshold", [-100.0, 100.0])
def test_an_array_chosen_from_a_container_is_the_one_written(function, threshold):
    # each returned, and left a and b, as if the write went nowhere (no error)
    check_call(function, (np.arange(4.0), np.arange(4.0) * 10, threshold))


@pytest.mark.parametrize("function", [list_argument_pick, list_argument_pick_in_loop])
@pytest.mark.parametrize("threshold", [-100.0, 100.0])
def test_an_array_chosen_from_a_list_argument_is_the_one_written(function, threshold):
    # the caller's list's arrays came back unchanged
    arrays = [np.arange(4.0), np.arange(4.0) * 10, np.ones(4)]
    check_call(function, (arrays, threshold))


# Python's max(a, b), min(a, b), `a or b` and `a and b` of one-element arrays are one of the
# operands itself, as `a if c else b` is: each was a select, a third array, and a write
# through the name that holds it was lost.

def max_then_write(a, b):
    w = max(a, b)
    w[0] = -5.0
    return a, b


def min_then_add(a, b):
    w = min(a, b)
    w += 1.0
    return a, b


def max_then_write_the_original(a, b):
    w = max(a, b)
    a[0] = 100.0
    return w + 0.0


def max_of_three(a, b):
    c = a + b
    w = max(a, b, c)
    w[0] = 0.0
    return a, b, c


def max_in_loop(a, b):
    for _ in range(3):
        w = max(a, b)
        w -= 1.0
    return a, b


def or_then_write(a, b):
    w = a or b
    w[0] = -5.0
    return a, b


def and_then_write(a, b):
    w = a and b
    w[0] = -5.0
    return a, b


def or_in_loop(a, b):
    for _ in range(3):
        w = a or b
        w -= 1.0
    return a, b


@pytest.mark.parametrize("function", [max_then_write, min_then_add, max_then_write_the_original,
                                      max_of_three, max_in_loop, or_then_write, and_then_write,
                                      or_in_loop])
@pytest.mark.parametrize("first", [0.0, 1.0, 3.0])
def test_max_min_and_or_of_arrays_is_the_operand_written(function, first):
    check_call(function, (np.array([first]), np.array([2.0])))


def max_without_writes(a, b):
    return max(a, b) * 2.0


def or_without_writes(a, b):
    return (a or b) * 2.0


def running_max(x, out):
    best = x[0]
    for i in range(1, x.shape[0]):
        best = max(best, x[i])
        out[i] = best
    return best


@pytest.mark.parametrize("function", [max_without_writes, or_without_writes])
def test_a_choice_nothing_writes_stays_a_select(function):
    arguments = (np.array([1.0]), np.array([2.0]))
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    assert report.graph_break_count == 0
    for first in (0.0, 1.0, 3.0):
        check_call(function, (np.array([first]), np.array([2.0])))


def test_max_of_numbers_where_arrays_are_written_stays_traced():
    # x[i] is a NumPy scalar, never changed in place: no graph break for writing `out`
    arguments = (np.array([3.0, 1.0, 4.0, 1.0, 5.0]), np.zeros(5))
    report = kiln.explain(kiln.compile(running_max))(*copy.deepcopy(arguments))
    assert report.graph_break_count == 0
    check_call(running_max, arguments)


# A conditional expression whose sides are items of a list (`L[0] if c else L[1]`), the array
# then written through its own name: no name the sides read is written (a is, L is not), so the
# choice was a select, and w kept the values from before the write.

def list_items_chosen_then_written_by_name(a, b, t):
    L = [a, b]
    w = L[0] if a.sum() > t else L[1]
    a[0] = 5.0
    b[0] = 6.0
    return w + 0.0


def list_items_chosen_by_statement_then_written_by_name(a, b, t):
    L = [a, b]
    if a.sum() > t:
        w = L[0]
    else:
        w = L[1]
    a[0] = 5.0
    b[0] = 6.0
    return w + 0.0


@pytest.mark.parametrize("function", [list_items_chosen_then_written_by_name,
                                      list_items_chosen_by_statement_then_written_by_name])
@pytest.mark.parametrize("threshold", [-100.0, 100.0])
def test_a_list_item_chosen_sees_a_write_through_its_own_name(function, threshold):
    check_call(function, (np.arange(4.0), np.arange(4.0) * 10, threshold))
