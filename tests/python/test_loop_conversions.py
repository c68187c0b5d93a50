"""float(x), int(x), bool(x) and x.item() in loops
(kiln._rewritten_expressions._ConversionRewriter, LoopCapture.to_python): in a loop's test and
in a captured body they stay traced, as the Python number they stand for, so the loop is one
graph with a loop node instead of a graph break (a graph) per iteration; where Python's number
is needed, or the conversion is not exact, they are Python's, as before."""
import math

import numpy as np
import pytest

import kiln


def jacobi(u, f, tol):  # the textbook idiom: the loop's test converts the error to a float
    err = 1.0
    iterations = 0
    while float(err) > tol:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                  - f[1:-1, 1:-1])
        err = np.abs(new - u).max()
        u = new
        iterations += 1
    return u, iterations


def jacobi_item(u, f, tol):  # the error converted in the body, the test on Python's number
    err = tol + 1
    while err > tol:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
                                  - f[1:-1, 1:-1])
        err = np.abs(new - u).max().item()
        u = new
    return u


def power_iteration(a, steps):
    v = np.ones(a.shape[0], a.dtype)
    norm = 0.0
    for _ in range(steps):
        w = a @ v
        norm = float(np.sqrt(w @ w))
        v = w / norm  # a Python float divides float32 as float32 (weak)
    return v, norm


def count_positive_prefixes(x):
    total = 0
    for i in range(x.shape[0]):
        if bool(x[:i + 1].sum() > 0):
            total += int(x[i] > 0)
    return total


def grid(n=24):
    u = np.zeros((n, n))
    u[0, :] = 1.0
    return u, np.zeros((n, n))


def one_loop(report):
    assert report.graph_count == 1 and report.graph_break_count == 0, str(report)
    assert [loop.kind for loop in report.loops if loop.kind != "select"] == ["loop"], str(report)


@pytest.mark.parametrize("tol", [1e-3, 1e-5])
def test_a_while_test_that_converts_to_float_is_one_loop(tol):
    u, f = grid()
    expected_u, expected_iterations = jacobi(u.copy(), f, tol)
    report = kiln.explain(jacobi)(u.copy(), f, tol)
    one_loop(report)
    got_u, got_iterations = report.result
    np.testing.assert_array_equal(got_u, expected_u)
    assert got_iterations == expected_iterations > 10
    got_u, got_iterations = kiln.compile(jacobi)(u.copy(), f, tol)
    np.testing.assert_array_equal(got_u, expected_u)
    assert got_iterations == expected_iterations


