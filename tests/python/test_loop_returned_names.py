"""A loop that returns the same name at every return (`return x, it, info` in a solver's loop
and after it; kiln._loop_returns): the exit reads the name, where a result carried it from
zeros of its type and refused a list, a dict or None (`... is bound on one side of the branch
only`: the loop unrolled). Every result is checked against NumPy, called several times."""
import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def loop_kinds(function, *args):
    return [loop.kind for loop in kiln.explain(kiln.compile(function))(*args).loops
            if loop.kind != "select"]


def check(function, calls, kinds=("loop",)):
    """Compiled == NumPy on each call of `calls`, twice each (values, types, dtypes); the
    function's loops as `kinds` says."""
    compiled = kiln.compile(function)
    for args in calls:
        expected = function(*args)
        for _ in range(2):
            got = compiled(*args)
            assert type(got) is type(expected) and len(got) == len(expected)
            for value, want in zip(got, expected):
                if isinstance(want, (dict, list, str, type(None))):
                    assert value == want
                    continue
                assert type(value) is type(want)
                assert np.asarray(value).dtype == np.asarray(want).dtype
                np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-12)
        assert loop_kinds(function, *args) == list(kinds)


def jacobi(A, b, tol=1e-10, maxit=200):
    x = np.zeros_like(b)
    info = {"solver": "jacobi"}
    d = np.diag(A)
    for it in range(maxit):
        x_new = (b - A @ x + d * x) / d
        if np.max(np.abs(x_new - x)) < tol:
            return x_new, it + 1, info
        x = x_new
    return x, maxit, info


def bisection(c, lo, hi, tol=1e-12):
    note = None
    mid = lo
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if hi - lo < tol:
            return mid, note
        if mid ** 3 - c > 0:
            hi = mid
        else:
            lo = mid
    return mid, note


def first_large(x, limit):
    found = x[:0]
    for i in range(x.shape[0]):
        if x[i] > limit:
            found = x[i:]
            return found
    return found


def last_index(x, limit):
    for i in range(x.shape[0]):   # the index: a captured loop would leave it at the range's last
        if x[i] > limit:
            return i, x[i]
    return i, x[-1]


def diagonally_dominant(rng, n):
    A = rng.standard_normal((n, n))
    return A + np.diag(np.abs(A).sum(axis=1) + 1.0), rng.standard_normal(n)


def test_a_dict_returned_from_a_solver_loop_and_after_it(rng):
    A, b = diagonally_dominant(rng, 6)
    A2, b2 = diagonally_dominant(rng, 6)
    check(jacobi, [(A, b), (A2, b2), (A, b, 1e-10, 3)])


def test_none_returned_from_a_search_loop_and_after_it():
    check(bisection, [(np.float64(5.0), 0.0, 3.0), (np.float64(2.0), 0.0, 2.0),
                      (np.float64(2.0), 0.0, 2.0, 0.0)])


def test_a_returned_name_bound_in_the_loop_is_what_it_was_at_the_return(rng):
    x = rng.standard_normal(12)
    compiled = kiln.compile(first_large)
    for limit in (0.5, 1.0, 10.0):
        np.testing.assert_array_equal(compiled(x, limit), first_large(x, limit))
        np.testing.assert_array_equal(compiled(x, limit), first_large(x, limit))


def test_a_returned_loop_index_is_still_the_one_it_returned_at(rng):
    x = rng.standard_normal(9)
    compiled = kiln.compile(last_index)
    for limit in (0.5, 1.5, 10.0):
        for _ in range(2):
            got, want = compiled(x, limit), last_index(x, limit)
            assert got[0] == want[0] and got[1] == want[1]
