"""`del name`, the walrus `:=` and try/finally in loop bodies (kiln._loop_refusals,
kiln._loop_jumps): captured as one loop node, with NumPy's results, Python's numbers and types,
and Python's errors (a name deleted by the last iteration is unbound after the loop); a `del` of
an item and a try/except still leave the loop as written. Such loops were unrolled ("it contains
a `delete` statement", "a lambda or `:=` inside", "it contains a `try` statement")."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs import _assert_same


def check_calls(function, argument_sets):
    """Each call of kiln.compile(function) agrees with the function's: its results, or the
    type of the error it raises."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        try:
            expected = function(*copy.deepcopy(arguments))
        except Exception as error:  # noqa: BLE001 (the same kind of error, compiled)
            with pytest.raises(type(error)):
                compiled(*copy.deepcopy(arguments))
            continue
        got = compiled(*copy.deepcopy(arguments))
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(expected)
        for n, (a, b) in enumerate(zip(got, expected)):
            _assert_same(a, b, f"result {n} of {function.__name__}{arguments[1:]}")


def loop_kinds(function, *arguments):
    explained = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in explained.loops]


def assert_captured(function, *arguments):
    kinds = loop_kinds(function, *arguments)
    assert kinds.count("loop") == 1 and "unrolled" not in kinds, kinds


# ---- del ----

def del_temporary(x, n):
    acc = np.zeros_like(x)
    for i in range(n):
        scaled = x * (i + 1)
        acc += scaled
        del scaled
    return acc


def del_then_read(x, n):
    step = x * 0
    for i in range(n):
        step = x * i
        x = x + step
        del step
    return x, step


def del_in_a_branch(x):
    last = x[0]
    for i in range(len(x)):
        if x[i] > 0:
            del last
        else:
            last = x[i]
    return last


def del_an_item(x, n):
    items = [0.0] * (n + 1)
    for i in range(n):
        items[i] = x[i % len(x)]
        del items[0]
    return np.array(items).sum()


def test_a_deleted_temporary():
    x = np.arange(1.0, 5.0)
    check_calls(del_temporary, [(x, n) for n in (0, 1, 2, 50)])
    assert_captured(del_temporary, x, 50)


def test_a_name_the_last_iteration_deleted_is_unbound_after_the_loop():
    x = np.arange(3.0)
    check_calls(del_then_read, [(x, n) for n in (0, 1, 2, 9)])
    with pytest.raises(UnboundLocalError):
        kiln.compile(del_then_read)(x, 9)


def test_a_del_in_a_branch_or_of_an_item_runs_as_python():
    x = np.array([-1.0, 2.0, -3.0, -4.0])
    check_calls(del_in_a_branch, [(x,), (-x,), (np.abs(x),)])
    check_calls(del_an_item, [(x, n) for n in (0, 1, 5)])


def read_before_bound(x):
    for i in range(len(x)):
        total = total + x[i]  # noqa: F821 (unbound: Python's UnboundLocalError)
    return x


def test_a_local_unbound_in_a_body_raises_pythons_error():
    for function, arguments in ((read_before_bound, (np.arange(3.0),)),
                                (del_in_a_branch, (np.array([1.0, 2.0]),))):
        with pytest.raises(UnboundLocalError):
            kiln.compile(function)(*arguments)


def test_an_enclosing_functions_unbound_variable_is_pythons_name_error():
    def outer():
        def added(x):
            for i in range(len(x)):
                x = x + offset
            return x
        try:
            kiln.compile(added)(np.arange(3.0))
        except NameError as error:
            return error
        finally:
            offset = 1.0  # noqa: F841 (bound after the call)

    error = outer()
    assert type(error) is NameError and "free variable 'offset'" in str(error)


# ---- := ----

def largest_square(x):
    best, where = -np.inf, -1
    for i in range(len(x)):
        if (square := x[i] * x[i]) > best:
            best, where = square, i
    return best, where


def running_total_and_last(x):
    total = 0.0
    for i in range(len(x)):
        total = total + (last := 2 * x[i])
    return total, last


def test_a_walrus_in_a_branch_test():
    x = np.array([0.5, -3.0, 2.0, 2.5, -1.0])
    check_calls(largest_square, [(x[:n],) for n in (0, 1, 2, 5)])
    assert_captured(largest_square, np.tile(x, 20))


def test_a_walrus_in_an_assignment_keeps_its_last_value():
    x = np.arange(1.0, 7.0)
    check_calls(running_total_and_last, [(x[:n],) for n in (0, 1, 2, 6)])
    assert_captured(running_total_and_last, x)


# ---- try/finally ----

def counted_sums(x, n):
    acc = np.zeros_like(x)
    count = 0
    for i in range(n):
        try:
            acc += np.sin(x * i)
        finally:
            count += 1
    return acc, count


def sum_until(x, level):
    total, visited = 0.0, 0
    for i in range(len(x)):
        try:
            total = total + x[i]
            if total > level:
                break
        finally:
            visited += 1
    return total, visited


def sum_of_positives(x):
    total, visited = 0.0, 0
    for i in range(len(x)):
        try:
            if x[i] < 0:
                continue
            total = total + x[i]
        finally:
            visited += 1
    return total, visited


def first_crossing(x, level):
    total = 0.0
    for i in range(len(x)):
        try:
            total = total + x[i]
            if total > level:
                return total, i
        finally:
            total = total * 0.5
    return total, -1


def newton_sqrt(x, tolerance):
    error, steps = 1.0, 0
    while error > tolerance:
        try:
            y = 0.5 * (x + 2.0 / x)
            error = np.abs(y - x).max()
            x = y
        finally:
            steps += 1
    return x, steps


def caught(x, n):
    total = 0.0
    for i in range(n):
        try:
            total = total + x[i]
        except IndexError:
            total = -total
    return total


def test_a_finally_block_runs_every_iteration():
    x = np.linspace(0.0, 1.0, 4)
    check_calls(counted_sums, [(x, n) for n in (0, 1, 2, 40)])
    assert_captured(counted_sums, x, 40)


def test_a_finally_block_runs_after_a_break_continue_or_return():
    x = np.array([0.5, -1.0, 2.0, 3.0, -0.5, 1.5])
    check_calls(sum_until, [(x, level) for level in (-5.0, 1.0, 2.0, 100.0)])
    check_calls(sum_of_positives, [(x[:n],) for n in (0, 1, 2, 6)])
    check_calls(first_crossing, [(x, level) for level in (-5.0, 0.9, 100.0)])
    for function, arguments in ((sum_until, (x, 2.0)), (sum_of_positives, (x,)),
                                (first_crossing, (x, 0.9))):
        assert "unrolled" not in loop_kinds(function, *arguments)


def test_a_while_loop_with_a_finally_block():
    check_calls(newton_sqrt, [(np.array([1.0, 2.0, 5.0]), 1e-12), (np.array([1.5]), 10.0)])
    assert "unrolled" not in loop_kinds(newton_sqrt, np.array([1.0, 2.0, 5.0]), 1e-12)


def test_an_error_in_the_body_still_raises():
    x = np.arange(4.0)
    check_calls(counted_sums, [(x, 3)])
    check_calls(caught, [(x, 4), (x, 6)])  # try/except: as written, Python's handler runs


def test_an_effect_in_a_finally_block_keeps_pythons_order(capsys):
    def noisy(x, n):
        total = 0.0
        for i in range(n):
            try:
                total = total + x[i]
            finally:
                print("step", i)
        return total

    x = np.arange(5.0)
    _assert_same(kiln.compile(noisy)(x, 5), noisy(x, 5), "total")
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"step {i}" for i in range(5)] * 2
