"""Views made before a captured loop whose base the body does not name (kiln._loop_view_bases):
the loop carries the base, the views follow it. Reading through them (a merge of two halves,
a helper's loop over the row it was handed, np.diag read every sweep) and writing through them
(the store lands in the base, seen by every other view of it) were unrolled: "a view made
before the loop that the loop reads or writes through"."""
import numpy as np
import pytest

import kiln


def loops(report, kind="loop"):
    return [loop for loop in report.loops if loop.kind == kind]


def merge_halves(x, m):
    a = x[:m]
    b = x[m:]
    out = np.empty(len(x), dtype=x.dtype)
    i = j = k = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out[k] = a[i]
            i += 1
        else:
            out[k] = b[j]
            j += 1
        k += 1
    while i < len(a):
        out[k] = a[i]
        i += 1
        k += 1
    while j < len(b):
        out[k] = b[j]
        j += 1
        k += 1
    return out


def norm_of(v):
    s = 0.0
    for k in range(len(v)):
        s += v[k] * v[k]
    return np.sqrt(s)


def row_norms(A):  # the helper's loop reads the row A[i], a view of the outer loop's A
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        out[i] = norm_of(A[i])
    return out


def jacobi_sweeps(A, b, sweeps):  # D = np.diag(A): a view of A, read by every sweep
    x = np.zeros_like(b)
    D = np.diag(A)
    R = A - np.diag(D)
    for _ in range(sweeps):
        x = (b - R @ x) / D
    return x


def running_sum_through_views(x):  # b[i] is x[i + 1], a[i] is x[i]: NumPy's sequential reads
    a = x[:-1]
    b = x[1:]
    for i in range(len(b)):
        b[i] = b[i] + a[i]
    return x


def scale_front(x, m):  # writes through a view of the argument: the caller's x changes
    a = x[:m]
    b = x[m:]
    for i in range(m):
        a[i] = a[i] * 2 + b[i]
    return a.sum()


def columns(A):  # a column view written, the whole matrix returned after the loop
    c = A[:, 1]
    d = A[:, 0]
    for i in range(1, len(c)):
        c[i] = c[i - 1] + d[i]
    return A


def odd_from_even(a, b):  # f(x, x[::2]): both arguments views of one memory
    for i in range(len(b) - 1):
        a[2 * i + 1] = b[i] + b[i + 1]
    return a


def rebinds_the_view(x, n):  # the body rebinds it: carried by value, as before
    y = x[:3]
    for i in range(n):
        y = y * 0.5 + i
    return y, x


CASES = [
    (merge_halves, lambda rng: (np.concatenate([np.sort(rng.random(40)),
                                                np.sort(rng.random(30))]), 40), 3),
    (row_norms, lambda rng: (rng.random((12, 7)),), 2),
    (jacobi_sweeps, lambda rng: (rng.random((9, 9)) + 9 * np.eye(9), rng.random(9), 30), 1),
    (running_sum_through_views, lambda rng: (rng.random(25),), 1),
    (scale_front, lambda rng: (rng.random(20), 8), 1),
    (columns, lambda rng: (rng.random((10, 3)),), 1),
    (rebinds_the_view, lambda rng: (rng.random(6), 5), 1),
]


@pytest.mark.parametrize("function, arguments, count", CASES,
                         ids=[case[0].__name__ for case in CASES])
def test_views_of_a_base_the_body_does_not_name_are_captured(function, arguments, count):
    rng = np.random.default_rng(3)
    args = arguments(rng)

    def fresh():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mine, theirs = fresh(), fresh()
    report = kiln.explain(function)(*mine)
    expected = function(*theirs)
    for got, want in zip(report.result if isinstance(expected, tuple) else [report.result],
                         expected if isinstance(expected, tuple) else [expected]):
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert type(got) is type(want)
    for got, want in zip(mine, theirs):  # arguments written through the views
        np.testing.assert_array_equal(got, want)
    assert len(loops(report)) == count and not loops(report, "unrolled"), str(report)
    assert report.graph_count == 1 and report.graph_break_count == 0, str(report)
    compiled = kiln.compile(function)
    for _ in range(2):
        mine, theirs = fresh(), fresh()
        got, want = compiled(*mine), function(*theirs)
        for g, w in zip(got if isinstance(want, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        for g, w in zip(mine, theirs):
            np.testing.assert_array_equal(g, w)


def test_views_of_one_memory_passed_as_two_arguments():
    x, y = np.arange(12.0), np.arange(12.0)
    report = kiln.explain(odd_from_even)(x, x[::2])
    expected = odd_from_even(y, y[::2])
    np.testing.assert_array_equal(report.result, expected)
    np.testing.assert_array_equal(x, y)
    assert loops(report) and not loops(report, "unrolled"), str(report)
