"""ndarray semantics a probe of real NumPy programs found kiln getting wrong without an error:
in-place methods, index orders, NumPy scalars' dtypes, the sign of zero, NumPy's power fast
path, printing, ndarray members without a traced form, and result containers."""
import collections
import dataclasses

import numpy as np
import pytest

import kiln

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
IF_NEEDED = None if NUMPY2 else False  # np.array's copy-if-needed (NumPy 1.x spells it False)


def same(got, expected):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for value, reference in zip(got, expected):
        value, reference = np.asarray(value), np.asarray(reference)
        assert value.dtype == reference.dtype and value.shape == reference.shape
        np.testing.assert_array_equal(value, reference)
        np.testing.assert_array_equal(np.signbit(value), np.signbit(reference))


def compare(function, *arrays, fullgraph=False):
    """Compiled against eager on copies, the (mutated) inputs too."""
    eager_inputs = [a.copy() for a in arrays]
    compiled_inputs = [a.copy() for a in arrays]
    same(kiln.compile(function, fullgraph=fullgraph)(*compiled_inputs), function(*eager_inputs))
    same(tuple(compiled_inputs), tuple(eager_inputs))


X = np.random.default_rng(4).random((4, 6))


def test_in_place_sort_partition_and_put_change_the_array():
    def in_place(x):
        y = x * 1
        y.sort()
        x.sort(axis=0)
        z = x + 0
        z.partition(2, axis=1)
        w = x.copy()
        w.put([0, 5], [-1.0, -2.0])
        # what NumPy promises of a partition: the kth element in place, each side's elements
        # (kiln's is a full sort; NumPy's order of the sides depends on its version)
        return y, np.sort(z[:, :2], axis=1), z[:, 2], np.sort(z[:, 3:], axis=1), w
    compare(in_place, X)


def test_fortran_index_order():
    compare(lambda a: (a.ravel(order="F"), a.reshape(3, 8, order="F"), a.flatten("F"),
                       np.reshape(a, (2, 3, 4), order="F"), a[1:, ::2].reshape(-1, order="F"),
                       np.ravel(a.T, "F")), X, fullgraph=True)

    def write_through_copy(a):   # NumPy's F-order reshape of a C-ordered array is a copy
        a.reshape(6, 4, order="F")[0, 0] = -1.0
        return a
    compare(write_through_copy, X)


def _memory_orders(a):
    b = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1) + a[0, 0]
    return (a.ravel(order="K"), a.T.ravel(order="K"), a.T.reshape(-1, order="A"),
            np.ravel(a[:, ::2].T, "K"), a.T.flatten("K"), b.ravel("K"), b.ravel("A"),
            np.ravel(b[1:], order="K"), a.ravel("A"))


@pytest.mark.parametrize("layout", [lambda x: x, lambda x: x.T, lambda x: x[::-1, ::2]],
                         ids=["contiguous", "transposed", "reversed"])
def test_memory_index_orders(layout):
    """ravel/flatten in order "K" and ravel/reshape in order "A" read the array in NumPy's
    memory layout (a NotImplementedError before); a ravel that views in NumPy views in kiln
    (writes through it reach the array), one NumPy copies is a copy; reshape refuses "K" as
    NumPy does. Negative strides with "K" run as NumPy (a graph break)."""
    # (compare's inputs are C-ordered copies: the argument's layout is given to each run)
    eager, argument = layout(X.copy()), layout(X.copy())
    same(kiln.compile(_memory_orders)(argument), _memory_orders(eager))
    compare(lambda a: _memory_orders(layout(a)), X)

    def write_through_ravel(a):
        a = layout(a)
        a.T.ravel(order="K")[1] = -1.0  # a view where the transpose is contiguous
        b = a[:, ::2].T.ravel(order="K")   # a copy
        b[0] = -2.0
        return a, b
    compare(write_through_ravel, X)
    with pytest.raises(ValueError, match="order 'K' is not permitted for reshaping"):
        kiln.compile(lambda a: a.reshape(-1, order="K"))(X)


def test_numpy_float64_scalars_are_strongly_typed():
    """NEP 50 (NumPy 2; kiln on 1.x too, README's differences): float32 with np.float64 is
    float64."""
    x32, s = X.astype(np.float32), np.float64(1 / 3)
    got = kiln.compile(lambda x, s: (x * s, x + np.float64(1), np.maximum(x, s)))(x32, s)
    x64 = x32.astype(np.float64)
    same(got, (x64 * s, x64 + 1.0, np.maximum(x64, s)))


