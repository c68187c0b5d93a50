"""Programs whose loops kiln captured but that ran eagerly, as slow as NumPy, because of how they
end or begin: `return buf[:count]` after the loop that counted (a slice bound from data ended
the trace), `return int(d.max()) if n else 0` (a conversion on one side of a conditional
expression), `np.result_type(data, x)` for the output's dtype (not traced), and a retraced call
whose first graph compiled for longer than ten eager calls (its compile counted as trace time).
Each agrees with NumPy and, where it ran eagerly, now compiles its loop."""
import types

import numpy as np
import pytest

import kiln
from test_numpy_programs_seventh import check_calls


def compact_positive(x):
    out = np.empty_like(x)
    m = 0
    for i in range(len(x)):
        if x[i] > 0:
            out[m] = x[i]
            m += 1
    return out[:m]


def compact_positive_by_count(x):
    out = np.empty_like(x)
    m = 0
    for i in range(len(x)):
        if x[i] > 0:
            out[m] = x[i]
            m += 1
    count = int(m)  # a graph break: the loop's graph runs, then the rest is traced
    return out[:count] * 2


def run_length_encode(x):
    n = len(x)
    values = np.empty(n, dtype=x.dtype)
    lengths = np.zeros(n, dtype=np.int64)
    m = 0
    i = 0
    while i < n:
        j = i
        while j < n and x[j] == x[i]:
            j += 1
        values[m] = x[i]
        lengths[m] = j - i
        m += 1
        i = j
    return values[:m], lengths[:m]


def fill_then_clear_tail(x, t):
    out = x.copy()
    k = 0
    for i in range(len(x)):
        if x[i] < t:
            out[k] = x[i]
            k += 1
    out[k:] = 0
    return out, k


def float_bound(x):
    s = x.sum()
    return x[:s]


def longest_rising_run(x):
    d = np.ones(len(x), dtype=np.int64)
    for i in range(1, len(x)):
        if x[i] > x[i - 1]:
            d[i] = d[i - 1] + 1
    return int(d.max()) if len(x) else 0


def mean_or_nan(x):
    s = 0.0
    for v in x:
        s += v
    return float(s / len(x)) if len(x) > 0 else float("nan")


def csr_matvec(indptr, indices, data, x):
    y = np.zeros(len(indptr) - 1, dtype=np.result_type(data, x))
    for i in range(len(indptr) - 1):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        y[i] = s
    return y


def weighted(x, w):
    total = np.zeros(1, dtype=np.result_type(x.sum(), 2))
    total[0] = (x * w).sum()
    return (x * w).astype(np.result_type(x, w, 1.0)), total


def _csr(rng, n, density, dtype=np.float64):
    dense = rng.random((n, n)) * (rng.random((n, n)) < density)
    nonzero = dense != 0
    indptr = np.concatenate(([0], np.cumsum(nonzero.sum(1))))
    return indptr, np.nonzero(nonzero)[1], dense[nonzero].astype(dtype)


def _report(function, *arguments):
    return kiln.explain(kiln.compile(function))(*arguments)


def test_a_slice_bound_counted_by_a_loop_agrees_with_numpy():
    rng = np.random.default_rng(0)
    check_calls(compact_positive, [(rng.standard_normal(20),), (-np.ones(4),),
                                   (rng.standard_normal(7).astype(np.float32),)])
    check_calls(run_length_encode, [(np.array([1, 1, 2, 2, 2, 3]),),
                                    (rng.integers(0, 3, 300),), (np.zeros(0, np.int64),)])
    check_calls(fill_then_clear_tail, [(rng.random(12), 0.5), (rng.random(5), 2.0)])


def test_a_slice_bound_counted_by_a_loop_runs_the_compiled_loop():
    # It ended the trace: no graph compiled, the whole call ran eagerly.
    report = _report(compact_positive, np.array([1.0, -2.0, 3.0, 4.0, -5.0, 6.0]))
    assert report.graph_count == 2 and report.graph_break_count == 1
    assert "loop" in [loop.kind for loop in report.loops]
    report = _report(run_length_encode, np.array([1, 1, 2, 2, 2, 3]))
    assert report.graph_count >= 2


def test_a_float_slice_bound_raises_numpys_error():
    with pytest.raises(TypeError) as expected:
        float_bound(np.array([1.0, 1.0]))
    with pytest.raises(TypeError) as got:
        kiln.compile(float_bound)(np.array([1.0, 1.0]))
    assert str(got.value).endswith(str(expected.value))  # (kiln names the op and line first)


def test_a_conversion_on_one_side_of_a_returned_choice_stays_traced():
    rng = np.random.default_rng(1)
    check_calls(longest_rising_run, [(rng.random(30),), (np.zeros(0),), (np.arange(6),)])
    check_calls(mean_or_nan, [(rng.random(9),), (np.zeros(0),)])
    assert _report(longest_rising_run, rng.random(30)).graph_break_count == 0
    assert _report(mean_or_nan, rng.random(9)).graph_break_count == 0


def test_result_type_of_traced_arrays_is_numpys():
    rng = np.random.default_rng(2)
    check_calls(csr_matvec, [(*_csr(rng, 8, 0.3), rng.random(8)),
                             (*_csr(rng, 30, 0.1, np.float32), rng.random(30).astype(np.float32)),
                             (*_csr(rng, 10, 0.3, np.float32), rng.integers(0, 5, 10))])
    check_calls(weighted, [(np.arange(4, dtype=np.int8), np.ones(4, np.float32)),
                           (np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16))])
    report = _report(csr_matvec, *_csr(rng, 8, 0.3), rng.random(8))
    assert report.graph_break_count == 0


@pytest.mark.usefixtures("eager_time_bounds")
def test_a_slow_first_compile_is_not_counted_as_the_traces_time(monkeypatch):
    # A retraced call's trace is bounded by 10x its eager calls' time; the compile of its first
    # graph, at its break, was counted in, so the second graph was never compiled and the
    # function settled on eager calls. A fake clock of the trace (kiln._retrace's) stands
    # still but for each compile, which lasts 100 s.
    clock = {"offset": 0.0}
    real_compile = kiln._retrace._kiln.compile_graph

    def slow_compile(*arguments, **keywords):
        compiled = real_compile(*arguments, **keywords)
        clock["offset"] += 100.0
        return compiled

    monkeypatch.setattr(kiln._retrace, "time",
                        types.SimpleNamespace(perf_counter=lambda: clock["offset"]))
    monkeypatch.setattr(kiln._retrace._kiln, "compile_graph", slow_compile)
    compiled = kiln.compile(compact_positive_by_count)
    x = np.random.default_rng(3).standard_normal(100_000)
    for _ in range(4):
        np.testing.assert_array_equal(compiled(x.copy()), compact_positive_by_count(x.copy()))
    assert len(compiled._kiln_function.segments) == 2
