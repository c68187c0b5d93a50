"""Automatic dynamic numbers (kiln._dynamic_numbers, the guard's Number items in
src/python/guard_items.h): a Python float or int whose value changes between calls (a learning
rate, a tolerance, a step count) becomes a 0-d graph input after its first change, so later
values reuse one graph; a function that needs the number's value (a shape, an axis, a graph
break) keeps it static. Dynamic ints: test_dynamic_ints.py."""
import math

import numpy as np
import pytest

import kiln

# NumPy 1.x promotes Python floats by value (float32 array * 1e300 is float64), so there
# floats stay static: each value compiles once, as before.
DYNAMIC = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def entries(function):
    return len(function._kiln_function.cache)


def sgd_step(w, g, lr):
    return w - lr * g


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_a_changing_float_compiles_twice_then_is_an_input(dtype, capfd):
    kiln.set_logs("recompiles")
    f = kiln.compile(sgd_step)
    w = np.arange(6, dtype=dtype)
    g = np.ones(6, dtype)
    # (1e300 makes float32 arrays float64 on NumPy 1.x, by value: a README difference)
    values = (0.1, 0.2, 0.05, 1e-3, 0.2, float("inf"), -0.0) + ((1e300,) if DYNAMIC else ())
    for lr in values:
        expected = sgd_step(w, g, lr)
        got = f(w, g, lr)
        assert got.dtype == expected.dtype  # weak, as NumPy treats Python floats
        np.testing.assert_array_equal(got, expected)
    assert entries(f) == (2 if DYNAMIC else len(set(values)))
    assert ("graph inputs from now on" in capfd.readouterr().err) == DYNAMIC


SCALE = 0.5


def scaled(x):
    return x * SCALE


def test_a_global_float_that_changes_is_an_input():
    global SCALE
    f = kiln.compile(scaled)
    x = np.arange(4.0)
    for SCALE in (0.5, 1.5, 2.5, -3.0):
        np.testing.assert_array_equal(f(x), x * SCALE)
    assert entries(f) == (2 if DYNAMIC else 4)


def shaped(x, length):
    return x[:int(length)] * length  # the float's value is needed: a shape


def through_math(x, v):
    return x * math.sqrt(v)  # traced as NumPy's sqrt, a Python float: no value needed


def test_a_float_whose_value_is_needed_stays_static():
    f = kiln.compile(shaped)
    x = np.arange(8.0)
    values = (2.0, 3.0, 5.0, 3.0)
    for v in values:
        np.testing.assert_array_equal(f(x, v), shaped(x, v))
    assert entries(f) == 3  # one static entry per distinct value, as before


def test_a_math_function_of_a_changing_float_keeps_it_an_input():
    # math.sqrt(v) asked float() of the dynamic v: a graph break, so v stayed static
    f = kiln.compile(through_math)
    x = np.arange(8.0)
    for v in (2.0, 3.0, 5.0, 3.0, 7.0):
        np.testing.assert_array_equal(f(x, v), through_math(x, v))
    assert entries(f) == (2 if DYNAMIC else 4)
    with pytest.raises(ValueError, match="math domain error"):
        f(x, -1.0)


def test_dynamic_false_keeps_numbers_static():
    w, g = np.arange(3.0), np.ones(3)
    for values in ((0.1, 0.2, 0.3), (1, 2, 3)):
        f = kiln.compile(sgd_step, dynamic=False)
        for lr in values:
            np.testing.assert_array_equal(f(w, g, lr), sgd_step(w, g, lr))
        assert entries(f) == 3


def test_a_dynamic_float_that_becomes_an_int_recompiles():
    f = kiln.compile(sgd_step)
    w = np.arange(3, dtype=np.int8)
    g = np.ones(3, np.int8)
    for lr in (0.5, 0.25, 2, 0.75):  # int 2: int8 arithmetic, as NumPy's
        expected = sgd_step(w, g, lr)
        got = f(w, g, lr)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_the_guard_names_dynamic_floats(capfd):
    kiln.set_logs("guards")
    f = kiln.compile(sgd_step)
    w, g = np.ones(2), np.ones(2)
    f(w, g, 0.1)
    f(w, g, 0.2)
    assert ("argument 2: float (dynamic)" in capfd.readouterr().err) == DYNAMIC


def test_numpy_functions_of_a_dynamic_float_are_numpy_scalars():
    """np.sqrt(lr) is a strong np.float64 (float32 * it is float64), lr * 2 a Python float:
    results keep Python's types."""
    def step(w, lr):
        return w * np.sqrt(lr), lr * 2, -lr

    f = kiln.compile(step)
    w = np.arange(3, dtype=np.float32)
    for lr in (0.25, 4.0, 9.0):
        got, want = f(w, lr), step(w, lr)
        assert got[0].dtype == np.float64  # NEP 50 (README, Differences 10: on NumPy 1.x too)
        np.testing.assert_array_equal(got[0], want[0])
        assert [type(v) for v in got[1:]] == [float, float] and got[1:] == want[1:]


def uses_float_methods(x, v):
    return x * round(v) if v.is_integer() else x - v


def prints_then_scales(x, v):
    print(f"{float(x.sum()):.1f}")  # a graph break: v stays static
    return x * v


def stores(x, v):
    x[0] = v  # NumPy's int(v), range-checked: 300.5 into uint8 raises
    return x


@pytest.mark.parametrize("function", [uses_float_methods, prints_then_scales])
def test_a_float_the_trace_cannot_treat_as_an_array_stays_static(function, capsys):
    f = kiln.compile(function)
    x = np.arange(4.0)
    for v in (1.5, 2.0, 3.0, 2.5):
        want = function(x, v)
        want_printed = capsys.readouterr().out
        np.testing.assert_array_equal(f(x, v), want)
        assert capsys.readouterr().out == want_printed  # once, not again by a retried trace


def test_a_dynamic_float_stored_into_an_integer_array_is_range_checked():
    f = kiln.compile(stores)
    for v in (1.5, 2.7, 4.0):
        x = np.arange(3, dtype=np.uint8)
        np.testing.assert_array_equal(f(x.copy(), v), stores(x, v))
    try:  # NumPy 2 raises; 1.x wraps
        want = stores(np.arange(3, dtype=np.uint8), 300.5)
    except OverflowError:
        with pytest.raises(OverflowError, match="out of bounds for uint8"):
            f(np.arange(3, dtype=np.uint8), 300.5)
    else:
        np.testing.assert_array_equal(f(np.arange(3, dtype=np.uint8), 300.5), want)


@pytest.mark.parametrize("pairs", [[(7, 2), (-7, 2), (9, -4)], [(7.5, 2.0), (-7.5, 2.0), (-0.0, 3.0)],
                                   [(7, 2.0), (-7, 2.5), (9, -4.0)]])
def test_divmod_of_dynamic_numbers_gives_python_numbers(pairs):
    # divmod of numbers that became graph inputs went through np.divmod: (np.int64(-4), 1)
    # where Python gives (-4, 1)
    fn = lambda n, m: (divmod(n, m), divmod(n, 3), divmod(10, m))  # noqa: E731
    compiled = kiln.compile(fn)
    for n, m in pairs:
        expected, got = fn(n, m), compiled(n, m)
        for e_pair, g_pair in zip(expected, got):
            for e, g in zip(e_pair, g_pair):
                assert type(g) is type(e) and (g == e or (e != e and g != g))
                assert math.copysign(1, g) == math.copysign(1, e)
