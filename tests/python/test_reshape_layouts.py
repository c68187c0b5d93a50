"""reshape, ravel and flatten give NumPy's views and copies (kiln._memory_layout): a view where
NumPy's is one (a C-contiguous array's; a strided one's where its strides allow, as NumPy's
_attempt_nocopy_reshape finds), a copy where NumPy copies (`A.T.ravel()`: kiln's was a view, and
a scratch write into it changed the caller's A, README differences item 8). Where kiln does not
know NumPy's layout, a write that would tell the two apart runs the call eagerly. Each case
against NumPy: its results and the arguments after the call."""

import numpy as np
import pytest

import kiln

def transposed_ravel(A):
    r = A.T.ravel(); r[0] = 99.0; return A.sum(), r.sum()
def transposed_reshape(A):
    r = A.T.reshape(-1); r[0] = 99.0; return A.sum(), r
def contiguous_reshape(A):
    r = A.reshape(-1); r[0] = 99.0; return A.sum(), r
def every_other_column_reshape(A):
    r = A[:, ::2].reshape(-1); r[0] = 99.0; return A.sum(), r
def middle_columns_reshape(A):
    r = A[:, 1:3].reshape(-1); r[0] = 99.0; return A.sum(), r
def strided_row(A):
    x = A[0]
    r = x[::2].ravel(); r[0] = 9.0
    s = x[::2].reshape(-1); s[1] = 7.0
    return A.sum(), r, s
def fortran_order(A):
    r = A.T.ravel(order='F'); r[0] = 9.0
    q = np.ravel(A, order='F'); q[1] = 5.0
    return A.sum(), r, q
def product_of_a_transpose(A):
    r = (A.T * 2).ravel(); r[0] = 9.0; return A.sum(), r
def copy_of_a_transpose(A):
    r = A.T.copy().ravel(); r[0] = 9.0; return A.sum(), r
def fortran_ordered_argument(x):
    r = x.ravel(); r[0] = 9.0; return x.sum(), r
def flat_of_a_transpose(A):
    A.T.flat[1] = 5.0; return A.sum()
def copy_keeps_old_values(A):
    r = A.T.reshape(-1); A[0, 0] = 7.0; return r
def view_sees_new_values(A):
    v = A.reshape(2, 6); A[0, 0] = 7.0; return v
def expand_dims_of_a_transpose(A):
    np.expand_dims(A.T, 0)[0, 0, 0] = 5.0; return A.sum()
def einsum_diagonal(A):
    d = np.einsum('ii->i', A[:, :3])
    r = d.ravel(); r[0] = 50.0
    s = d.reshape(-1); s[1] = 60.0
    return A.sum(), r, s
def broadcast_reshape(v):
    b = np.broadcast_to(v, (3, 4)).reshape(-1); b[0] = 5.0; return b, v
def astype_of_a_transpose(A):
    r = A.T.astype(np.float32).ravel(); r[0] = 1.0; return r
def zeros_like_a_transpose(A):
    z = np.zeros_like(A.T); r = z.ravel(); r[0] = 1.0; return z, r
def split_axis_of_a_transpose(A):
    t = A.T.reshape(2, 2, 3); t[0, 0, 0] = -1.0; return A.sum(), t
def swapped_axes(A):
    s = np.swapaxes(A, 0, 1).reshape(-1); s[0] = 99; return A.sum()
def flatten_of_a_transpose(A):
    f = A.T.flatten(); f[0] = 3.0; return A.sum(), f
def shape_assignment_of_a_transpose(A):
    x = A.T
    x.shape = (12,)
    return x


def empty_and_single(A):
    e = A[:0].T.reshape(0, 4)     # no element: C-contiguous whatever its strides
    one = A[:1, 2:3].T.ravel()    # one element: the same
    one[0] = -5.0
    return e, A.sum(), one


A = np.arange(12.0).reshape(3, 4)
_CASES = [
    (transposed_ravel, A), (transposed_reshape, A), (contiguous_reshape, A),
    (every_other_column_reshape, A), (middle_columns_reshape, A), (strided_row, A),
    (fortran_order, A), (product_of_a_transpose, A), (copy_of_a_transpose, A),
    (fortran_ordered_argument, np.asfortranarray(A)), (flat_of_a_transpose, A),
    (copy_keeps_old_values, A), (view_sees_new_values, A), (expand_dims_of_a_transpose, A),
    (einsum_diagonal, A), (broadcast_reshape, np.arange(4.0)), (astype_of_a_transpose, A),
    (zeros_like_a_transpose, A), (split_axis_of_a_transpose, A), (swapped_axes, A),
    (flatten_of_a_transpose, A), (shape_assignment_of_a_transpose, A), (empty_and_single, A),
]


def _outcome(function, argument):
    argument = argument.copy(order="K")
    try:
        result = function(argument)
    except Exception as error:  # noqa: BLE001 - NumPy's class is compared
        result = type(error)
    return result, argument


def _same(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e)
    elif isinstance(expected, type):
        assert got is expected
    else:
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("function, argument", _CASES, ids=[f.__name__ for f, _ in _CASES])
def test_reshapes_are_views_or_copies_as_numpys(function, argument):
    expected, expected_argument = _outcome(function, argument)
    compiled = kiln.compile(function)
    for _ in range(2):
        got, got_argument = _outcome(compiled, argument)
        _same(got, expected)
        np.testing.assert_array_equal(got_argument, expected_argument)


@pytest.mark.parametrize("function", [transposed_ravel, transposed_reshape, strided_row,
                                      fortran_order, product_of_a_transpose,
                                      fortran_ordered_argument, einsum_diagonal,
                                      broadcast_reshape, astype_of_a_transpose, swapped_axes])
def test_known_layouts_compile_without_a_break(function):
    argument = dict(_CASES)[function]
    explained = kiln.explain(function)(argument.copy(order="K"))
    assert explained.graph_break_count == 0, explained.break_reasons
