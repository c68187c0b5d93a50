"""np.einsum of one operand without a summation (a transpose 'ij->ji', a diagonal 'ii->i', both
'...ii->...i') is a writeable view of the operand in NumPy: writes through it change the operand
(`np.einsum('ii->i', A)[:] += lam`, the usual "add to the diagonal"). kiln returned copies, and
those writes were lost. Every other einsum (a sum, several operands, out=) is a new array."""

import numpy as np
import pytest

import kiln


def add_ridge(A, lam):
    np.einsum('ii->i', A)[:] += lam
    return A


def zero_first_column(A):
    t = np.einsum('ij->ji', A)
    t[0] = 0
    return A.sum()


def zero_inner_diagonal(A):
    np.einsum('iji->ij', A)[:] = 0
    return A


def batched_diagonal(A):
    np.einsum('...ii->...i', A)[...] = 7
    return A


def reversed_axes(A):
    np.einsum('ijk->kji', A)[0, 1] = -1
    return A


def implicit_and_sublist(A):
    np.einsum('ji', A)[0] *= 2              # implicit output 'ij': the transpose
    np.einsum(A, [0, 0], [0])[1:] -= 1      # the sublist form of 'ii->i'
    np.einsum('ii->i', A, optimize=True)[0] = 5
    return A


def view_follows_later_writes(A):
    d = np.einsum('ii->i', A)
    A[1, 1] = 42
    return d.copy()


def sums_are_copies(A):
    s = np.einsum('ij->i', A)
    s[0] = 99
    t = np.einsum('ii', A)
    return A, s, t


def read_only_operand(A):
    d = np.einsum('ii->i', np.broadcast_to(A[0], (3, 3)))
    try:
        d[0] = 1
    except ValueError:
        return -1.0
    return 1.0


_CASES = [
    (add_ridge, lambda rng: (np.zeros((3, 3)), 0.5)),
    (zero_first_column, lambda rng: (rng.random((2, 3)),)),
    (zero_inner_diagonal, lambda rng: (rng.random((3, 4, 3)),)),
    (batched_diagonal, lambda rng: (rng.random((2, 3, 3)),)),
    (reversed_axes, lambda rng: (rng.random((2, 3, 4)),)),
    (implicit_and_sublist, lambda rng: (rng.random((3, 3)),)),
    (view_follows_later_writes, lambda rng: (rng.random((3, 3)),)),
    (sums_are_copies, lambda rng: (rng.random((3, 3)),)),
    (read_only_operand, lambda rng: (rng.random((3, 3)),)),
]


@pytest.mark.parametrize("function, make", _CASES, ids=[c[0].__name__ for c in _CASES])
def test_single_operand_einsum_views_write_through_as_numpy(function, make):
    rng = np.random.default_rng(0)
    compiled = kiln.compile(function)
    args = make(rng)
    assert kiln.explain(function)(*[np.copy(a) for a in args]).graph_break_count == 0
    for call in range(2):
        args = make(rng)
        expected_args = [np.copy(a) for a in args]
        expected = function(*expected_args)
        got = compiled(*args)
        for g, e in zip(args, expected_args):  # the caller's arrays, written as NumPy writes
            np.testing.assert_array_equal(g, e)
        for g, e in zip(expected if isinstance(expected, tuple) else (expected,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_allclose(g, e, rtol=1e-13)  # a sum's order


def test_einsum_views_keep_the_operands_dtype_as_numpy_does():
    """NumPy's view ignores dtype= (the operand's own dtype comes back); a sum casts."""
    def f(A, B):
        return (np.einsum('ii->i', A, dtype=np.float32), np.einsum('ij->ji', B),
                np.einsum('ij->i', A, dtype=np.float32, casting='same_kind'))
    A, B = np.arange(9.0).reshape(3, 3), np.arange(6, dtype=np.int8).reshape(2, 3)
    for got, expected in zip(kiln.compile(f)(A, B), f(A, B)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
