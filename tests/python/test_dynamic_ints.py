"""Automatic dynamic ints (kiln._dynamic_numbers: DynamicNumbers.chosen and fewer): a Python int
argument or global whose value changes between calls (a step count, an offset, a loop's trip
count) is a 0-d int64 graph input from its first change, as Dynamo's automatic dynamic makes
it a SymInt; an int the trace needs the value of (a shape, an axis, a slice, a branch) stays
static, each value compiling once. And what a traced Python int must do as Python's would:
NumPy 2's range check against small integer dtypes, sequence repetition."""
import numpy as np
import pytest

import kiln

# NumPy 1.x promotes Python numbers by value (int8 array + 300 is int16, int32 * 2**40 int64),
# which kiln does not follow (README, Limits): numbers stay static there, and the values below
# stay inside the arrays' dtypes on NumPy 1.x.
DYNAMIC = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def fitting(values, dtype=np.int32):
    """`values` on NumPy 2; on NumPy 1.x those inside `dtype` (promoted by value otherwise)."""
    info = np.iinfo(dtype)
    return values if DYNAMIC else tuple(v for v in values if info.min <= v <= info.max)


def entries(function):
    return len(function._kiln_function.cache)


def same(got, want):
    """Equal values of the same Python/NumPy type and dtype."""
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            same(g, w)
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


def outcome(function, *args):
    """function(*args), or the type of the exception it raises."""
    try:
        return function(*args)
    except Exception as error:  # noqa: BLE001 - compared with kiln's
        return type(error)


def check_calls(function, calls):
    f = kiln.compile(function)
    for args in calls:
        want = outcome(function, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        if isinstance(want, type):
            with pytest.raises(want):
                f(*args)
        else:
            same(f(*args), want)
    return f


def offsets(x, n):
    return x * n + n // 3 - (n % 4), n * 2, n


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_a_changing_int_compiles_twice_then_is_an_input(dtype):
    values = fitting((1, 2, 5, -7, 0, 2**40, 3), np.int16)
    f = check_calls(offsets, [(np.arange(6, dtype=dtype), n) for n in values])
    assert entries(f) == (2 if DYNAMIC else len(values))


def scaled_by_steps(x):
    return x * STEPS


STEPS = 1


def test_a_global_int_that_changes_is_an_input():
    global STEPS
    f = kiln.compile(scaled_by_steps)
    x = np.arange(4.0)
    for STEPS in (1, 2, 3, 4):
        same(f(x), scaled_by_steps(x))
    assert entries(f) == (2 if DYNAMIC else 4)


def partial_sum(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] * i
    return s


def test_a_loop_count_that_changes_reuses_one_graph():
    x = np.arange(10.0)
    f = check_calls(partial_sum, [(x, n) for n in (3, 4, 7, 10, 1, 11)])
    assert entries(f) == (2 if DYNAMIC else 6)  # n = 11 is NumPy's IndexError in both


def nested_sum(x, n, m):
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += x[i] * x[j]
    return s


def test_nested_loops_over_dynamic_counts_keep_numpys_scalar_type():
    x = np.arange(10.0)
    f = check_calls(nested_sum, [(x, n, n + 1) for n in (3, 4, 5, 9)])
    assert entries(f) == (2 if DYNAMIC else 4)


def zeros_of(x, n):
    return np.zeros(n) + x[:n].sum()


def summed_along(x, axis):
    return x.reshape(2, 3).sum(axis=axis)


def repeated(x, n):
    return x[:2] + np.array([1.0] * n)[:2], len((1,) * n) + x


@pytest.mark.parametrize("function, values", [(zeros_of, (1, 2, 3, 4)),
                                              (summed_along, (0, 1, 0, -1)),
                                              (repeated, (2, 3, 4, 5))])
def test_an_int_whose_value_the_trace_needs_stays_static(function, values):
    f = check_calls(function, [(np.arange(6.0), n) for n in values])
    assert entries(f) == len(set(values))


def branches(x, n):
    return x * 2 if n > 2 else x - n  # a select of both sides (kiln.compile's conditionals)


def test_a_conditional_expression_on_a_dynamic_int_is_one_graph():
    f = check_calls(branches, [(np.arange(6.0), n) for n in (1, 2, 3, 4, -5)])
    assert entries(f) == (2 if DYNAMIC else 5)


def scaled_and_sized(x, n, lr):
    return np.ones(n) * lr + x[:n]


def test_a_static_int_leaves_a_float_beside_it_dynamic():
    f = check_calls(scaled_and_sized, [(np.arange(6.0), n, 0.5 * n) for n in (1, 2, 3, 4)] +
                    [(np.arange(6.0), 4, 0.1), (np.arange(6.0), 4, 0.7)])
    # n = 1 (static), n = 2 (both tried dynamic, n kept static), 3 and 4: one each; later
    # values of lr with n = 4 reuse n = 4's entry (lr dynamic since n = 2)
    assert entries(f) == (4 if DYNAMIC else 6)


def shifted(x, n):
    return x + n


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32])
def test_a_dynamic_int_is_range_checked_against_small_integer_dtypes(dtype):
    """NumPy 2 raises OverflowError for int8 array + 300; a dynamic int is checked when the
    graph runs (NumPy 1.x gives int16: compared the same way)."""
    x = np.arange(4, dtype=dtype)
    values = fitting((1, 2, 100, 127, 128, 255, 256, -1, -129, 5, 70000), np.dtype(dtype))
    check_calls(shifted, [(x, n) for n in values])


