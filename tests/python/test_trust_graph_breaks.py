"""Graph breaks never memorise the data: with new data on every call the results follow NumPy and
nothing compiles again after the first call of each path (retrace entries, segment memo)."""
import operator
import random
import warnings

import numpy as np
import pytest

import kiln


def histogram_normalised(x):
    counts, edges = np.histogram(x, bins=16)
    return counts / counts.sum(), edges


def covariance(x):
    return np.cov(x) * 2 + 1


def cholesky_solve(a, b):
    lower = np.linalg.cholesky(a @ a.T + 3 * np.eye(a.shape[0]))
    return lower.sum(axis=0) * b


def branches(x):
    if x.sum() > 0:  # sides of different shapes: no select, a graph break (a guard clause of
        return np.sqrt(np.abs(x)) * 2   # one shape is a branch in one graph: test_loop_returns)
    return x[1:] - 1


def scaled_by_float(x):
    top = float(x.max())
    return x / top + 1


def scaled_by_item(x):
    return (x * x.mean().item()).sum()


def scalar_from_eager_numpy(x):
    counts, edges = np.histogram(x, bins=8)
    return (x * 2).sum() + (counts * edges[1:]).sum()  # traced 0-d + NumPy scalar: 0-d


CASES = {
    "numpy_scalar_operand": (scalar_from_eager_numpy, lambda r: (r.random(300),)),
    "histogram": (histogram_normalised, lambda r: (r.random(50_000),)),
    "cov": (covariance, lambda r: (r.random((8, 300)),)),
    "cholesky": (cholesky_solve, lambda r: (r.random((6, 6)), r.random(6))),
    "branches": (branches, lambda r: (r.standard_normal(200),)),
    "float_operand": (scaled_by_float, lambda r: (r.random(500) + 0.5,)),
    "item_operand": (scaled_by_item, lambda r: (r.random(500),)),
}


def assert_close(compiled, eager):
    pairs = zip(compiled, eager) if isinstance(eager, tuple) else [(compiled, eager)]
    for mine, theirs in pairs:
        assert np.shape(mine) == np.shape(theirs)
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_new_data_every_call_compiles_nothing_after_warm_up(name):
    function, make = CASES[name]
    random = np.random.default_rng(1)
    compiled = kiln.compile(function)
    state = compiled._kiln_function
    for _ in range(6):  # warm-up: every path seen (branches takes both with this seed)
        arguments = make(random)
        assert_close(compiled(*arguments), function(*arguments))
    graphs = len(state.segments)
    for _ in range(10):
        arguments = make(random)
        assert_close(compiled(*arguments), function(*arguments))
    assert len(state.segments) == graphs, "a call with new data compiled again"
    assert len(state.cache) == 1, "the guards looked at the data"


def test_both_branches_are_compiled_once_each():
    compiled = kiln.compile(branches)
    for sign in (1, -1, 1, -1, -1, 1):
        x = sign * (np.random.rand(50) + 0.1)
        np.testing.assert_allclose(compiled(x), branches(x))
    assert len(compiled._kiln_function.segments) == 3  # the condition's prefix and two branches


def test_the_result_follows_an_input_changed_in_place():
    compiled = kiln.compile(histogram_normalised)
    x = np.random.rand(1000)
    first = compiled(x)
    x[:] = np.random.rand(1000) ** 3  # same object, new contents
    assert_close(compiled(x), histogram_normalised(x))
    assert_close(compiled(x), histogram_normalised(x))  # the same data twice
    assert not np.array_equal(first[0], compiled(x)[0])


def test_mutations_are_written_back_on_retraced_calls():
    def normalise_in_place(x):
        if x.max() > 1:
            x /= x.max()
        return x.sum()

    compiled = kiln.compile(normalise_in_place)
    for scale in (1, 5, 0.5, 9):
        x, y = np.random.rand(20) * scale, None
        y = x.copy()
        np.testing.assert_allclose(compiled(x), normalise_in_place(y))
        np.testing.assert_allclose(x, y)


def _untraced_zeros(n):
    return np.frombuffer(bytes(8 * n), dtype=np.float64).copy()  # a real ndarray, not traced


def _store_into_untraced_array(x):
    buffer = _untraced_zeros(x.shape[0])
    for i in range(x.shape[0]):
        buffer[i] = x[i] * 2 + buffer[i - 1]  # ndarray.__setitem__ asks float() of a tracer
    return buffer


