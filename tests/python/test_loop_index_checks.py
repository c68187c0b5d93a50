"""Index checks inside captured loops (api/loop_trace.h: integer_range): an index built from loop
indices and constants that the loops' bounds keep inside the axis is not checked at run time, so
the loop carries no error flag for it; one that can leave the axis still raises NumPy's
IndexError, from whichever iteration first goes out."""
import numpy as np
import pytest


def triangular(a, r):  # j in [1, k) and k - j in [1, k): always inside
    total = np.zeros(1)
    for k in range(1, r.shape[0]):
        acc = r[k]
        for j in range(1, k):
            acc += a[j] * r[k - j]
        total[0] += acc
    return total


def reaches_past_the_end(a, r):  # k + j reaches 2n - 2
    total = np.zeros(1)
    for k in range(r.shape[0]):
        for j in range(k + 1):
            total[0] += a[j] * r[k + j]
    return total


def backwards_from_the_end(x):  # -1 - i in [-n, -1]: negative but inside
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[-1 - i]
    return out


def test_indices_the_bounds_keep_inside_are_not_checked(compile_logged):
    rng = np.random.default_rng(5)
    a, r = rng.standard_normal(40), rng.standard_normal(40)
    log, got = compile_logged(triangular, (a, r), "graph")
    assert " = any(" not in log and " = loop(" in log, log
    np.testing.assert_allclose(got, triangular(a, r), rtol=1e-12)
    x = rng.standard_normal(50)
    log, got = compile_logged(backwards_from_the_end, (x,), "graph")
    assert " = any(" not in log, log
    np.testing.assert_array_equal(got, x[::-1])


def test_indices_that_can_leave_the_axis_still_raise(compile_logged):
    a, r = np.ones(8), np.ones(8)
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        reaches_past_the_end(a, r)  # NumPy's own error, for comparison
    with pytest.raises(IndexError, match="index 8 is out of bounds for axis 0 with size 8"):
        compile_logged(reaches_past_the_end, (a, r), "graph")
