"""Guards and recompiles: what reuses a cached graph, what recompiles and how it is reported."""
import warnings

import numpy as np
import pytest

import kiln


def entries(function):
    return len(function._kiln_function.cache)


def test_hit_does_not_retrace(standin):
    f = kiln.compile(lambda x: x + 1.0)
    x = np.ones(3)
    f(x)
    traces = standin.StandIn.traces
    for _ in range(3):
        np.testing.assert_array_equal(f(np.full(3, 2.0)), [3.0, 3.0, 3.0])
    assert standin.StandIn.traces == traces and entries(f) == 1


def test_shape_change_recompiles_and_logs_why(standin, capfd):
    kiln.set_logs("recompiles")
    f = kiln.compile(lambda x: x * 2.0)
    f(np.ones(3))
    np.testing.assert_array_equal(f(np.ones(4)), np.full(4, 2.0))
    assert entries(f) == 2
    assert "shape of argument 0 changed from (3,) to (4,)" in capfd.readouterr().err


@pytest.mark.parametrize("second, reason", [
    (np.ones(3, dtype=np.float32), "dtype of argument 0 changed from float64 to float32"),
    (np.ones((3, 1)), "shape of argument 0 changed from (3,) to (3,1)"),
    (np.ones(6)[::2], "layout of argument 0 changed from contiguous"),
    ([1.0, 2.0, 3.0], "type of argument 0 changed from numpy.ndarray to list"),
])
def test_each_guard_kind_reports_its_reason(standin, capfd, second, reason):
    kiln.set_logs("recompiles")
    f = kiln.compile(lambda x: x + 0.5)
    f(np.ones(3))
    capfd.readouterr()
    try:
        f(second)
    except Exception:
        pass  # a list argument is static: x + 0.5 is then plain Python and may fail
    assert reason in capfd.readouterr().err


def test_static_and_keyword_guards(standin, capfd):
    kiln.set_logs("recompiles")

    @kiln.compile
    def f(x, *, power=2, mode="a"):
        return x * float(power) if mode == "a" else x - float(power)

    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x), x * 2)
    np.testing.assert_array_equal(f(x, power=3), x * 3)
    np.testing.assert_array_equal(f(x, power=3, mode="b"), x - 3)
    err = capfd.readouterr().err
    assert "number or names of the arguments changed" in err
    np.testing.assert_array_equal(f(x, power=3), x * 3)
    assert entries(f) == 3


def test_a_new_default_float_setting_traces_again():
    # The trace reads kiln.config.numpy_default_float: a cached graph kept the old dtype.
    f = kiln.compile(lambda x: np.zeros(3) + x)
    x = np.ones(3, np.float32)
    with kiln.config.patch(numpy_default_float="float32"):
        assert f(x).dtype == np.float32
    assert f(x).dtype == np.float64 and entries(f) == 2
    with kiln.config.patch(numpy_default_float="float32"):
        assert f(x).dtype == np.float32 and entries(f) == 2


def test_strided_layouts_get_their_own_entry_and_correct_results(standin):
    f = kiln.compile(lambda x: x * 10.0)
    base = np.arange(12.0).reshape(3, 4)
    for view in (base, base.T, base[:, ::2], base[::-1]):
        np.testing.assert_array_equal(f(view), view * 10)
    np.testing.assert_array_equal(f(base.copy().T), base.T * 10)  # same strides as base.T
    assert entries(f) == 4