def test_negative_zero_constants_keep_their_sign():
    x = np.array([1.0, -1.0, 0.0, -0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        compare(lambda x: (np.maximum(x, -0.0), np.maximum(x, 0.0), np.where(x > 0, x, -0.0),
                           1 / np.where(x > 0, x, -0.0), x / -0.0), x, fullgraph=True)


def test_fmax_fmin_of_equal_zeros_are_the_first_as_numpy_2s():
    """NumPy 2's fmax/fmin (and torch's) return the first of equal operands (fmax(-0.0, 0.0)
    is -0.0), where maximum/minimum return the second; kiln's fmax returned the second (as
    NumPy 1.x's does: kiln follows NumPy 2 there, as for promotion)."""
    x, y = np.array([-0.0, 0.0, np.nan, 1.0]), np.array([0.0, -0.0, 0.0, np.nan])
    results = kiln.compile(lambda x, y: (np.fmax(x, y), np.fmin(x, y), np.fmax(y, x),
                                         np.maximum(x, y)))(x, y)
    first, second = [True, False, False, False], [False, True, False, False]
    for result, signs in zip(results[:3], (first, first, second)):
        np.testing.assert_array_equal(result, [0.0, 0.0, 0.0, 1.0])
        np.testing.assert_array_equal(np.signbit(result), signs)
    np.testing.assert_array_equal(np.signbit(results[3][:2]), [False, True])


def test_power_of_one_half_is_numpys_square_root():
    x = np.array([-np.inf, -0.0, 4.0, -np.inf, -np.inf, 2.0, 9.0])   # vector lanes and tail
    with np.errstate(invalid="ignore"):
        compare(lambda x: (x ** 0.5, x.astype(np.float32) ** 0.5, np.arange(3) ** 0.5), x,
                fullgraph=True)
        if int(np.__version__.split(".")[0]) >= 2:   # 1.x's np.power calls pow (README)
            compare(lambda x: np.power(x, 0.5), x, fullgraph=True)


def test_print_and_format_show_values_on_every_call(capsys):
    def report(x):
        mean = x.mean()
        print(f"mean={mean:.3f}", "sum", x.sum())
        return x * 2
    compiled = kiln.compile(report)
    compiled(np.arange(3.0))
    compiled(np.arange(3.0) + 1)
    assert capsys.readouterr().out == "mean=1.000 sum 3.0\nmean=2.000 sum 6.0\n"


def test_repr_and_prints_of_containers_show_values_on_every_call(capsys):
    # print of a tuple or list reprs its items: it showed "TracedArray(shape=(), ...)"
    def report(x):
        total = x.sum()
        print((total, x[:2]), [x[0]], f"{total!r}")
        return repr(x[1])
    compiled = kiln.compile(report)
    for x in (np.arange(3.0), np.arange(3.0) + 1):
        assert compiled(x) == report(x)
    first, first_eager, second, second_eager = capsys.readouterr().out.splitlines()
    assert first == first_eager and second == second_eager and first != second


def _pickled_round_trip(x):
    y = x * 2
    blob = __import__("pickle").dumps((y, y.sum()))  # a PicklingError naming no line before
    back = __import__("pickle").loads(blob)
    return back[0] + back[1], len(blob)


def test_pickling_traced_values_pickles_their_values():
    compiled = kiln.compile(_pickled_round_trip)
    for x in (np.arange(3.0), np.arange(3.0) + 1):
        (result, size), (expected, expected_size) = compiled(x), _pickled_round_trip(x)
        np.testing.assert_array_equal(result, expected)
        assert size == expected_size


def test_ndarray_members_without_a_traced_form():
    def members(x):
        y = x * 2
        y.flat[3] = 7.0
        return (y, y.flat[2], x.compress([True, False, True, True], axis=0),
                np.sort(x[0]).searchsorted(0.5), x.argpartition(2, axis=0),
                x.byteswap().byteswap())
    compare(members, X)
    with pytest.raises(TypeError, match=r"x\.resize at "):
        kiln.compile(lambda x: x.resize(3))(X)
    # NumPy's strides of a view (test_as_strided.py has the layouts)
    assert kiln.compile(lambda x: x.T.strides)(X) == X.T.strides == (8, 48)


def _flags(x):
    out = [x.flags["C_CONTIGUOUS"], x.flags.f_contiguous, x.T.flags.c_contiguous, x.T.flags["F"],
           x[:, ::2].flags.forc, (x * 2).flags.writeable, (x * 2).flags["C"],
           x.reshape(-1).flags["FNC"], x[0].flags.aligned,
           np.broadcast_to((x * 2)[0], (4, 6)).flags["W"]]
    return np.array(out) + (10.0 if x.flags.c_contiguous else 0.0) + x[0, 0]


def test_flags_of_arrays_whose_layout_is_known_are_numpys():
    """x.flags (contiguity, writeable, aligned) of arguments in any layout and of the views and
    results made from them, as NumPy has them: code that checks layout before it copies
    (`if not x.flags.c_contiguous`) ran nowhere before (a TypeError)."""
    compiled = kiln.compile(_flags)
    for x in (X, np.asfortranarray(X), np.ones((4, 12))[:, ::2]):
        np.testing.assert_array_equal(compiled(x), _flags(x))
    # an argument's writeable flag and OWNDATA are the caller's array's: the call runs eagerly
    frozen = X.copy()
    frozen.flags.writeable = False
    for key in ("WRITEABLE", "OWNDATA"):
        for x in (X, frozen, X[::2]):
            assert kiln.compile(lambda x: x.flags[key])(x) == x.flags[key]
            assert kiln.compile(lambda x: x[1:].flags[key])(x) == x[1:].flags[key]


def test_python_numbers_carried_through_a_captured_loop_stay_weakly_typed():
    """A counter or a Python float a captured loop carries is still a Python number after it:
    int8 + n stays int8 and float32 * c float32, as in eager NumPy."""
    def carried(x, x8, x32):
        n, s, c = 0, 0.0, 0.0
        while x.max() > 1:
            x = x / 2
            n += 1
            s = x.sum()
        for _ in range(5):
            c = c + 0.5
        return x, s, x8 + n, x32 * c, {n: 1.5}[n]   # n hashes by its value
    compare(carried, np.arange(1.0, 6.0), np.ones(3, np.int8), np.ones(3, np.float32))


Pair = collections.namedtuple("Pair", "total scaled count")


@dataclasses.dataclass
class Holder:
    value: object


def test_namedtuple_results_are_rebuilt_and_other_holders_of_arrays_run_eagerly():
    # Beside another result both came back as they were, their fields tracers, not arrays.
    f = kiln.compile(lambda a, b: (a - b, Pair(a + b, [a * 2.0], 3)))
    g = kiln.compile(lambda a: (a - 1.0, Holder(a * 2.0)))
    for scale in (1.0, 5.0):
        difference, result = f(X * scale, X)
        same(difference, X * scale - X)
        assert type(result) is Pair and result.count == 3
        assert type(result.total) is np.ndarray and type(result.scaled[0]) is np.ndarray
        same(result.total, X * scale + X)
        same(result.scaled[0], X * scale * 2.0)
        _, held = g(X * scale)
        assert type(held) is Holder and type(held.value) is np.ndarray
        same(held.value, X * scale * 2.0)


def test_zero_d_results_numpy_gives_as_arrays_stay_arrays():
    # A full tensordot contraction and the real part of a 0-d array are 0-d arrays in NumPy;
    # kiln returned NumPy scalars. The real part of a NumPy scalar stays a scalar.
    v, m, s = X[0], X[:3, :3], np.array(0.7)
    functions = [lambda v, m, s: np.tensordot(v, v, axes=1), lambda v, m, s: np.tensordot(m, m),
                 lambda v, m, s: np.real(s), lambda v, m, s: np.imag(s), lambda v, m, s: s.real,
                 lambda v, m, s: np.real(v.sum()), lambda v, m, s: (v * 1j).sum().imag]
    for function in functions:
        got, expected = kiln.compile(function)(v, m, s), function(v, m, s)
        assert type(got) is type(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_astype_without_copy_to_its_own_dtype_is_the_array_itself():
    """x.astype(x.dtype, copy=False) is x in NumPy: writes through it reach x (and the
    caller's argument); to another dtype it is a new array."""
    def write_through(x):
        same = x.astype(np.float64, copy=False)
        same[0] = -1.0
        other = x.astype(np.float32, copy=False)
        other[1] = -2.0
        return x * 1, same is x
    for dtype in (np.float64, np.int32):
        x, y = np.arange(4.0, dtype=dtype), np.arange(4.0, dtype=dtype)
        got, expected = kiln.compile(write_through)(x), write_through(y)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1]
        np.testing.assert_array_equal(x, y)


VIEWS = {  # NumPy returns views here: a write through the result reaches the argument
    "flip": lambda x: np.flip(x, 0), "flip_all": np.flip, "real": lambda x: x.real,
    "np_real": np.real, "rollaxis": lambda x: np.rollaxis(x, 1),
    "matrix_transpose": getattr(np, "matrix_transpose", np.transpose),
    "permute_dims": lambda x: getattr(np, "permute_dims", np.transpose)(x, (1, 0)),
    "unstack": lambda x: getattr(np, "unstack", list)(x)[1],
    "array_copy_none": lambda x: np.array(x, copy=IF_NEEDED),
    "array_ndmin": lambda x: np.array(x[0], copy=IF_NEEDED, ndmin=3),
    "asarray": np.asarray,
    "trim_zeros": lambda x: np.trim_zeros(x[0]),  # run eagerly: the whole call is eager
    "require": np.require,
    "asfortranarray_1d": lambda x: np.asfortranarray(x[0]),
}
COPIES = {
    "asarray_copy": lambda x: np.asarray(x, copy=True) if NUMPY2 else np.array(x, copy=True),
    "array": np.array,
    "array_ndmin_copy": lambda x: np.array(x[0], ndmin=2),
    "astype": lambda x: x.astype(np.float32, copy=False),
    "require_view_owndata": lambda x: np.require(x[1:], requirements=["O", "W"]),
    "require_cast": lambda x: np.require(x, np.float32),
}


@pytest.mark.parametrize("name", sorted(VIEWS) + sorted(COPIES))
def test_writes_through_views_and_copies_match_numpy(name):
    get = VIEWS.get(name) or COPIES[name]

    def write(x):
        view = get(x)
        view[(0,) * view.ndim] = -5.0
        return x * 1, view.shape
    x, y = np.arange(1.0, 13.0).reshape(4, 3), np.arange(1.0, 13.0).reshape(4, 3)
    got, expected = kiln.compile(write)(x), write(y)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1]
    np.testing.assert_array_equal(x, y)


def test_array_copy_false_and_ascontiguousarray_follow_numpy():
    def cast_without_copy(x):
        return np.array(x, dtype=np.float32, copy=False)
    if NUMPY2:
        with pytest.raises(ValueError, match="Unable to avoid copy"):
            kiln.compile(cast_without_copy)(np.arange(3.0))
    else:  # NumPy 1.x's copy=False: a copy if needed
        got = kiln.compile(cast_without_copy)(np.arange(3.0))
        assert got.dtype == np.float32 and list(got) == [0.0, 1.0, 2.0]

    def contiguous(x):
        return np.ascontiguousarray(x.sum()), np.ascontiguousarray(x, dtype=np.float32)
    for got, expected in zip(kiln.compile(contiguous)(np.arange(3.0)), contiguous(np.arange(3.0))):
        assert got.shape == expected.shape and got.dtype == expected.dtype


def _rotate(a, b, n):
    for _ in range(n):
        a, b = b, a
    return a, b


def _fibonacci(a, b, n):
    for _ in range(n):
        a, b = b, a + b
    return a, b


@pytest.mark.parametrize("function", [_rotate, _fibonacci])
def test_values_a_captured_loop_passes_between_variables_keep_their_kind(function):
    """`a, b = b, a + b` on 0-d arrays: a + b is a NumPy scalar, b a 0-d array; the body is
    traced once on placeholders, so a variable handed another's value unchanged takes that
    variable's kind from the iteration before (it came out a 0-d array after the loop)."""
    for n in (0, 1, 2, 3, 8):
        for first in (np.array(0), np.int64(0), 0):
            got = kiln.compile(function)(first, np.array(1), n)
            expected = function(first, np.array(1), n)
            assert [type(v) for v in got] == [type(v) for v in expected], n
            assert [int(v) for v in got] == [int(v) for v in expected]


def test_numpy_masked_arrays_of_traced_values():
    """np.ma reads any object's `_mask` attribute as its mask: the tracer's own attribute of
    that name (None) made np.ma.masked_less fail with AttributeError."""
    def masked(x):
        m = np.ma.masked_less(x, 0.5)
        return m.filled(0.0), float(m.sum()), np.ma.getmaskarray(m)
    x = np.linspace(0.0, 1.0, 5)
    for got, expected in zip(kiln.compile(masked)(x), masked(x)):
        np.testing.assert_array_equal(got, expected)


def test_isinstance_sees_numpy_classes():
    """isinstance() in user code answers as for NumPy's values: a branch on it (input checks,
    scalar-or-array helpers) must take NumPy's path, not the path of an unknown object."""
    def branches(x, lr):
        s = x.sum()
        picks = (isinstance(x, np.ndarray), isinstance(x[0], np.floating),
                 isinstance(s, float), isinstance(s, np.generic), np.isscalar(s),
                 np.isscalar(x), isinstance(x.astype(np.int32).max(), np.integer),
                 isinstance(lr, float), isinstance(x, (list, tuple)))
        scale = x / s if isinstance(x, np.ndarray) else 0.0
        return np.array(picks), scale * lr
    x = np.arange(1.0, 5.0)
    compiled = kiln.compile(branches, fullgraph=True)
    for lr in (0.5, 0.25, 0.125):   # a changing float is a traced Python number from then on
        same(compiled(x, lr), branches(x, lr))


def _type_checked(x):
    """x * 2 where the checks by type identity see NumPy's classes (in a helper too)."""
    names = {np.ndarray: "array", float: "float"}
    s = x.sum()
    ok = (type(x) is np.ndarray and type(x) == np.ndarray and x.__class__ is np.ndarray
          and type(s) is np.float64 and names[type(x)] == "array"
          and type(x).__name__ == "ndarray" and isinstance(type, type)
          and type("Made", (), {}).__name__ == "Made")
    return x * 2 if ok else x


def test_type_identity_sees_numpy_classes():
    """type(x) is np.ndarray, x.__class__ is np.ndarray, type(x.sum()) is np.float64 (and a
    dict keyed by classes): each took the branch NumPy does not take without an error; and
    np.ndarray.sum(x) was a TypeError naming no line."""
    def checks(x):  # and ndarray's methods called through the class (np.ndarray.sum(x))
        return (_type_checked(x) + (x * 3 if type(x) is np.ndarray else x)
                + np.ndarray.sum(x, axis=0) * np.ndarray.reshape(x, 2, 2).T[0, 1])
    x = np.arange(1.0, 5.0)
    same(kiln.compile(checks, fullgraph=True)(x), checks(x))


def test_python_floats_beside_float16_arrays_are_rounded_to_float16_first():
    """NumPy casts a Python float to the float16 array's dtype before the op (0.1 is
    0.0999755859375, 70000.0 overflows to inf); kernels compute float16 in float and used the
    unrounded scalar: a last-bit difference in a third of the elements, finite for inf."""
    x = (np.random.default_rng(5).random(512) * 4).astype(np.float16)

    def scaled(x):
        return x * 0.1, x + 1 / 3, 1e-5 - x, x / 0.3, x * 70000.0, np.full(3, 0.1, np.float16) * x[:3]
    with np.errstate(over="ignore"):
        same(kiln.compile(scaled, fullgraph=True)(x), scaled(x))


def test_setting_shape_reshapes_in_place_and_views_follow():
    """`y.shape = (2, 3)` (older NumPy code's in-place reshape) was an AttributeError of the
    tracer's; views taken before and after keep writing through to the same elements."""
    def reshaped(x):
        y = x * 1.0
        before = y[1:3]
        y.shape = (2, 3)
        y[1, 0] = -5.0
        before[0] = 42.0
        after = y[:, 1]
        after += 100
        y.shape = -1
        z = y.copy()
        every_other = z[::2]
        every_other.shape = (3, 1)
        every_other[0, 0] = 7.0
        return y, before, after, z, every_other
    compare(reshaped, np.arange(6.0))

    def of_an_argument(x):
        x.shape = (2, 3)
        return x
    with pytest.raises(TypeError, match=r"x.shape = \.\.\. at .*:\d+ .*argument"):
        kiln.compile(of_an_argument)(np.arange(6.0))


def test_real_and_imag_of_complex_arrays_are_views():
    """z.real[...] = 0, `w.imag *= 2` and `w.real = values` write z, as NumPy's views do (the
    parts were copies: the writes were lost without an error); a real array's imaginary part
    is read-only."""
    def parts(z):
        w = z.copy()
        w.imag *= 2
        w.real = [1, 2]
        r = w.real
        r += 10
        v = z.copy()
        np.real(v)[0] = -1
        np.imag(v)[1:] = 0
        return w, np.imag(w), v
    for dtype in (np.complex128, np.complex64):
        z = np.array([1 + 2j, 3 - 1j], dtype)
        for got, expected in zip(kiln.compile(parts)(z), parts(z)):
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)

    def imaginary_of_real(x):
        x.imag[...] = 1
    with pytest.raises(ValueError, match="read-only"):
        kiln.compile(imaginary_of_real)(np.arange(3.0))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float16, np.float32])
