"""Answers NumPy gives as errors, never as wrong numbers: out-of-bounds indices (IndexError,
the array left untouched), float -> integer casts (x86's results, as NumPy), integers to
negative powers (ValueError), float scalars stored into integer arrays (OverflowError)."""
import warnings

import numpy as np
import pytest

import kiln


def outcome(function, *arguments):
    """(result or exception class, the arguments' contents after the call)."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arguments]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = function(*copies)
    except Exception as error:  # noqa: BLE001 - the class is compared
        result = type(error)
    return result, copies


def assert_same(function, *arguments):
    compiled, compiled_arguments = outcome(kiln.compile(function), *arguments)
    eager, eager_arguments = outcome(function, *arguments)
    if isinstance(eager, type):
        assert compiled is eager, (compiled, eager)
    else:
        np.testing.assert_array_equal(compiled, eager)
    for mine, theirs in zip(compiled_arguments, eager_arguments):
        np.testing.assert_array_equal(mine, theirs)  # a failed call writes nothing


def read(x, i):
    return x[i]


def write(x, i):
    x[i] = 0
    return x.sum()


def add_at(x, i):
    x[i] += 1.5
    return x


def read_two(x, i, j):
    return x[i, j] * 2


def write_two(x, i, j):
    x[i, j] = -1
    return x


def read_middle(x, i):
    return x[:, i]


@pytest.mark.parametrize("function", [read, write, add_at])
@pytest.mark.parametrize("index", [[0, 5], [-4], [1, 7], [3], [-3, 2, -1], [2, 2, 0]])
def test_one_index_array(function, index):
    assert_same(function, np.arange(3.0), np.array(index))


@pytest.mark.parametrize("seed", range(20))
def test_random_indices_in_and_out_of_bounds(seed):
    random = np.random.default_rng(seed)
    shape = tuple(int(s) for s in random.integers(1, 6, 2))
    x = random.standard_normal(shape)
    spread = int(random.integers(1, 3))
    i = random.integers(-shape[0] - spread, shape[0] + spread, int(random.integers(1, 5)))
    j = random.integers(-shape[1] - spread, shape[1] + spread, i.shape)
    for function, arguments in [(read_two, (x, i, j)), (write_two, (x, i, j)),
                                (read_middle, (x, j)), (read, (x, i))]:
        assert_same(function, *arguments)


def test_the_error_names_numpys_words_and_the_users_line():
    with pytest.raises(IndexError, match=r"test_trust_checks.py:\d+: index 5 is out of bounds "
                                         r"for axis 0 with size 3"):
        kiln.compile(lambda x, i: x[i])(np.arange(3.0), np.array([0, 5]))


def test_a_failed_write_leaves_the_input_untouched():
    x = np.arange(3.0)
    with pytest.raises(IndexError):
        kiln.compile(write)(x, np.array([1, 7]))
    np.testing.assert_array_equal(x, np.arange(3.0))


SPECIAL = [np.nan, np.inf, -np.inf, 0.5, -0.5, 300.7, -300.7, 2.0**31, -2.0**31 - 1,
           2.0**32 + 5, 2.0**63, -2.0**63, 2.0**64, 1e20, -1.5, 70000.5, -70000.5, 3e9,
           2.0**63 + 2**12, 255.9, -129.5]


@pytest.mark.parametrize("source", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("target", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                    np.uint32, np.uint64, np.bool_])
def test_float_to_integer_casts_match_numpy(source, target):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        values = np.array(SPECIAL, source)
        expected = values.astype(target)
    compiled = kiln.compile(lambda x: x.astype(target))(values)
    np.testing.assert_array_equal(compiled, expected)
    # Fused inside an expression too (the conversion vectorised in a kernel).
    fused = kiln.compile(lambda x: (x * 1).astype(target) + np.zeros((), target))(values)
    np.testing.assert_array_equal(fused, expected)


@pytest.mark.parametrize("function, arguments", [
    (lambda x: x ** -1, (np.arange(1, 4),)),
    (lambda x: np.power(x, -2), (np.arange(1, 4, dtype=np.int32),)),
    (lambda x, e: x ** e, (np.arange(1, 4), np.array([1, -2, 3]))),
    (lambda x, e: x ** e, (np.arange(1, 4), np.array([1, 2, 3]))),
    (lambda x, e: x ** e, (np.arange(1, 4, dtype=np.uint8), np.array([1, 2, 3], np.uint8))),
    (lambda x: x ** -1.0, (np.arange(1, 4),)),
    (lambda x: x ** 2, (np.arange(-3, 3),)),
])
def test_integer_powers_match_numpy(function, arguments):
    assert_same(function, *arguments)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("value", [1e300, np.inf, -np.inf, np.nan, 3.7, -1.0, 300.0, 1e19,
                                   np.float64(1e300), np.float32(2.5)])
def test_float_scalars_stored_into_integer_arrays_match_numpy(dtype, value):
    def store(a):
        a[0] = value
        return a

    def fill(a):
        a[1:] = value
        return a

    for function in (store, fill):
        assert_same(function, np.zeros(3, dtype))


def test_arrays_stored_into_integer_arrays_cast_like_numpy():
    def store(a, values):
        a[:2] = values
        return a
    assert_same(store, np.zeros(3, np.int64), np.array([1e300, 2.0]))
    assert_same(lambda a: np.full(3, 1e300, dtype=np.int64) + a, np.zeros(3, np.int64))


def index_on_the_then_side(x, i):
    if x[1] < 0:
        v = x[i[0]]
    else:
        v = x[0]
    return v


def index_on_the_else_side(x, i):  # its check never fired: kiln returned a clamped x[5]
    if x[1] > 0:
        v = x[0]
    else:
        v = x[i[0]]
    return v


@pytest.mark.parametrize("function", [index_on_the_then_side, index_on_the_else_side])
@pytest.mark.parametrize("second", [1.0, -1.0])
def test_a_selects_sides_check_their_indices_where_taken(function, second):
    x, i = np.array([1.0, second]), np.array([5])
    assert kiln.explain(function)(x, np.array([0])).graph_break_count == 0
    assert_same(function, x, i)
    assert_same(function, x, np.array([1]))