def test_item_in_a_loop_body_is_one_loop():
    u, f = grid()
    report = kiln.explain(jacobi_item)(u.copy(), f, 1e-4)
    one_loop(report)
    np.testing.assert_array_equal(report.result, jacobi_item(u.copy(), f, 1e-4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_float_from_a_loop_body_is_a_weak_python_float(dtype):
    a = (np.random.default_rng(0).standard_normal((16, 16)) + 4 * np.eye(16)).astype(dtype)
    expected_v, expected_norm = power_iteration(a, 12)
    report = kiln.explain(power_iteration)(a, 12)
    one_loop(report)
    v, norm = report.result
    assert v.dtype == expected_v.dtype == dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(v, expected_v, rtol=rtol)
    assert math.isclose(norm, expected_norm, rel_tol=rtol) and isinstance(norm, float)


def test_bool_and_int_of_traced_tests_in_a_loop_body():
    x = np.random.default_rng(1).integers(-5, 6, 40).astype(np.int16)
    report = kiln.explain(count_positive_prefixes)(x)
    one_loop(report)
    assert report.result == count_positive_prefixes(x)
    assert kiln.compile(count_positive_prefixes)(-x) == count_positive_prefixes(-x)


def bool_arithmetic(x):
    # Python's bools compute as ints (True + True is 2, -True is -1), & | ^ of two stay bools,
    # and a comparison of Python numbers is a bool: NumPy's bools gave True and refused `-`.
    out = np.zeros(x.shape[0])
    both = 0
    for i in range(1, x.shape[0]):
        a, b = bool(x[i] > x[i - 1]), bool(x[i] > 0)
        both = a + b
        out[i] = (a + b) * 10 + (a & b) - (a | b) + (a ^ b) + (-a) + ~b + a / 2 + b ** 2
        out[i] += abs(a) + (a == b) + (i < 3) * 100 + ((i < 3) + (i < 4)) * 1000
    return out, both, a, i > 2


def test_python_bools_in_a_loop_are_pythons():
    x = np.array([3.0, -1.0, 2.0, 5.0, -4.0, 0.5])
    report = kiln.explain(bool_arithmetic)(x)
    one_loop(report)
    got, expected = kiln.compile(bool_arithmetic)(x), bool_arithmetic(x)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1:] == expected[1:] and [type(v) for v in got[1:]] == [int, bool, bool], got


def truncating(x):
    total = 0
    for i in range(x.shape[0]):
        total += int(x[i])  # int() of a float: Python truncates, and raises on nan
    return total


def binned(x, nbins):  # a histogram by hand: the bin of each value by int()
    lo, hi = x.min(), x.max()
    counts = np.zeros(nbins, dtype=np.int64)
    for v in x:
        k = int((v - lo) / (hi - lo) * nbins)
        if k == nbins:
            k -= 1
        counts[k] += 1
    return counts


def through_math(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(float(x[i]))  # Python's float of a traced float: math_call traces it
    return s


def test_math_of_a_conversion_is_captured():
    # it ran as Python (math needs a float; kiln._math_calls computes it in the graph now)
    x = np.linspace(-2.5, 2.5, 7)
    report = kiln.explain(through_math)(x)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    assert report.result == pytest.approx(through_math(x), rel=1e-12)


def test_int_of_a_float_truncates_in_the_loop_and_python_raises_or_grows_past_it():
    # it was a graph break per element (47 in a 200-value histogram): int() of a float is
    # truncated in the graph, and the call reruns eagerly where Python's raises or is past int64
    x = np.linspace(-2.5, 2.5, 7)
    report = kiln.explain(truncating)(x)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    assert report.result == truncating(x) and type(report.result) is int
    values = np.random.default_rng(5).random(200)
    assert kiln.explain(binned)(values, 10).graph_break_count == 0
    np.testing.assert_array_equal(kiln.compile(binned)(values, 10), binned(values, 10))
    compiled = kiln.compile(truncating)
    compiled(np.arange(5.0))
    with pytest.raises(ValueError, match="NaN"):
        compiled(np.array([1.0, 2.0, 3.0, np.nan, 2.0]))
    with pytest.raises(OverflowError, match="infinity"):
        compiled(np.array([1.0, 2.0, 3.0, -np.inf, 2.0]))
    big = np.array([1.0, 2.0, 3.0, 1e30, 2.0])
    assert compiled(big) == truncating(big) == int(1e30) + 8


def count_above(x, small):
    count, best = 0, -1.0
    for i in range(x.shape[0]):
        if x[i] > 1:
            count += 1  # a Python int on both sides of the branch
        best = max(best, float(x[i]))
    return count, best, small + count, small.astype(np.float32) + best


def exp_sum(x, y32):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.exp(float(x[i]))  # NumPy's function of a Python float: np.float64
    return y32 + total


@pytest.mark.parametrize("function", [count_above, exp_sum])
def test_python_numbers_keep_their_types_through_branches_and_numpy_functions(function):
    """A Python number stays one through a captured branch (a select) and in the results
    (int, float), so int8 + count is int8; NumPy's functions of one give strong NumPy scalars
    (float32 + np.exp(v) is float64), as in NumPy."""
    compiled = kiln.compile(function)
    small = np.arange(3, dtype=np.int8)
    for x in (np.array([0.5, 2.0, 3.0]), np.array([2.0, -1.0, 0.0])):
        got, want = compiled(x, small), function(x, small)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert type(g) is type(w)
            if isinstance(w, np.ndarray):
                assert g.dtype == w.dtype
                np.testing.assert_allclose(g, w, rtol=1e-12)
            else:
                assert g == pytest.approx(w, rel=1e-12)


def next_after_peak(x):
    j = np.argmax(x)
    if j + 1 < len(x):
        nxt = x[j + 1]
    else:
        nxt = -1.0
    return nxt


def next_after_peak_chosen(x):
    j = np.argmax(x)
    return x[j + 1] if j + 1 < len(x) else -1.0


def chosen_then_scaled(x):
    j = np.argmax(x)
    v = x[j + 1] if j + 1 < len(x) else -1.0
    return v, v * 2, -v, [v + 1]


def chained_choice(x):
    j = np.argmax(x)
    if j == 0:
        v = 1.0
    elif j == 1:
        v = x[0]
    else:
        v = 2.0
    return v


def integer_sentinel(x):
    j = np.argmax(x)
    return x[j + 1] if j + 1 < len(x) else -1


@pytest.mark.parametrize("function, calls", [
    (next_after_peak, ([1.0, 5.0], [5.0, 1.0])),
    (next_after_peak_chosen, ([1.0, 5.0], [5.0, 1.0])),
    (chosen_then_scaled, ([1.0, 5.0], [5.0, 1.0])),
    (chained_choice, ([5.0, 1.0, 0.0], [1.0, 5.0, 0.0], [0.0, 1.0, 5.0])),
    (integer_sentinel, ([1, 5], [5, 1])),
])
def test_a_choice_between_an_element_and_a_python_number_has_the_type_of_the_side_taken(
        function, calls):
    """`x[j + 1] if j + 1 < len(x) else -1.0`: NumPy's result is the Python float where the
    float's side runs, a NumPy scalar elsewhere (it was np.float64 on both), and so is
    arithmetic on it whose value is the same either way."""
    compiled = kiln.compile(function)
    for x in calls:
        x = np.array(x)
        for _ in range(2):
            got, want = compiled(x), function(x)
            assert repr(got) == repr(want)
    assert [loop.kind for loop in kiln.explain(function)(np.array(calls[0])).loops].count(
        "select") >= 1


def int_start_becomes_float(x):
    total = 0  # a Python int that the first iteration makes a float: weak float from then on
    for i in range(x.shape[0]):
        total = total + int(x[i]) // 2 + int(x[i]) / 4
    return total


def int_powers(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + 2 ** int(x[i])  # Python's 2 ** -1 is 0.5, NumPy's power raises
    return total


@pytest.mark.parametrize("function", [int_start_becomes_float, int_powers])
def test_python_int_arithmetic_in_loops_is_pythons(function):
    compiled = kiln.compile(function)
    for x in (np.array([-7, 5, 3]), np.array([-1, 2, 0, 4])):
        got, want = compiled(x), function(x)
        assert type(got) is type(want) and got == want


def factorial(x, n):
    f = 1
    for i in range(1, n + 1):
        f *= i
    return x * 0 + 1, f


def scaled_by_factorial(x, n):
    f = 1
    for i in range(2, n + 1):
        f = f * i
    return x * f


def powers_and_shifts(x, n):
    p, q, d = 1, 1, 0
    for i in range(n):
        p = p * 3 + 1
        q = -(q << 2)
        d = d - p ** 2
    return x + 1, p, q, d


@pytest.mark.parametrize("function, small, large", [
    (factorial, 15, 30), (scaled_by_factorial, 15, 25), (powers_and_shifts, 10, 40)])
def test_python_ints_carried_by_loops_do_not_wrap(function, small, large):
    # 30! came back as -8764578968847253504 (an int64 that wrapped): past int64's range the
    # call reruns eagerly, Python's ints
    x = np.ones(3)
    compiled = kiln.compile(function)
    for n in (small, large, small):
        got, want = compiled(x, n), function(x, n)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for a, b in zip(got, want):
            assert type(a) is type(b)
            np.testing.assert_array_equal(a, b) if isinstance(b, np.ndarray) else None
            assert isinstance(b, np.ndarray) or a == b
    report = kiln.explain(kiln.compile(function))(x, small)
    assert report.graph_break_count == 0 and [loop.kind for loop in report.loops] == ["loop"]


def descend(w, x, y, lr):  # a training step that reports its loss as a Python float
    err = x @ w - y
    w = w - lr * x.T @ err / len(x)
    return w, float((err * err).mean())


def summaries(x):
    return {"mean": x.mean().item(), "count": int(np.int64(x.size)), "any": bool(x.any())}


def test_returned_conversions_stay_traced():
    # `return w, float(loss)` was a graph break: each call traced the function again, with
    # its numbers static (a changing learning rate compiled anew), at NumPy's speed at best.
    rng = np.random.default_rng(0)
    x, y, w = rng.standard_normal((64, 8)), rng.standard_normal(64), np.zeros(8)
    compiled = kiln.compile(descend)
    for lr in (0.1, 0.05, 0.02):
        (w_kiln, loss), (w_numpy, expected) = compiled(w, x, y, lr), descend(w, x, y, lr)
        assert type(loss) is float
        np.testing.assert_allclose(w_kiln, w_numpy, rtol=1e-13)
        assert loss == pytest.approx(expected, rel=1e-13)
    dynamic = np.lib.NumpyVersion(np.__version__) >= "2.0.0"  # numbers are static on 1.x
    assert len(compiled._kiln_function.cache) == (2 if dynamic else 3)  # lr: an input
    report = kiln.explain(descend)(w, x, y, 0.1)
    assert not report.break_reasons and len(report.graphs) == 1
    report = kiln.explain(summaries)(np.arange(5.0, dtype=np.float32))
    assert not report.break_reasons
    assert report.result == summaries(np.arange(5.0, dtype=np.float32))
    assert [type(v) for v in report.result.values()] == [float, int, bool]


def promote_row_sum(x, n):
    acc = np.zeros(3, dtype=np.int32)   # int32 until an iteration adds a float row
    for i in range(n):
        acc = acc + x[i]
    return acc


def number_to_row(x, n):
    s = 0                                # a Python int until an iteration adds a row
    for i in range(n):
        s = s + x[i]
    return s


def halve_while_large(x):
    while x.max() > 1:                   # an int array until the first division
        x = x / 2
    return x


@pytest.mark.parametrize("function, calls", [
    (promote_row_sum, [4, 2, 0, 5]), (number_to_row, [4, 3, 0]),
    (halve_while_large, [np.arange(1, 6), np.array([0, 1])])])
def test_a_loop_of_no_iterations_keeps_types_the_body_would_change(function, calls):
    """A dynamic trip count (n changed between calls) or a traced while test may run a loop
    no time: variables the body gives another dtype or shape keep theirs (they were carried
    at the body's type, cast and broadcast: float zeros where NumPy returns int32 ones, a row
    where it returns the int 0)."""
    x = np.random.default_rng(2).random((5, 3))
    compiled = kiln.compile(function)
    for call in calls:
        args = (x, call) if isinstance(call, int) else (call,)
        got, expected = compiled(*args), function(*args)
        assert type(got) is type(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)


def double_prefix(x, n):
    i = -1
    for i in range(n):
        x[i] = x[i] * 2
    return x, i


def every_other_down(x, n):
    i = 100
    for i in range(n, 0, -2):
        x[i % 6] += 1
    return x, i


def running_best(x, n):
    best = x[0]                          # a NumPy scalar, through a branch of the body
    for i in range(n):
        if x[i] > best:
            best = x[i]
    return best


@pytest.mark.parametrize("function, counts", [
    (double_prefix, [5, 4, 3, 0, 1]), (every_other_down, [7, 6, 5, 0, 1]),
    (running_best, [5, 4, 0])])
def test_the_loop_target_and_scalars_after_a_loop_of_a_dynamic_count(function, counts):
    """After a loop whose count changed between calls, its target holds its last value (it
    kept its value from before the loop: -1 for NumPy's 3), and a NumPy scalar selected by a
    branch of the body stays a NumPy scalar (it became a 0-d array)."""
    compiled = kiln.compile(function)
    for n in counts:
        x = np.arange(6.0)
        assert repr(compiled(x.copy(), n)) == repr(function(x.copy(), n))


def fnv1a(data):
    h = np.uint32(2166136261)
    for b in data:
        h = (h ^ np.uint32(b)) * np.uint32(16777619)   # wraps, as NumPy's uint32 does
    return h


def scalar_types(x, n):
    return (np.float32(x.sum()), np.int64(x.max() * 3), np.float64(x[:2]), np.int8(n),
            np.float32(1.5) * np.float16(x[0]))


def test_numpy_scalar_types_of_traced_values_are_casts():
    """np.uint32(b) of a traced value was NumPy's conversion of it, a graph break (a hash over
    the bytes: a graph per byte): it is the cast in the graph, a NumPy scalar where the value
    has no axis, a traced Python int range-checked as NumPy checks it."""
    data = np.random.default_rng(4).integers(0, 256, 64).astype(np.uint8)
    report = kiln.explain(kiln.compile(fnv1a, fullgraph=True))(data)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    assert report.result == fnv1a(data) and report.result.dtype == np.uint32
    x = np.array([0.25, 4.0, 1.5])
    for n in (5, 7):
        got, expected = kiln.compile(scalar_types)(x, n), scalar_types(x, n)
        for value, reference in zip(got, expected):
            assert np.shape(value) == np.shape(reference) and value.dtype == reference.dtype
            np.testing.assert_array_equal(value, reference)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":   # NumPy 2 refuses Python ints past
        with pytest.raises(OverflowError):                # the type's range
            kiln.compile(scalar_types)(x, 300)


def complex_of_parts(re, im):
    out = np.zeros(re.shape, dtype=np.complex128)
    for k in range(re.shape[0]):
        c = complex(re[k], im[k])      # Python's complex of traced reals: traced, not a break
        out[k] = c * c + complex(re[k])
    return out


def test_complex_of_traced_parts_stays_in_the_loop():
    re, im = np.linspace(-1, 1, 7), np.linspace(0, 2, 7)
    report = kiln.explain(kiln.compile(complex_of_parts))(re, im)
    assert report.graph_break_count == 0, report.break_reasons
    np.testing.assert_allclose(report.result, complex_of_parts(re, im), rtol=1e-12)
    np.testing.assert_allclose(kiln.compile(complex_of_parts)(re, im), complex_of_parts(re, im))


def rounded_clock(x):
    t = 0.0
    for i in range(12):
        x = x + np.sin(t)
        t = round(t + 0.1, 10)  # Python's round of a Python float: a float
    return x, t, round(x[0], 3)


def test_round_of_a_python_number_carried_by_a_loop_is_pythons_type():
    x = np.ones(2)
    got, want = kiln.compile(rounded_clock)(x), rounded_clock(x)
    assert [type(v) for v in got] == [type(v) for v in want] == [np.ndarray, float, np.float64]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    assert got[1:] == want[1:]