def test_python_numbers_promote_as_the_installed_numpy_does(dtype):
    """NumPy 1.x types a Python number beside an array by its value (int8 + 300 is int16,
    float32 * 1e40 float64), NumPy 2 by its type (NEP 50: OverflowError, float32 inf); kiln
    followed NumPy 2's rule on both."""
    x = np.arange(1, 5).astype(dtype)
    for number in (1, 300, -1, 70000, 2**40, 0.5, 1e5, 1e40, 1j):
        def function(x, number=number):
            return x + number, number * x, x < number, np.maximum(x, number), x / number
        try:
            with np.errstate(all="ignore"):
                expected = function(x)
        except OverflowError:
            with pytest.raises(OverflowError):
                kiln.compile(function)(x)
            continue
        with np.errstate(all="ignore"):
            got = kiln.compile(function)(x)
        for value, reference in zip(got, expected):
            assert value.dtype == reference.dtype, (number, value.dtype, reference.dtype)
            np.testing.assert_allclose(value, reference, rtol=1e-3)


def _bases(x):
    t = x * 2
    return (t.base is None, t[1:].base is t, t.T[::2].base is t, t.reshape(-1).base is t,
            t.sum().base is None, t[1:].copy().base is None, t[[0, 1]].base is None,
            x.base is None, x[1:].base is x, x[1:][::2].base is x)


