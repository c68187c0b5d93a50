"""The type of a value a captured loop carries, after the loop, is NumPy's: a NumPy scalar the
body rebinds (`s = np.float32(0); s += x[i] * 0.5`) stays a NumPy scalar of its dtype, a Python
bool flag that only Python bools set stays a Python bool (`found = False; if ...: found = True`),
and one the body makes a NumPy bool (`neg = neg or x[i] < 0`) is np.bool_; in for and while
loops, loops of a count known only when they run, nested loops, through selects and breaks.
They came back as 0-d arrays (kiln._loop_types.carried_flags). Python's operators on such
bools (and on comparisons of Python numbers) are Python's: True + True is 2, not NumPy's True."""
import numpy as np
import pytest

import kiln


def accumulate_float32(x):
    s = np.float32(0)
    for i in range(len(x)):
        s += x[i] * np.float32(0.5)
    return s


def accumulate_float16(x):
    s = np.float16(0)
    for v in x:
        s += v
    return s


def accumulate_complex64(x):
    s = np.complex64(0)
    for v in x:
        s += v * 1j
    return s


def count_int64(x):
    s = np.int64(0)
    for i in range(len(x)):
        s += np.int64(x[i] > 0)
    return s


def count_uint8(x):
    s = np.uint8(0)
    for i in range(len(x)):
        s = s + (x[i] > 0).astype(np.uint8)
    return s


def dynamic_count(x, n):
    s = np.float32(0)
    for i in range(n):
        s += x[i]
    return s


def nested(x):
    s = np.float32(0)
    for i in range(len(x)):
        for j in range(len(x)):
            s += x[i] * x[j]
    return s


def inner_scalar(x):
    out = np.zeros(len(x), np.float32)
    for i in range(len(x)):
        s = np.float32(0)
        for j in range(len(x)):
            s += x[j] * x[i]
        out[i] = s
    return out, s


def through_a_select(x):
    s = np.float32(0)
    for i in range(len(x)):
        if x[i] > 1:
            s += x[i]
        else:
            s -= x[i] * x[i]
    return s


def through_a_choice(x):
    s = np.float32(0)
    for i in range(len(x)):
        s = s + x[i] if x[i] > 0 else s - x[i]
    return s


def with_a_break(x):
    s = np.float32(0)
    for i in range(len(x)):
        s += x[i]
        if s > 2:
            break
    return s


def while_count(x, n):
    s = np.float32(1)
    k = 0
    while k < n:
        s = s * np.float32(1.5)
        k += 1
    return s


def any_negative(x):  # False or np.True_: NumPy's bool from the first iteration on
    neg = False
    for i in range(len(x)):
        neg = neg or x[i] < 0
    return neg


def all_above(x):
    ok = True
    for i in range(len(x)):
        ok = ok and x[i] > -10
    return ok


def or_flags(x):
    f = np.False_
    for i in range(len(x)):
        f = f | (x[i] < 0)
    return f


def found_negative(x):  # Python's True or False: the body sets Python bools only
    found = False
    for i in range(len(x)):
        if x[i] < 0:
            found = True
    return found


def odd_negatives(x):
    odd = False
    for i in range(len(x)):
        if x[i] < 0:
            odd = not odd
    return odd


def converted_flags(x):
    ok = True
    for i in range(len(x)):
        ok = ok and bool(x[i] > -10)
    return ok


def positive_sum(x):  # no loop: a branch setting a Python bool
    f = False
    if x.sum() > 0:
        f = True
    return f


def same(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            same(g, w)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    else:
        assert got == want


CASES = [accumulate_float32, accumulate_float16, accumulate_complex64, count_int64, count_uint8,
         nested, inner_scalar, through_a_select, through_a_choice, with_a_break, any_negative,
         all_above, or_flags, found_negative, odd_negatives, converted_flags, positive_sum]


@pytest.mark.parametrize("function", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_carried_scalars_keep_numpys_types(function, dtype):
    compiled = kiln.compile(function)
    for x in (np.array([1.0, -2.0, 3.0, 0.5, 1.5, -1.0], dtype),
              np.array([1.0, 2.0, 3.0, 0.5, 1.5, 1.0], dtype)):
        same(compiled(x), function(x))
    report = kiln.explain(function)(x)
    assert report.loops and all(loop.kind in ("loop", "select") for loop in report.loops), \
        str(report)


@pytest.mark.parametrize("function", [dynamic_count, while_count])
def test_carried_scalars_of_loops_of_a_count_known_when_they_run(function):
    compiled = kiln.compile(function)
    x = np.arange(8, dtype=np.float32) / 4
    for n in (5, 0, 3):
        same(compiled(x, n), function(x, n))


def counted_by_bools(x):
    c = 0
    for i in range(len(x)):
        c += bool(x[i] > 0)
    return c


def counted_by_comparisons(x):
    n = 0
    for i in range(len(x)):
        n = n + (i < 3)
    return n, n > 2, 3 < n


def flag_arithmetic(x):
    f = False
    for i in range(len(x)):
        if x[i] < 0:
            f = True
    return (f + f, -f, f * 2.5, f / True, f & True, f | False, f ^ f, f == 1,
            np.int8(3) + f, np.float32(1) * f, x + f)


@pytest.mark.parametrize("function", [counted_by_bools, counted_by_comparisons,
                                      flag_arithmetic])
def test_python_bools_in_pythons_arithmetic(function):
    compiled = kiln.compile(function)
    for x in (np.array([1.0, -2.0, 3.0, 0.5]), np.array([1.0, 2.0, 3.0, 0.5])):
        same(compiled(x), function(x))
    assert all(loop.kind in ("loop", "select") for loop in kiln.explain(function)(x).loops)
