"""A name bound to None before a loop and to a value in it (kiln._loop_optional_values): a
search's `idx = None`, a running best's `best = None`, the previous row's `prev = None`, a
`found = None` checked by a raise after the loop. Each loop is one loop node (it unrolled), and
the compiled function agrees with NumPy on inputs where the value is set and where it stays
None; where the payload's type differs between paths or a read is not guarded by its test, the
loop stays as written and the answer is still NumPy's."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs_eleventh import assert_same, check_repeated_calls, loop_kinds


def first_negative(x):
    idx = None
    for i in range(x.shape[0]):
        if x[i] < 0:
            idx = i
            break
    return -1 if idx is None else idx


def first_negative_while(x):
    idx = None
    i = 0
    while i < x.shape[0]:
        if x[i] < 0:
            idx = i
            break
        i += 1
    return -1 if idx is None else idx


def running_min(x):
    best = None
    for i in range(x.shape[0]):
        v = x[i] * 2.0
        if best is None or v < best:
            best = v
    return best


def smallest_above(x, t):
    best = None
    for i in range(x.shape[0]):
        if x[i] > t and (best is None or x[i] < best):
            best = x[i]
    return best


def summed_differences(x):
    out = np.zeros(x.shape[1])
    prev = None
    for i in range(x.shape[0]):
        row = x[i]
        if prev is not None:
            out += row - prev
        prev = row
    return out


def found_or_raise(x):
    found = None
    for i in range(x.shape[0]):
        if x[i] > 10.0:
            found = x[i]
            break
    if found is None:
        raise ValueError("nothing above 10")
    return found * 2


def last_crossing_while(x):
    where = None
    i = 1
    while i < x.shape[0]:
        if x[i - 1] < 0 <= x[i]:
            where = i
        i += 1
    return (where, x[where]) if where is not None else (-1, 0.0)


def row_with_largest_norm(X):
    best, best_norm = None, None
    for i in range(X.shape[0]):
        norm = np.sqrt(np.sum(X[i] * X[i]))
        if best_norm is None or norm > best_norm:
            best, best_norm = X[i].copy(), norm
    return best


def payload_changes_shape(x):
    v = None
    for i in range(x.shape[0]):
        if x[i, 0] > 0:
            v = x[i]
        else:
            v = x[i, :2]
    return 0.0 if v is None else v.sum()


def read_unguarded(x):
    last = None
    for i in range(x.shape[0]):
        if x[i] > 0:
            last = x[i]
    total = last + 1.0
    return total


def with_negative(n, at):
    x = np.linspace(1.0, 2.0, n)
    if at is not None:
        x[at] = -3.0
    return x


CAPTURED = [
    (first_negative, [(with_negative(50, 30),), (with_negative(50, None),),
                      (with_negative(50, 0),), (with_negative(7, 6),)]),
    (first_negative_while, [(with_negative(50, 30),), (with_negative(50, None),),
                            (with_negative(9, 2),)]),
    (running_min, [(np.random.default_rng(0).standard_normal(40),),
                   (np.random.default_rng(1).standard_normal(13),)]),
    (smallest_above, [(np.random.default_rng(2).standard_normal(40), 0.5),
                      (np.random.default_rng(3).standard_normal(40), 9.0)]),
    (summed_differences, [(np.random.default_rng(4).standard_normal((20, 3)),),
                          (np.random.default_rng(5).standard_normal((1, 3)),)]),
    (last_crossing_while, [(np.sin(np.linspace(0, 9, 60)),), (np.linspace(1, 2, 30),)]),
]


@pytest.mark.parametrize("function, argument_sets", CAPTURED,
                         ids=[function.__name__ for function, _ in CAPTURED])
def test_optional_value_loops_are_captured(function, argument_sets):
    assert loop_kinds(function, *argument_sets[0]) == ["loop"]
    check_repeated_calls(function, *argument_sets)


def test_running_min_of_no_element_is_none():
    compiled = kiln.compile(running_min)
    assert compiled(np.arange(4.0)) == running_min(np.arange(4.0))
    assert compiled(np.zeros(0)) is None


def test_found_or_raise_raises_where_nothing_is_found():
    assert loop_kinds(found_or_raise, np.linspace(0, 20, 30)) == ["loop"]
    compiled = kiln.compile(found_or_raise)
    for x in (np.linspace(0, 20, 30), np.linspace(0, 20, 9)):
        assert_same(compiled(x.copy()), found_or_raise(x.copy()), "found_or_raise")
    with pytest.raises(ValueError, match="nothing above 10"):
        compiled(np.linspace(0, 5, 30))
    assert_same(compiled(np.linspace(0, 30, 30)), found_or_raise(np.linspace(0, 30, 30)),
                "found_or_raise after the raise")


def test_two_optional_values_of_one_loop():
    X = np.random.default_rng(6).standard_normal((12, 4))
    assert loop_kinds(row_with_largest_norm, X) == ["loop"]
    check_repeated_calls(row_with_largest_norm, (X,), (X[:1].copy(),), (X * -2.0,))


def test_payload_of_another_shape_on_a_path_stays_as_written():
    """The two sides bind arrays of different shapes: the loop unrolls, as it did, and says why
    under the user's name (KILN_LOGS=graph_breaks prints the same reason)."""
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 5.0, 6.0], [2.0, 0.0, 1.0]])
    report = kiln.explain(kiln.compile(payload_changes_shape))(x.copy())
    (loop,) = [loop for loop in report.loops if loop.kind != "select"]
    assert loop.kind == "unrolled" and "`v`" in loop.reason, loop.reason
    check_repeated_calls(payload_changes_shape, (x,), (x[:2].copy(),), (-x,))