def test_base_is_numpys_object():
    """x.base raised a TypeError: a result kiln made has none, a view of one is based on it
    (a view of a view too: NumPy collapses the chain); an argument's base, and a view's of an
    argument, depend on whether the caller's array owns its data (the call runs eagerly)."""
    compiled = kiln.compile(_bases)
    for x in (X, X[::2], np.asfortranarray(X)):
        assert compiled(x) == _bases(x)
    owner = np.arange(6.0)
    assert kiln.compile(lambda x: x[1:].base)(owner) is owner
    assert kiln.compile(lambda x: x.base)(owner[1:]) is owner
    np.testing.assert_array_equal(kiln.compile(lambda x: (x + 1)[::2].base)(owner), owner + 1)


def _memory(x):
    t = x + 1
    return (memoryview(t).nbytes, bytes(t.data), t.ctypes.data != 0, len(bytearray(t)),
            t.__array_interface__["shape"], type(t.__array_struct__).__name__,
            hasattr(t, "__array_interface__"), t.flags.owndata, np.asarray(t).sum())


def test_members_that_describe_memory_run_the_call_eagerly():
    """memoryview(x) (a TypeError naming TracedArray), x.__array_interface__ and
    x.__array_struct__ (AttributeErrors), x.ctypes and x.data (TypeErrors) on a traced array
    give NumPy's objects: the call runs eagerly, writes through them reach the caller's array."""
    x = np.arange(6.0)
    assert kiln.compile(_memory)(x) == _memory(x)

    def writes(x):
        memoryview(x)[0] = 5.0
        x.ctypes.data_as(__import__("ctypes").POINTER(__import__("ctypes").c_double))[1] = 7.0
        return x * 2

    y = np.zeros(3)
    np.testing.assert_array_equal(kiln.compile(writes)(y), [10.0, 14.0, 0.0])
    np.testing.assert_array_equal(y, [5.0, 7.0, 0.0])
    with pytest.raises(kiln.GraphBreak, match=r"test_trust_ndarray_semantics\.py:\d+"):
        kiln.compile(lambda x: memoryview(x).nbytes, fullgraph=True)(x)


