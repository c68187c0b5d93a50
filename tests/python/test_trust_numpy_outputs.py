"""out= arguments as NumPy takes them, where kiln gave a wrong answer without an error: a tuple
out= (`np.add(a, 1, out=(a,))`) became the stack of its arrays, written instead of a; out= of a
function run eagerly (np.median, np.quantile) was written into a copy; np.ptp dropped out=; out=
of another shape was broadcast into and of another dtype cast into where NumPy raises (np.sum,
np.std, np.round, np.clip, np.dot, np.einsum, np.concatenate's dtype= and casting=). And
np.linalg's error for a singular matrix was a ValueError that a user's `except
np.linalg.LinAlgError` missed, and a runtime check's error (raised when the graph runs) escaped
an `except` inside the function. Each must be NumPy's answer, its writes into the arguments, or
its exception class."""
import warnings

import numpy as np
import pytest

import kiln


def outcome(function, arrays):
    """(result or exception, the arguments' contents after the call) on copies of `arrays`."""
    copies = [a.copy() for a in arrays]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = function(*copies)
    except Exception as error:  # noqa: BLE001 - the class is compared
        result = error
    return result, copies


def assert_same(function, *arrays):
    (expected, theirs), (got, mine) = outcome(function, arrays), outcome(
        kiln.compile(function), arrays)
    if isinstance(expected, Exception):  # the user's `except` clause for NumPy's must catch it
        assert isinstance(got, type(expected)), (expected, got)
    else:
        assert not isinstance(got, Exception), got
        for g, e in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            assert np.asarray(g).dtype == np.asarray(e).dtype
            np.testing.assert_array_equal(g, e)
    for m, t in zip(mine, theirs):
        np.testing.assert_array_equal(m, t)


X = np.arange(6.0) * 1.25  # exact in binary: products and sums of it compare exactly
M = np.arange(1.0, 7.0).reshape(2, 3) * 1.25


def _add_tuple(a):
    np.add(a, 1, out=(a,))
    return a


def _negative_named_tuple(a):
    outputs = (a,)
    np.negative(a, out=outputs)
    return a


def _divmod_pair(a):
    q, r = np.zeros(6), np.zeros(6)
    np.divmod(a, 4, out=(q, r))
    return q, r


def _positional_tuple(a):
    np.add(a, 1, (a,))  # NumPy's TypeError: a positional output is an array
    return a


def _reduce_tuple(a):
    o = np.zeros(3)
    np.add.reduce(a.reshape(2, 3), 0, None, out=(o,))
    return o


def _clip_tuple(a):
    np.clip(a, 2, 4, out=(a,))  # NumPy's clip is a ufunc: (a,) is a
    return a


def _sum_tuple(a):
    o = np.zeros(3)
    np.sum(a.reshape(2, 3), axis=0, out=(o,))
    return o


def _round_tuple(a):
    np.round(a, 1, out=(a,))  # NumPy's TypeError
    return a


def _ptp_tuple(a):
    o = np.zeros(3)
    np.ptp(a.reshape(2, 3), axis=0, out=(o,))  # NumPy's TypeError
    return o


@pytest.mark.parametrize("function", [_add_tuple, _negative_named_tuple, _divmod_pair,
                                      _positional_tuple, _reduce_tuple, _clip_tuple, _sum_tuple,
                                      _round_tuple, _ptp_tuple])
def test_a_tuple_out_is_its_arrays_not_their_stack(function):
    assert_same(function, X)


def test_a_tuple_out_handed_in_as_an_argument():
    def function(a, outputs):
        np.add(a, 1, out=outputs)
        return a
    x = X.copy()
    kiln.compile(function)(x, (x,))
    np.testing.assert_array_equal(x, X + 1)


def _into(function, shape, dtype=np.float64):
    """function(a, out=o) for a fresh o of `shape` and `dtype`, returning o."""
    def run(a):
        o = np.zeros(shape, dtype)
        function(a, o)
        return o
    return run


@pytest.mark.parametrize("function", [
    _into(lambda a, o: np.median(a, axis=0, out=o), 3),
    _into(lambda a, o: np.median(a, axis=0, out=o), 3, np.int32),
    _into(lambda a, o: np.quantile(a, 0.25, axis=0, out=o), 3),
    _into(lambda a, o: np.percentile(a, [10, 90], axis=1, out=o), (2, 2)),
    _into(lambda a, o: np.ptp(a, axis=0, out=o), 3),
])
def test_out_of_a_function_is_written(function):
    assert_same(function, M)


