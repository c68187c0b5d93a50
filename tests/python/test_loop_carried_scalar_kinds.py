"""Numbers a captured loop carries whose kind a branch of its body changes, from NumPy's scalar
to a Python number written in the code and back (`state = x[0] > high`, then `state = True`
in a branch: np.bool_ before, Python's bool after). The branch's value is an AssumedNumber
(kiln._assumed_numbers); carried, it was committed, a check that reran the call eagerly in
every call that took the Python side once: a hysteresis detector ran as Python on every call
with a crossing. The loop now carries which kind the number is (a bool beside its value), the
body reads it as an AssumedNumber, and after the loop it has NumPy's type as the call went."""
import copy

import numpy as np
import pytest

import kiln
from test_numpy_programs_fifth import _python_runs
from test_numpy_programs_sixth import loop_kinds


def hysteresis_crossings(x, high, low):
    state = x[0] > high if len(x) else False
    events = np.zeros(len(x), dtype=np.int8)
    count = 0
    for i in range(1, len(x)):
        if not state and x[i] > high:
            state = True
            events[i] = 1
            count += 1
        elif state and x[i] < low:
            state = False
            events[i] = -1
    return events, count


def hysteresis_state(x, high, low):
    state = x[0] > high
    for i in range(1, len(x)):
        if not state and x[i] > high:
            state = True
        elif state and x[i] < low:
            state = False
    return state


def latched_level(x, jump):
    level = x[0] * 1.0  # NumPy's float64
    trace = np.zeros(len(x))
    for i in range(1, len(x)):
        if x[i] - level > jump:
            level = 0.0  # a Python float
        elif x[i] < level:
            level = x[i]  # NumPy's again
        trace[i] = level * 2
    return trace, level


def last_peak(x, limit):
    best = np.argmax(x[:1])  # NumPy's int64
    for i in range(1, len(x)):
        if x[i] > limit:
            best = -1  # a Python int
        elif x[i] > x[best]:
            best = np.int64(i)
    return best


def python_then_numpy(x, high):
    above = False  # a Python bool
    for i in range(len(x)):
        if x[i] > high:
            above = x[i] > 2 * high  # NumPy's
        elif x[i] < -high:
            above = False
    return above


def kind_read_in_the_loop(x, jump):
    level = x[0] * 1.0
    sizes = np.zeros(len(x))
    for i in range(1, len(x)):
        sizes[i] = (level * np.float32(2)).dtype.itemsize  # 8 for NumPy's, 4 for Python's
        if x[i] - level > jump:
            level = 0.0
        elif x[i] < level:
            level = x[i]
    return sizes, level


def armed_count(x, high, low):
    armed = x[0] > high
    fired = 0
    for i in range(1, len(x)):
        if armed:
            fired += armed + 1  # np.int64 where armed is NumPy's bool, else an int
            if x[i] < low:
                armed = False
        elif x[i] > high:
            armed = True
    return armed, fired


def settle_while(x, tol):
    i = 0
    level = x[0] * 1.0
    while i < len(x) - 1 and abs(x[i + 1] - x[i]) > tol:
        if x[i + 1] > level:
            level = x[i + 1]
        else:
            level = 0.0
        i += 1
    return i, level


def row_states(X, high, low):
    state = X[0, 0] > high
    counts = np.zeros(X.shape[0], dtype=np.int64)
    for r in range(X.shape[0]):
        for c in range(X.shape[1]):
            if not state and X[r, c] > high:
                state = True
                counts[r] += 1
            elif state and X[r, c] < low:
                state = False
    return counts, state


def compared_after(x, jump):
    level = x[0] * 1.0
    for i in range(1, len(x)):
        if x[i] - level > jump:
            level = 0.0
        elif x[i] < level:
            level = x[i]
    return level > 0.0, level + 1


def _signal(n, seed=0):
    t = np.linspace(0, 1, n)
    noise = np.random.default_rng(seed).normal(0, 0.05, n)
    return np.sin(2 * np.pi * 5 * t) + 0.1 * np.cos(2 * np.pi * 23 * t) + noise


def _same_as_numpy(got, expected):
    """The same values and the same types, leaf by leaf: np.bool_ is not bool."""
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert type(a) is type(b), (type(a), type(b))
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b)
        else:
            assert a == b or (a != a and b != b), (a, b)