def _contiguous_writes(x):
    y = np.ascontiguousarray(x.T)
    y[0, 0] = 100.0
    z = np.asfortranarray(x)
    z[0, 1] = 200.0
    t = x * 2
    return (y, z, y.flags.c_contiguous, z.flags.f_contiguous,
            np.asfortranarray(t).flags.f_contiguous, t.T.reshape(-1).base.shape,
            t.T.ravel().base is None)


def test_ascontiguousarray_copies_where_numpy_does():
    """np.ascontiguousarray(x.T) was x.T itself (its writes reached x, its flags said
    Fortran order), np.asfortranarray of a Fortran-ordered array a copy (its writes lost);
    a reshape that copies is a view of NumPy's C-order copy."""
    for make in (lambda: np.arange(6.0).reshape(2, 3),
                 lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3))):
        mine, theirs = make(), make()
        got, expected = kiln.compile(_contiguous_writes)(mine), _contiguous_writes(theirs)
        for value, reference in zip(got, expected):
            np.testing.assert_array_equal(value, reference)
        np.testing.assert_array_equal(mine, theirs)
    shifted = lambda x: np.lib.stride_tricks.as_strided(x * 2, (2, 2), (8, 8))[1:].base.shape
    assert kiln.compile(shifted)(np.arange(6.0)) == shifted(np.arange(6.0))


