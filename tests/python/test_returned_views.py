"""Results that are an argument itself or a view of it, as NumPy returns them
(kiln/_returned_views.py): the same object for `return a`, views sharing the caller's memory with
NumPy's strides, base and flags, so that a write through the result reaches the argument as it
does in NumPy. Each case runs eagerly and compiled (several calls: the first traces, the others
hit the cache) on arguments of several layouts."""
import numpy as np
import pytest

import kiln


def _returns_itself(a):
    return a


def _transposed(a):
    return a.T


def _sliced(a):
    return a[1:, ::2]


def _negative_step(a):
    return a[::-1, 1]


def _row(a):
    return a[2]


def _ellipsis_axis(a):
    return a[..., None, 1:]


def _reshaped(a):
    return a.reshape(-1)


def _raveled(a):
    return a.ravel()


def _flipped(a):
    return np.flip(a)


def _flipped_rows(a):
    return np.flip(a, axis=0)[1:]


def _broadcast(a):
    return np.broadcast_to(a[0], (3,) + a.shape[1:])


def _swapped(a):
    return np.swapaxes(a, 0, 1)[:, None]


def _squeezed(a):
    return np.expand_dims(a, 0).squeeze()


def _view_of_view(a):
    b = a[1:]
    c = b.T[::2]
    return c[1:]


def _written_then_viewed(a):
    a += 1
    return a[1:]


def _viewed_then_written(a):
    v = a[:, 1]
    a *= 2
    return v, a.sum()


def _mixed(a, b):
    return a, a[0], b.T, a * b.T, 3


def _in_a_dict(a):
    return {"head": a[:1], "rest": a[1:], "itself": a}


def _astype_same(a):
    return a.astype(a.dtype, copy=False)


def _asarray(a):
    return np.asarray(a)


def _view_method(a):
    return a.view()[1:]


def _real_part(a):
    return a.real


CASES = [_returns_itself, _transposed, _sliced, _negative_step, _row, _ellipsis_axis, _reshaped,
         _raveled, _flipped, _flipped_rows, _broadcast, _swapped, _squeezed, _view_of_view,
         _written_then_viewed, _viewed_then_written, _in_a_dict, _astype_same, _asarray,
         _view_method, _real_part]


def _contiguous(seed):
    return np.random.default_rng(seed).standard_normal((5, 6))


def _strided(seed):
    return np.random.default_rng(seed).standard_normal((10, 6))[::2]


def _transposed_argument(seed):
    return np.random.default_rng(seed).standard_normal((6, 5)).T


def _reversed(seed):
    return np.random.default_rng(seed).standard_normal((5, 6))[::-1, ::-1]


def _read_only(seed):
    array = _contiguous(seed)
    array.flags.writeable = False
    return array


LAYOUTS = [_contiguous, _strided, _transposed_argument, _reversed, _read_only]


def _leaves(result):
    if isinstance(result, dict):
        return [result[key] for key in sorted(result)]
    return list(result) if isinstance(result, tuple) else [result]


def _base_kind(result, argument):
    """Whether NumPy's (or kiln's) result.base is the argument or the argument's own base;
    None for any other (a new array's: kiln's own their memory through a capsule, NumPy's
    copying reshape returns a view of its copy)."""
    base = getattr(result, "base", None)
    if base is None:
        return None
    if base is argument:
        return "argument"
    if argument.base is not None and base is argument.base:
        return "argument's base"
    return None


def _describe(result, argument):
    if not isinstance(result, np.ndarray):
        return type(result)  # (values compared by _same_values)
    return (result is argument, result.dtype, result.shape, result.strides,
            result.flags.writeable, result.flags.c_contiguous, result.flags.f_contiguous,
            np.shares_memory(result, argument), _base_kind(result, argument))


def _same_values(a, b):
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == pytest.approx(b)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_results_alias_the_argument_as_numpy_does(fn, layout):
    compiled = kiln.compile(fn)
    writes = fn in (_written_then_viewed, _viewed_then_written)
    for call in range(3):
        expected_argument, argument = layout(call), layout(call)
        try:
            expected = fn(expected_argument)
        except ValueError as error:  # a write into a read-only argument
            assert writes and "read-only" in str(error)
            with pytest.raises(ValueError, match="read-only"):
                compiled(argument)
            continue
        result = compiled(argument)
        for want, got in zip(_leaves(expected), _leaves(result), strict=True):
            assert _describe(got, argument) == _describe(want, expected_argument)
            _same_values(got, want)
        np.testing.assert_array_equal(argument, expected_argument)
        # A write through each writeable result reaches the argument as NumPy's does.
        for k, (want, got) in enumerate(zip(_leaves(expected), _leaves(result))):
            if isinstance(want, np.ndarray) and want.flags.writeable and want.size:
                want.flat[-1] = 100 + k
                got.flat[-1] = 100 + k
        np.testing.assert_array_equal(argument, expected_argument)


def _two_arguments(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 3)), rng.standard_normal((3, 4))


def test_several_arguments_and_other_results():
    compiled = kiln.compile(_mixed)
    for call in range(3):
        a, b = _two_arguments(call)
        result = compiled(a, b)
        assert result[0] is a and result[1].base is a and result[2].base is b
        assert not np.shares_memory(result[3], a) and result[4] == 3
        np.testing.assert_array_equal(result[3], a * b.T)
        result[1][0] = -1.0
        assert a[0, 0] == -1.0