@pytest.mark.parametrize("function", [
    _into(lambda a, o: np.sum(a, axis=0, out=o), (2, 3)),  # no broadcast into out
    _into(lambda a, o: np.mean(a, axis=0, out=o), (1, 3)),
    _into(lambda a, o: np.cumsum(a, axis=1, out=o), (3, 2)),
    _into(lambda a, o: np.sum(a, axis=0, out=o), 3, np.int32),  # reductions cast unsafely
    _into(lambda a, o: np.var(a, axis=0, out=o), 3, np.int32),
    _into(lambda a, o: np.std(a, axis=0, out=o), 3, np.int32),  # sqrt's same_kind: an error
    _into(lambda a, o: np.std(a, axis=0, out=o), 3, np.float32),
    _into(lambda a, o: np.nanstd(a, axis=0, out=o), 3, np.int32),
    _into(lambda a, o: np.round(a, out=o), (2, 3), np.int32),
    _into(lambda a, o: np.round(a, 1, out=o), (2, 3), np.int32),
    _into(lambda a, o: np.clip(a, 2, 4, out=o), (2, 3), np.int32),
    _into(lambda a, o: np.clip(a, 2, 4, out=o), (2, 2, 3)),  # a ufunc's out broadcasts
    _into(lambda a, o: np.dot(a, a.T, out=o), (2, 2), np.float32),
    _into(lambda a, o: np.dot(a, a.T, out=o), (2, 2)),
    _into(lambda a, o: np.einsum("ij->j", a, out=o), 3, np.int32),
    _into(lambda a, o: np.einsum("ij->j", a, out=o), 3, np.float32),
    _into(lambda a, o: np.concatenate([a, a], out=o), (4, 3), np.int32),
    _into(lambda a, o: np.concatenate([a, a], out=o, casting="unsafe"), (4, 3), np.int32),
    _into(lambda a, o: np.stack([a, a], out=o), (2, 2, 3), np.int32),
    _into(lambda a, o: np.stack([a, a], out=o), (2, 2, 3), np.float32),
])
def test_out_of_another_shape_or_dtype_follows_numpys_rule(function):
    assert_same(function, M)


def _dot_into(make_out):
    def function(a):
        buffer = np.zeros((4, 4))
        out = make_out(buffer)
        np.dot(a, a.T, out=out)
        return buffer
    return function


@pytest.mark.parametrize("make_out", [
    lambda b: b[:2, ::2],     # strided: NumPy's ValueError (kiln wrote it)
    lambda b: b[:2, :2].T,    # Fortran-ordered: the same
    lambda b: b[:2, :2],      # not contiguous: the same
    lambda b: b.reshape(8, 2)[1:3],  # C-contiguous: written
    lambda b: b[2].reshape(2, 2),
])
def test_dot_writes_only_a_c_contiguous_out(make_out):
    assert_same(_dot_into(make_out), M[:, :2])


@pytest.mark.parametrize("function", [
    lambda a: np.concatenate([a, a], dtype=np.int32),
    lambda a: np.concatenate([a, a], dtype=np.int32, casting="unsafe"),
    lambda a: np.stack([a, a], dtype=np.int32),
    lambda a: np.hstack([a, a], dtype=np.int32),
    lambda a: np.vstack([a, a], dtype=np.int32, casting="unsafe"),
    lambda a: np.concatenate([a.astype(np.int64), a], dtype=np.float32),
    lambda a: np.einsum("ij->i", a, dtype=np.float32),
])
def test_a_dtype_follows_the_casting_rule(function):
    assert_same(function, M)


@pytest.mark.parametrize("function", [
    lambda a: np.linalg.solve(a, a[0]),
    lambda a: np.linalg.inv(a),
    lambda a: np.linalg.solve(a.astype(np.float32), np.ones((2, 3), np.float32)),
])
def test_a_singular_matrix_raises_numpys_linalg_error(function):
    compiled = kiln.compile(function)
    regular = np.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(compiled(regular), function(regular))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        compiled(np.array([[1.0, 2.0], [2.0, 4.0]]))  # the check runs at every call


def _solve_or_zeros(a, b):
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return np.zeros_like(b)


def _gather_or_first(a, index):
    a *= 2  # an update before the failing check: the eager run must see a as it was
    try:
        return a[index]
    except IndexError:
        return a[:1]


def _newton_steps_or_zero_step(J, x):
    # the check's op in the try, a graph break after it: the segment ran at the break, where
    # its LinAlgError escaped the user's except (Newton's method with a fallback)
    for _ in range(3):
        try:
            dx = np.linalg.solve(J, x)
        except np.linalg.LinAlgError:
            dx = np.zeros_like(x)
        x = x - 0.5 * dx
        if np.linalg.norm(dx) < 1e-12:
            break
    return x


@pytest.mark.parametrize("function, good, bad", [
    (_solve_or_zeros, (np.eye(2) * 2, np.ones(2)), (np.zeros((2, 2)), np.ones(2))),
    (_gather_or_first, (np.arange(5.0), np.array([1, 2])), (np.arange(5.0), np.array([9]))),
    (_newton_steps_or_zero_step, (np.eye(2) * 2, np.ones(2)), (np.zeros((2, 2)), np.ones(2))),
])
def test_a_runtime_check_inside_the_users_try_is_caught_there(function, good, bad):
    """The check raises when the graph runs, outside the function's `except`: such a call runs
    eagerly, on the first call (which compiles) and on later ones (the cached entry)."""
    compiled = kiln.compile(function)
    for arguments in (bad, good, bad):
        mine = [a.copy() for a in arguments]
        theirs = [a.copy() for a in arguments]
        np.testing.assert_array_equal(compiled(*mine), function(*theirs))
        for m, t in zip(mine, theirs):
            np.testing.assert_array_equal(m, t)


def test_a_runtime_check_outside_any_try_keeps_kilns_message():
    compiled = kiln.compile(lambda a, index: a[index])
    with pytest.raises(IndexError, match="kiln: index at"):
        compiled(np.arange(5.0), np.array([9]))