def test_unguarded_read_stays_as_written():
    x = np.array([1.0, -2.0, 3.0, -4.0])
    assert loop_kinds(read_unguarded, x) == ["unrolled"]
    check_repeated_calls(read_unguarded, (x,), (x * 2.0,))
    with pytest.raises(TypeError):
        kiln.compile(read_unguarded)(-np.ones(3))


def test_captured_first_call_matches_eager_numpy_on_copies():
    x = with_negative(50, 30)
    compiled = kiln.compile(first_negative)
    assert_same(compiled(copy.deepcopy(x)), first_negative(x), "first_negative")
    assert_same(compiled(with_negative(50, None)), -1, "first_negative of no negative")


def first_negative_of_each_row(X):
    out = np.zeros(X.shape[0], dtype=np.int64)
    for r in range(X.shape[0]):
        idx = None
        for c in range(X.shape[1]):
            if X[r, c] < 0:
                idx = c
                break
        out[r] = -1 if idx is None else idx
    return out


def test_optional_value_of_an_inner_loop():
    X = np.random.default_rng(7).standard_normal((10, 6)) + 1.0
    assert loop_kinds(first_negative_of_each_row, X) == ["loop", "loop"]
    check_repeated_calls(first_negative_of_each_row, (X,), (np.abs(X),), (-np.abs(X[:3]),))


def test_empty_inputs_keep_the_value_none():
    check_repeated_calls(first_negative, (np.zeros(0),))
    check_repeated_calls(first_negative_while, (np.zeros(0),))
    check_repeated_calls(summed_differences, (np.zeros((0, 3)),))
    check_repeated_calls(smallest_above, (np.zeros(0), 0.0))


def first_above_while(x, t):
    idx = None
    i = 0
    while idx is None and i < x.shape[0]:
        if x[i] > t:
            idx = i
        i += 1
    return idx if idx is not None else -1


def index_or_none(x):
    idx = None
    for i in range(x.shape[0]):
        if x[i] < 0:
            idx = i
            break
    return idx


def test_flag_in_a_while_test():
    x = np.linspace(0.0, 1.0, 25)
    assert loop_kinds(first_above_while, x, 0.5) == ["loop"]
    check_repeated_calls(first_above_while, (x, 0.5), (x, 2.0), (x[:3].copy(), -1.0))


def test_returned_value_or_none():
    assert loop_kinds(index_or_none, with_negative(30, 4)) == ["loop"]
    check_repeated_calls(index_or_none, (with_negative(30, 4),), (with_negative(30, None),),
                         (with_negative(30, 29),))


def longest_positive_run(x):
    start = None
    longest = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            if start is None:
                start = i
            longest = max(longest, i - start + 1)
        else:
            start = None
    return longest


def reset_then_unguarded(x):
    last = None
    for i in range(x.shape[0]):
        last = x[i]
        if x[i] < 0:
            last = None
        total = last * 2.0 if last is not None else 0.0
        x[i] = total
    return x


def test_value_set_to_none_again_in_the_loop():
    x = np.array([1.0, 2.0, -1.0, 3.0, 4.0, 5.0, -2.0, 1.0])
    assert loop_kinds(longest_positive_run, x) == ["loop"]
    check_repeated_calls(longest_positive_run, (x,), (-x,), (np.ones(5),))
    check_repeated_calls(reset_then_unguarded, (x,), (-x,))