def _required(x, requirements):
    y = np.require(x, requirements=requirements)
    y[0, 0] = 100.0
    return y.flags.c_contiguous, y.flags.f_contiguous


@pytest.mark.parametrize("requirements", ["C", "F", ["O"], ["C", "O"], ["F", "W"]])
def test_require_copies_where_numpy_does(requirements):
    """np.require(x, "C") of a Fortran-ordered or strided argument was the argument itself
    (writes reached it), "F" always a copy, "O" of an argument the argument, where NumPy's
    answer is a copy or the caller's array as its layout and OWNDATA make it."""
    for make in (lambda: np.arange(6.0).reshape(2, 3), lambda: np.ones((2, 3)),
                 lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                 lambda: np.arange(12.0).reshape(2, 6)[:, ::2]):
        mine, theirs = make(), make()
        assert kiln.compile(_required)(mine, requirements) == _required(theirs, requirements)
        np.testing.assert_array_equal(mine, theirs)


# np.array's "copy only where needed": None on NumPy 2 (where False refuses to copy), False on 1.x
_COPY_IF_NEEDED = None if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else False

ORDERED = {
    "asarray_F": lambda x: np.asarray(x, order="F"),
    "array_C_of_T": lambda x: np.array(x.T, copy=_COPY_IF_NEEDED, order="C"),
    "asanyarray_F": lambda x: np.asanyarray(x, order="F"),
    "astype_F_no_copy": lambda x: x.astype(x.dtype, copy=False, order="F"),
    "astype_C_of_T_no_copy": lambda x: x.T.astype(x.dtype, copy=False, order="C"),
    "copy_F": lambda x: np.copy(x, order="F"),
    "method_copy_F": lambda x: x.copy(order="F"),
    "ascontiguous_strided": lambda x: np.ascontiguousarray(x[:, ::2]),
}


@pytest.mark.parametrize("name", sorted(ORDERED))
def test_an_order_asked_for_copies_or_views_as_numpy(name):
    """np.asarray(x, order="F") and np.array(..., order=) ignored the order (the array
    itself: writes through it reached the caller's where NumPy copies), astype(copy=False,
    order=) copied an array already in that order (writes lost), copies in Fortran order said
    C order in their flags."""
    def write(x):
        y = ORDERED[name](x)
        y[0, 0] = 100.0
        return y, y.flags.c_contiguous, y.flags.f_contiguous

    for make in (lambda: np.arange(6.0).reshape(2, 3),
                 lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
                 lambda: np.arange(12.0).reshape(2, 6)[:, ::2]):
        mine, theirs = make(), make()
        got, expected = kiln.compile(write)(mine), write(theirs)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1:] == expected[1:]
        np.testing.assert_array_equal(mine, theirs)