def test_arguments_that_share_memory_keep_values():
    """Aliased arguments are traced through one flat input: their results are copies, with
    NumPy's values."""
    compiled = kiln.compile(lambda a, b: (a[1:], b.T))
    for _ in range(3):
        base = np.arange(12.0)
        got = compiled(base[:8], base[4:])
        want = (base[:8][1:], base[4:].T)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_a_returned_view_keeps_its_argument_alive():
    compiled = kiln.compile(lambda a: a[1:])
    for _ in range(3):
        view = compiled(np.arange(10.0))
        import gc
        gc.collect()
        np.testing.assert_array_equal(view, np.arange(1.0, 10.0))


def test_a_view_returned_from_a_branch_on_data():
    """After a graph break the trace goes on; its result views the argument still."""
    def fn(a):
        if a.sum() > 0:
            return a[1:]
        return a[:1]

    compiled = kiln.compile(fn)
    for sign in (1, -1, 1):
        argument = sign * np.arange(1.0, 5.0)
        result = compiled(argument)
        np.testing.assert_array_equal(result, fn(argument.copy()))
        assert result.base is argument


def _results_viewing_a_result(a):
    b = a * 2.0
    c = np.exp(a)
    return b, b[1:], c.T, c, b.reshape(-1)[::3], (b, b)


@pytest.mark.parametrize("layout", [_contiguous, _strided, _transposed_argument],
                         ids=lambda f: f.__name__)
def test_results_that_view_another_result(layout):
    """`return b, b[1:]`: the second result views the first, as in NumPy (writes through one
    show in the other); a view of an array the result does not return is a copy."""
    compiled = kiln.compile(_results_viewing_a_result)
    for call in range(3):
        argument = layout(call)
        got, want = compiled(argument), _results_viewing_a_result(layout(call))
        b, tail, ct, c, strided, pair = got
        pairs = ((1, 0), (2, 3), (4, 0))  # (view, viewed): shared as NumPy shares them
        assert ([np.shares_memory(got[v], got[a]) for v, a in pairs]
                == [np.shares_memory(want[v], want[a]) for v, a in pairs])
        if b.flags.c_contiguous:  # (a result in Fortran order views kiln's buffer)
            assert tail.base is b and ct.base is c and strided.base is b
        assert pair[0] is b and pair[1] is b
        for k, (g, w) in enumerate(zip((b, tail, ct, c, strided), want)):
            np.testing.assert_allclose(g, w, rtol=1e-15)
            assert g.flags.writeable
            # (NumPy's view of a temporary it copied, a Fortran-ordered b's reshape, keeps
            # the temporary's strides; kiln's result is a new array of its own)
            assert g.strides == w.strides or k == 4 and not np.shares_memory(w, want[0])
        b[-1, -1] = -5.0
        assert tail[-1, -1] == -5.0


def test_a_view_of_an_array_not_returned_is_a_copy():
    compiled = kiln.compile(lambda a: (a * 2.0)[1:])
    for call in range(3):
        result = compiled(_contiguous(call))
        np.testing.assert_allclose(result, (_contiguous(call) * 2.0)[1:], rtol=1e-15)
        assert result.flags.c_contiguous and result.flags.writeable


def _fortran_results(a):
    return a * 2.0, np.asfortranarray(a + 1.0), (a - 1.0).copy(order="F"), np.exp(a.T)


@pytest.mark.parametrize("layout", [_contiguous, _transposed_argument, _strided],
                         ids=lambda f: f.__name__)
def test_results_in_numpys_memory_order(layout):
    """A new array NumPy lays out in Fortran (or another dense) order, order="K" of a
    Fortran-ordered operand or asked for, has NumPy's strides and flags."""
    compiled = kiln.compile(_fortran_results)
    for call in range(3):
        argument = layout(call)
        for got, want in zip(compiled(argument), _fortran_results(layout(call))):
            np.testing.assert_allclose(got, want, rtol=1e-15)
            assert (got.strides, got.flags.c_contiguous, got.flags.f_contiguous,
                    got.flags.writeable) == (want.strides, want.flags.c_contiguous,
                                             want.flags.f_contiguous, want.flags.writeable)


def _written_arguments(a, b, c):
    np.add(a, b, out=c)
    a += 1
    return c, a, np.multiply(a, 2, out=b)


def test_arguments_written_and_returned_are_the_callers_arrays():
    """`np.add(a, b, out=c); return c` and `a += 1; return a` return the caller's arrays, with
    the values written into them."""
    compiled = kiln.compile(_written_arguments)
    for call in range(3):
        arguments = [np.full(4, 1.0 + call), np.arange(4.0), np.zeros(4)]
        expected_arguments = [x.copy() for x in arguments]
        result = compiled(*arguments)
        expected = _written_arguments(*expected_arguments)
        assert [r is x for r, x in zip(result, (arguments[2], arguments[0], arguments[1]))] \
            == [True, True, True]
        for got, want in zip(result + tuple(arguments), expected + tuple(expected_arguments)):
            np.testing.assert_array_equal(got, want)