def counted_up(x):
    for i in range(200):
        x = x + i
    return x


def stored_counter(x):
    for i in range(200):
        x[i % 3] = i
    return x


def shifted_counter(x):
    for i in range(5):
        x = x + (i - 3)
    return x


@pytest.mark.parametrize("function, dtype", [(counted_up, np.int8), (counted_up, np.int16),
                                             (stored_counter, np.int8),
                                             (stored_counter, np.uint8),
                                             (shifted_counter, np.uint8),
                                             (shifted_counter, np.int8)])
def test_a_loop_counter_is_range_checked_against_small_integer_dtypes(function, dtype):
    """A captured loop's counter is a traced Python int too: NumPy 2 raises once it leaves the
    dtype's range (int8 + 128), where kiln wrapped silently before."""
    if DYNAMIC:  # (NumPy 1.x promotes the sum to int16 instead: README, Limits)
        check_calls(function, [(np.zeros(3, dtype),)])
    else:
        check_calls(function, [(np.zeros(3, np.int64),)])


def test_bools_and_ints_past_int64_stay_static():
    values = (True, False) + ((2**70, 2**71) if DYNAMIC else ())  # NumPy 1.x: object arrays
    f = check_calls(shifted, [(np.arange(3.0), v) for v in values])
    assert entries(f) == len(values)


def test_dynamic_false_keeps_ints_static():
    f = kiln.compile(offsets, dynamic=False)
    for n in (1, 2, 3):
        same(f(np.arange(3.0), n), offsets(np.arange(3.0), n))
    assert entries(f) == 3


def repeats_by_counter(x):
    for i in range(4):
        x = x + len([0] * i) + sum((1,) * i)
    return x


def test_a_loop_counter_repeats_sequences_as_an_int():
    """`[0] * i` is Python's repetition, not NumPy's [0] * array(i) (a one-element array)."""
    check_calls(repeats_by_counter, [(np.zeros(2),)])


def announced_zeros(x, n, lr):
    print("shape", x.shape)  # a Python side effect of the trace, before n's value is needed
    return np.zeros(n) * lr + x[:n]


def test_a_trace_retried_with_an_int_static_prints_once(capsys):
    f = kiln.compile(announced_zeros)
    for n, lr in ((1, 0.5), (2, 0.25), (3, 0.75)):
        same(f(np.arange(6.0), n, lr), announced_zeros(np.arange(6.0), n, lr))
        # each new n traces once (n static), and shows the print once, as the eager call
        assert capsys.readouterr().out == "shape (6,)\n" * 2