def _check(function, argument_sets, reruns=0):
    """compiled(function) agrees with NumPy on each argument set, types included; the call of
    the first set, once compiled, runs `function` as Python `reruns` times (eagerly)."""
    compiled = kiln.compile(function)
    for arguments in argument_sets:
        _same_as_numpy(compiled(*copy.deepcopy(arguments)), function(*copy.deepcopy(arguments)))
    assert _python_runs(function, compiled, copy.deepcopy(argument_sets[0])) == reruns
    kinds, breaks = loop_kinds(function, *argument_sets[0])
    assert "loop" in kinds and "unrolled" not in kinds and breaks == 0, (kinds, breaks)


def test_a_hysteresis_detector_stays_compiled():
    x = _signal(400)
    events, count = hysteresis_crossings(x, 0.5, -0.5)
    assert count == 5 and type(count) is int
    _check(hysteresis_crossings, [(x, 0.5, -0.5), (x[:50], 0.5, -0.5), (-x, 0.5, -0.5),
                                  (x, 5.0, -5.0)])


@pytest.mark.parametrize("high, low", [(0.5, -0.5), (5.0, -5.0), (-5.0, -6.0)])
def test_a_carried_bool_leaves_the_loop_with_the_type_of_the_last_side_taken(high, low):
    # no crossing: NumPy's bool from before the loop; a crossing: Python's
    x = _signal(300)
    _check(hysteresis_state, [(x, high, low), (x, 0.5, -0.5), (x, 5.0, -5.0), (x[:3], high, low)])


@pytest.mark.parametrize("jump", [0.3, 10.0])
def test_a_carried_float_leaves_the_loop_with_the_type_of_the_last_side_taken(jump):
    x = _signal(200, seed=1)
    _check(latched_level, [(x, jump), (x, 0.3), (x, 10.0), (np.sort(x), jump)])


@pytest.mark.parametrize("limit", [0.9, 10.0])
def test_a_carried_int_leaves_the_loop_with_the_type_of_the_last_side_taken(limit):
    x = _signal(100, seed=2)
    _check(last_peak, [(x, limit), (x, 0.9), (x, 10.0)])


@pytest.mark.parametrize("high", [0.3, 0.6, 5.0])
def test_a_python_bool_a_branch_makes_numpys_and_back(high):
    x = _signal(200, seed=3)
    _check(python_then_numpy, [(x, high), (x, 0.3), (x, 0.6), (x, 5.0)])


def test_a_read_that_tells_the_kinds_apart_gets_numpys_answer():
    # `level * np.float32(2)` is float64 of NumPy's level, float32 of Python's: the call runs
    # again eagerly where the body reads the Python one (correct, not compiled)
    x = _signal(60, seed=4)
    sizes, _ = kind_read_in_the_loop(x, 0.3)
    # NumPy 1.x promotes a Python float with np.float32 to float64 as well (no weak scalars)
    nep50 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
    assert set(sizes[1:]) == ({4.0, 8.0} if nep50 else {8.0})
    compiled = kiln.compile(kind_read_in_the_loop)
    for arguments in [(x, 0.3), (x, 10.0), (x[:5], 0.3)]:
        _same_as_numpy(compiled(*arguments), kind_read_in_the_loop(*arguments))
    assert _python_runs(kind_read_in_the_loop, compiled, (x, 10.0)) == 0


def test_a_kind_read_by_an_operator_and_a_branch_on_the_number_itself():
    # `if armed:` reads its truth, alike for either kind; `fired += armed + 1` is np.int64
    # from the first read of NumPy's bool on, a Python int before (two kinds' conditions)
    x = _signal(120, seed=5)
    assert [type(armed_count(*a)[1]) for a in [(x + 1, 0.5, -0.5), (x, 0.5, -0.5)]] == [
        np.int64, int]
    _check(armed_count, [(x + 1, 0.5, -0.5), (x, 0.5, -0.5), (x, 5.0, -5.0), (-x, 0.5, -0.5)])


def test_a_while_loop_carries_a_kind():
    x = _signal(120, seed=5)
    _check(settle_while, [(x, 0.001), (x, 1.0), (np.sort(x), 0.0)])


def test_a_kind_carried_through_an_inner_loop():
    x = _signal(120, seed=5)
    X = np.stack([x, -x, x * 0.1])
    _check(row_states, [(X, 0.5, -0.5), (X, 5.0, -5.0)])


def test_uses_after_the_loop_that_either_kind_answers_alike_keep_numpys_types():
    # `level > 0.0` is Python's bool of Python's float, NumPy's of NumPy's
    x = _signal(120, seed=5)
    _check(compared_after, [(x, 0.3), (x, 10.0)])
