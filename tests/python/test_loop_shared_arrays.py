"""`h = x` before a loop that rebinds h and reads x (kiln._loop_shared_arrays): the names get
array objects of their own for the loop's trace, and the loop is one loop node. It unrolled
("`h` and `x` share an array the loop rebinds"). Where NumPy's run could tell the names apart
(a write in place through either, a rebinding the loop may skip), the loop runs as written."""
import numpy as np

from test_loop_list_items import check, loop_kinds


def recurrent(x, w, n):
    h = x
    for t in range(n):
        h = np.tanh(w * h + x)
    return h, h is x


def two_names_rebound(x, n):
    a = b = x
    for t in range(n):
        a = a * 0.5 + b
        b = b - 0.1 * a
    return a, b, x


def writes_the_shared_array(x, n):
    h = x
    for t in range(n):
        x[0] += 1.0  # in place: NumPy's h sees it until h is rebound
        h = h * 0.5 + x
    return h


def writes_through_the_rebound_name(x, n):
    h = x
    for t in range(n):
        h[1] = -1.0  # the first iteration writes x
        h = h + x
    return h, x


def rebinds_on_a_branch(x, n):
    h = x
    for t in range(n):
        if t > 100:  # never: h stays x
            h = h * 2.0
    h[0] = 7.0  # NumPy writes x too
    return h, x


def test_a_recurrence_started_from_its_input_is_one_loop():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20)
    for n in (0, 1, 2, 3, 30):
        check(recurrent, x, 0.7, n)
    (kinds, short), (long_kinds, long) = (loop_kinds(recurrent, x, 0.7, n) for n in (10, 300))
    assert kinds == long_kinds == ["loop"]
    assert long == short


def test_two_names_of_one_array_both_rebound():
    x = np.linspace(-1.0, 1.0, 9)
    for n in (0, 1, 2, 3, 12):
        check(two_names_rebound, x, n)
    kinds, _ = loop_kinds(two_names_rebound, x, 12)
    assert kinds == ["loop"]


def test_a_write_in_place_to_the_shared_array_gives_numpys_answer():
    x = np.arange(5.0)
    for n in (0, 1, 3, 8):
        check(writes_the_shared_array, x, n)


def test_a_write_through_the_rebound_name_gives_numpys_answer():
    x = np.arange(5.0)
    for n in (0, 1, 3, 8):
        check(writes_through_the_rebound_name, x, n)


def test_a_rebinding_the_loop_may_skip_keeps_the_names_one_array():
    x = np.arange(5.0)
    for n in (0, 1, 3, 8):
        check(rebinds_on_a_branch, x, n)