def test_graph_breaks_inside_numpy_conversions_are_not_masked():
    """NumPy swallows what float() raises inside ndarray.__setitem__ and reports "setting an
    array element with a sequence": kiln's own graph-break outcomes must come through."""
    x = np.arange(100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the segment limit's warning
        np.testing.assert_allclose(kiln.compile(_store_into_untraced_array)(x),
                                   _store_into_untraced_array(x))
    with pytest.raises(kiln.GraphBreak, match=r"test_trust_graph_breaks.py:\d+"):
        kiln.compile(_store_into_untraced_array, fullgraph=True)(x)


def _total_or_fallback(x):
    try:
        total = float(x.sum())  # a break: the first calls of its kind end the trace here
    except Exception:
        total = -1.0
    return x * total


def _wide_or_fallback(x):
    try:
        wide = x.astype(np.longdouble)  # a dtype kiln lacks: the trace cannot go on
    except Exception:  # noqa: BLE001
        wide = x
    return wide * 2


def _bound_or_fallback(x):
    try:
        bound = int(x.max())
    except Exception:
        raise KeyError("no bound")  # eager NumPy never raises this
    return x[:bound] * 2


@pytest.mark.parametrize("function", [_total_or_fallback, _wide_or_fallback, _bound_or_fallback])
def test_the_users_handlers_never_take_kilns_own_signals(function, eager_time_bounds):
    # `except Exception:` took the signal that ended the trace: the handler's value was traced
    # and kept in the graph (x * -1.0 on every call), or its own error raised.
    compiled = kiln.compile(function)
    for offset in range(4):
        x = np.arange(1.0, 4.0) + offset
        result, expected = compiled(x), function(x)
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(result, expected)


def _scatter_multiply(x, index, values):
    y = x * 2
    np.multiply.at(y, slice(1, None, 2), values[index[:3]])  # a slice key: runs on y's ndarray
    return y + 1


def _put_into_view(x):
    y = x.copy()
    np.put(y[1:], [0, 2], [-1.0, -2.0])  # updates y through a view
    return y


def _ufunc_into_traced_out(x):
    y = x + 0
    np.heaviside(y, 0.5, out=y)  # a ufunc kiln lacks, writing into a traced array
    return y * 3


@pytest.mark.parametrize("function, arguments", [
    (_scatter_multiply, (np.arange(6.0), np.array([0, 2, 2, 5, 0]), np.arange(5.0))),
    (_put_into_view, (np.arange(6.0),)),
    (_ufunc_into_traced_out, (np.linspace(-1, 1, 9),)),
])
def test_an_untraced_function_that_updates_its_argument_in_place_is_not_lost(function, arguments):
    """A function the tracer cannot follow runs on the traced values' ndarrays (a graph break);
    what it writes into them is written back into the trace, through views too."""
    eager = function(*(np.copy(a) for a in arguments))
    np.testing.assert_array_equal(kiln.compile(function)(*arguments), eager)
    np.testing.assert_array_equal(kiln.compile(function)(*arguments), eager)  # segments reused


def _random_draws(x, rng):
    noise = np.empty(3)                   # the user's own np.empty: traced
    noise[:] = rng.standard_normal(3)     # the Generator's C code calls np.empty too
    return x + noise + np.random.rand() + np.random.standard_normal(3)


def test_random_draws_are_new_on_every_call_and_never_crash():
    """NumPy's random functions run C code that creates its results with np.empty, which the
    tracer swaps while tracing: a tracer handed to that C code crashed the process. Their
    values are new on each call, so the function is traced again on every call (like a
    graph break), draws follow NumPy's own streams, and fullgraph=True refuses them."""
    compiled = kiln.compile(_random_draws)
    x = np.zeros(3)
    first, second = (compiled(x, np.random.default_rng(1)) for _ in range(2))
    assert not np.array_equal(first, second)           # np.random's global stream moved on
    np.random.seed(7)
    expected = _random_draws(x, np.random.default_rng(3))
    np.random.seed(7)
    np.testing.assert_array_equal(compiled(x, np.random.default_rng(3)), expected)
    with pytest.raises(kiln.GraphBreak, match=r"draws new values on every call at "
                                              r"test_trust_graph_breaks.py:\d+"):
        kiln.compile(lambda x: x + np.random.randint(0, 9), fullgraph=True)(x)


def test_creation_functions_called_through_other_names_are_traced():
    """Which call the user's frame is making decides whether np.zeros is traced: an alias
    of it, or np.zeros beside a C function that calls it."""
    def aliased(x):
        make = np.zeros
        return make(3) + np.arange(3) + np.zeros_like(x)
    np.testing.assert_array_equal(kiln.compile(aliased, fullgraph=True)(np.ones(3)),
                                  aliased(np.ones(3)))


def _draw_then_break(x, rng):
    noise = rng.standard_normal(3) + np.random.standard_normal(3)
    return x + noise, x.view(np.int64) + 1    # a break the trace cannot continue from


def test_a_call_given_up_after_drawing_draws_what_numpy_draws():
    """A trace runs the function, so its draws advance the generators; a trace given up after
    them runs the call eagerly, which must not draw a second time (the results and every
    later draw would differ from NumPy's)."""
    compiled = kiln.compile(_draw_then_break)
    mine, theirs = np.random.default_rng(4), np.random.default_rng(4)
    for seed in range(2):
        np.random.seed(seed)
        got = compiled(np.zeros(3), mine)
        after = np.random.random()
        np.random.seed(seed)
        expected = _draw_then_break(np.zeros(3), theirs)
        assert after == np.random.random()
        for value, reference in zip(got, expected):
            np.testing.assert_array_equal(value, reference)


def _shuffle_rows(x, rng, seed):
    rng.shuffle(x)
    np.random.seed(seed)
    np.random.shuffle(x[:, 0])
    random.seed(seed)
    random.shuffle(x)
    return x * 2


def test_shuffling_a_traced_array_in_place_gives_numpy_rows():
    """NumPy's shuffles treat a non-ndarray as a sequence of objects and swap x[i], x[j]:
    the rows of a traced array are views, which left duplicate rows (as NumPy warns), and
    the swaps drawn at the trace repeated on every call. A shuffle runs the call eagerly."""
    compiled = kiln.compile(_shuffle_rows)
    mine, theirs = np.random.default_rng(2), np.random.default_rng(2)
    for seed in range(3):
        x, y = np.arange(12.0).reshape(6, 2), np.arange(12.0).reshape(6, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # NumPy's warning about shuffling views
            got = compiled(x, mine, seed)
        np.testing.assert_array_equal(got, _shuffle_rows(y, theirs, seed))
        np.testing.assert_array_equal(x, y)


def _labels(x):
    names = np.array(["low", "mid", "high"])
    return x * 2, names[x.argmax()], names[np.clip(x, 0, 2)]


def test_results_of_dtypes_no_graph_holds_run_eagerly():
    """A string array computed from the data (a lookup by a traced index, run eagerly) among
    the results crashed the call with TypeError "unknown dtype 'str32'": those calls run as
    NumPy."""
    for x in (np.array([1, 3, 2]), np.array([2, 0, 1])):
        got, expected = kiln.compile(_labels)(x), _labels(x)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1] and got[2].tolist() == expected[2].tolist()


def _eliminated_with_pivoting(a):
    a = a.copy()
    for k in range(a.shape[0] - 1):
        # a graph break per column (int() there, argmax of the moving slice, are captured)
        pivot = operator.index(np.argmax(np.abs(a[k:, k]))) + k
        a[[k, pivot]] = a[[pivot, k]]
        a[k + 1:] -= np.outer(a[k + 1:, k] / a[k, k], a[k])
    return a


@pytest.mark.parametrize("budget", ["graphs", "seconds"])
def test_a_function_past_its_graph_budget_runs_eagerly_and_is_not_traced_again(
        monkeypatch, traces, budget):
    # Each pivot pattern is a path through the breaks: a 30x30 elimination compiled ~30 graphs
    # for half a minute on its first call, then traced every call into the same limit.
    monkeypatch.setattr(kiln._retrace, "SEGMENT_LIMIT" if budget == "graphs" else
                        "SEGMENT_SECONDS", 2 if budget == "graphs" else 0.0)
    rng = np.random.default_rng(0)
    compiled = kiln.compile(_eliminated_with_pivoting)
    with pytest.warns(RuntimeWarning, match="distinct graphs around its graph breaks"):
        first = rng.standard_normal((6, 6))
        np.testing.assert_allclose(compiled(first), _eliminated_with_pivoting(first))
    settled = len(traces)
    for _ in range(3):
        a = rng.standard_normal((6, 6))
        np.testing.assert_allclose(compiled(a), _eliminated_with_pivoting(a))
    assert len(traces) == settled
