"""Names a captured loop binds to a view of an array and that the function writes through, or
whose array it writes, later (kiln._loop_aliases.carried_views, LoopCapture.for_range's
views): the loop carries every name by value, so after it (or in its next iteration) the name
was a copy where NumPy's is the view: `last = x[i]` in the body, then `last[0] = 99` after
the loop wrote the copy, x unchanged, no error. Such a loop runs as Python. Each function is
compiled and compared with NumPy on copies of its arguments: what it returns and the
arguments afterwards. A loop whose carried view is only read after it stays one loop."""
import numpy as np
import pytest

import kiln
from test_loop_append_aliasing import check, loop_kinds


def matrix(rows=6, columns=4, seed=0):
    return np.random.default_rng(seed).random((rows, columns))


# ---- helpers of the module, as users write them ----

def bump(a):
    a += 1


def total(a):
    return a.sum()


# ---- the view written after the loop ----

def stored(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    last[0] = 99.0
    return x


def by_helper(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    bump(last)
    return x


def by_ufunc_out(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    np.add(last, 1, last)
    return x


def augmented(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    last += 1
    return x


def filled(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    last.fill(0)
    return x


def copied_to(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    np.copyto(last, 3.0)
    return x


def by_another_name(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    y = last
    y[1] = -5.0
    return x


def base_written_after(x):
    """NumPy's `last` sees the write to x."""
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    x[-1] = -1.0
    return last * 1


# ---- other views the body binds ----

def row_slice(x):
    row = x[0, 1:]
    for i in range(1, x.shape[0]):
        row = x[i, 1:]
    row[0] = 99.0
    return x


def block(x):
    rows = x[0:2]
    for i in range(1, x.shape[0] - 1):
        rows = x[i:i + 2]
    rows[0, 0] = 99.0
    return x


def column(x):
    col = x.T[0]
    for i in range(1, x.shape[1]):
        col = x.T[i]
    col[0] = 99.0
    return x


def of_own_array(x):
    t = np.zeros(x.shape)
    last = t[0]
    for i in range(1, x.shape[0]):
        t[i] = x[i] * 2
        last = t[i]
    last[0] = 99.0
    return t


def nested(x):
    last = x[0, 0:1]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            last = x[i, j:j + 1]
    last[0] = 99.0
    return x


def read_next_iteration(x):
    """The next iteration reads the view after writing its array: NumPy's `last` sees the
    zeros."""
    last = x[0]
    for i in range(1, x.shape[0]):
        x[i - 1] = 0.0
        x[i] = x[i] + last
        last = x[i]
    return x


def iterated(x):
    last = x[0]
    for v in x:
        last = v
    last[0] = 99.0
    return x


def iterated_target(x):
    for v in x:
        pass
    v[0] = 99.0
    return x


def while_loop(x):
    i = 0
    last = x[0]
    while i < x.shape[0]:
        last = x[i]
        i += 1
    last[0] = 99.0
    return x


WRITTEN = [stored, by_helper, by_ufunc_out, augmented, filled, copied_to, by_another_name,
           base_written_after, row_slice, block, column, of_own_array, nested,
           read_next_iteration, iterated, iterated_target, while_loop]


@pytest.mark.parametrize("function", WRITTEN, ids=lambda f: f.__name__)
def test_view_written_after_the_loop_is_numpys(function):
    check(function, matrix())


@pytest.mark.parametrize("function", [stored, by_helper, row_slice, iterated, while_loop],
                         ids=lambda f: f.__name__)
def test_such_a_loop_runs_as_python(function):
    assert "loop" not in loop_kinds(function, matrix())


# ---- loops that stay captured ----

def read_after(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    return last.sum() + x


def read_by_helper(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i] + last
    return total(last) * x


def fresh_written(x):
    """A fresh array the body binds (x[i] * 2) is no view: writing it is the loop's own."""
    last = x[0] * 0
    for i in range(1, x.shape[0]):
        last = x[i] * 2
    last[0] = 99.0
    return last + x


def temporary_row(x):
    """A row the body binds first and nothing reads after the loop: a temporary."""
    for i in range(x.shape[0]):
        row = x[i]
        x[i] = row / row.sum()
    return x


def number_of_vector(v):
    """x[i] of a vector is a NumPy scalar, a copy: a later write to v does not reach it."""
    last = v[0]
    for i in range(1, v.shape[0]):
        last = v[i]
    v[-1] = -1.0
    return last * 1


@pytest.mark.parametrize("function", [read_after, read_by_helper, fresh_written,
                                      temporary_row], ids=lambda f: f.__name__)
def test_loop_whose_view_nothing_writes_stays_captured(function):
    check(function, matrix())
    assert "loop" in loop_kinds(function, matrix())


def test_number_of_a_vector_stays_captured():
    v = np.random.default_rng(1).random(8)
    check(number_of_vector, v)
    assert "loop" in loop_kinds(number_of_vector, v)


# ---- a helper's loop whose view it returns ----

def last_row(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    return last


def written_by_caller(x):
    """The helper's loop carries `last`; its caller writes what it returns, x's last row."""
    r = last_row(x)
    r[0] = 99.0
    return x


def test_view_a_helper_returns_is_numpys():
    check(written_by_caller, matrix())


def returns_view(x):
    last = x[0]
    for i in range(1, x.shape[0]):
        last = x[i]
    return last


def test_view_the_compiled_function_returns_stays_captured():
    # its results never alias its arguments (README, Differences): a copy is NumPy's values
    check(returns_view, matrix())
    assert "loop" in loop_kinds(returns_view, matrix())