def test_recompile_limit_then_eager_with_one_warning(standin):
    f = kiln.compile(lambda x: x + 1.0)
    with kiln.config.patch(recompile_limit=2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(1, 7):
                np.testing.assert_array_equal(f(np.zeros(n)), np.ones(n))
        assert entries(f) == 3  # the first compile and two recompiles
        limit_warnings = [w for w in caught if "recompile_limit" in str(w.message)]
        assert len(limit_warnings) == 1
        np.testing.assert_array_equal(f(np.zeros(2)), np.ones(2))  # cached entries still hit


def test_dynamic_true_shape_changes_do_not_count_as_recompiles(standin):
    f = kiln.compile(lambda x: x + 1.0, dynamic=True)
    with kiln.config.patch(recompile_limit=2):
        # (recorded, not made errors: a filter turning RuntimeWarning into an error makes
        # every call run as NumPy, which raises on floating-point errors kiln does not check)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(1, 7):
                np.testing.assert_array_equal(f(np.zeros(n)), np.ones(n))
            assert entries(f) == 6
            assert not [w for w in caught if "recompile_limit" in str(w.message)]
            for dtype in (np.float32, np.int32):  # a dtype change still counts
                f(np.zeros(2, dtype))
            with pytest.warns(RuntimeWarning, match="recompile_limit"):
                f(np.zeros(2, np.int8))


def test_guards_channel_prints_the_guards(standin, capfd):
    kiln.set_logs("guards")
    f = kiln.compile(lambda x, n: x * float(n))
    f(np.ones((2, 3), dtype=np.float32), 4)
    err = capfd.readouterr().err
    assert "argument 0: ndarray float32 (2,3) contiguous" in err
    assert "argument 1 == 4" in err


def test_aliased_and_unsupported_arguments_fall_back_correctly(standin):
    f = kiln.compile(lambda x, y: x + y)
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, x), 2 * x)
    complex_input = np.arange(3) + 1j
    np.testing.assert_array_equal(f(complex_input, complex_input), 2 * complex_input)
    swapped = np.arange(3.0).astype(">f8")
    np.testing.assert_array_equal(f(swapped, swapped), 2 * swapped)
    # float128 has a float kind and a complex128's size: it passed for an array kiln reads
    long_double = np.arange(3, dtype=np.longdouble)
    result = f(long_double, long_double)
    assert result.dtype == long_double.dtype
    np.testing.assert_array_equal(result, 2 * long_double)


SCALES = __import__("collections").deque([1.0, 2.0])
WEIGHTS = __import__("array").array("d", [1.0, 2.0])


def test_deques_and_python_arrays_changed_in_place_are_seen():
    """A deque or an array.array the function reads (a global, an argument) is guarded by a
    snapshot of its items (python/guard_states.h), as lists are: changed in place, the call
    sees the new values (it returned the first call's)."""
    from array import array
    from collections import deque
    scaled = kiln.compile(lambda x: x * SCALES[0] + WEIGHTS[1])
    weighted = kiln.compile(lambda x, ws: x * ws[-1])
    x = np.ones(3)
    for value in (1.0, 3.0, -0.5):
        SCALES[0], WEIGHTS[1] = value, 2 * value
        np.testing.assert_array_equal(scaled(x), x * value + 2 * value)
    for kind in (lambda items: deque(items), lambda items: array("d", items)):
        ws = kind([1.0, 2.0])
        for value in (2.0, 5.0):
            ws[-1] = value
            np.testing.assert_array_equal(weighted(x, ws), x * value)
        ws.append(7.0)  # a new length, as a list's
        np.testing.assert_array_equal(weighted(x, ws), x * 7.0)


BIG_SET = set(range(300))
BIG_TABLE = __import__("collections").OrderedDict((k, 1.0) for k in range(300))


def _innermost_list(nested):
    while isinstance(nested[0], list):
        nested = nested[0]
    return nested


def _innermost(nested):
    return _innermost_list(nested)[0]


def test_containers_too_large_to_check_run_eagerly(capfd):
    """A mutable container the guard's snapshot cannot copy (more than 256 items, or nested
    more than 16 levels: python/guard_states.h) is equal to itself whatever changed in it:
    such calls run eagerly, and KILN_LOGS=graph_breaks says why (they returned the first
    call's values)."""
    kiln.set_logs("graph_breaks")
    counted = kiln.compile(lambda x: x * len(BIG_SET))
    looked_up = kiln.compile(lambda x: x * BIG_TABLE[5])
    deep = [1.0]
    for _ in range(16):
        deep = [deep]  # 17 levels
    nested = kiln.compile(lambda x, holder: x * _innermost(holder.values))
    holder = type("Holder", (), {})()
    holder.values = deep
    x = np.ones(2)
    for value in (1.0, 4.0):
        BIG_SET.add(1000 + value)
        BIG_TABLE[5] = value
        _innermost_list(deep)[0] = value
        np.testing.assert_array_equal(counted(x), x * len(BIG_SET))
        np.testing.assert_array_equal(looked_up(x), x * value)
        np.testing.assert_array_equal(nested(x, holder), x * value)
    assert "too large to check at each call" in capfd.readouterr().err
    small = kiln.compile(lambda x: x * len(SCALES))  # a small one still compiles
    assert kiln.explain(small)(x).graph_break_count == 0
