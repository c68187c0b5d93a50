"""A trace that grows past kiln._trace_context.MOST_TRACED_NODES operations ends, and the
function runs eagerly for those guards, with a RuntimeWarning saying why. A Python loop kiln
cannot capture (its source unavailable, as for a function made by exec; a `global` statement)
is traced unrolled: a running variance over 100,000 elements traced for two minutes, then ran
eagerly all the same (its source past kiln's bound). Captured loops are one node whatever their
length, and never reach the bound."""
import inspect
import warnings

import numpy as np
import pytest

import kiln
from kiln import _trace_context


def running_variance(xs):
    mean, m2 = 0.0, 0.0
    for i, x in enumerate(xs, 1):
        d = x - mean
        mean += d / i
        m2 += d * (x - mean)
    return mean, m2 / (len(xs) - 1)


def _made_by_exec():
    """running_variance made again by exec: no source file, so kiln cannot capture its loop."""
    namespace = {"np": np}
    exec(inspect.getsource(running_variance), namespace)  # noqa: S102
    return namespace["running_variance"]


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(_trace_context, "MOST_TRACED_NODES", 3000)


def test_an_unrolled_loop_past_the_bound_runs_eagerly_and_says_why(small_bound, traces):
    unrolled = _made_by_exec()
    x = np.random.default_rng(0).standard_normal(5000)
    compiled = kiln.compile(unrolled)
    with pytest.warns(RuntimeWarning, match="runs eagerly: its trace passed 3000 operations"):
        got = compiled(x)
    np.testing.assert_allclose(got, running_variance(x), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        np.testing.assert_allclose(compiled(x), running_variance(x), rtol=1e-12)
    assert len(traces) == 1  # later calls of these guards run eagerly, never traced again
    with pytest.raises(kiln.GraphBreak, match="its trace passed 3000 operations"):
        kiln.compile(unrolled, fullgraph=True)(x)


def test_a_captured_loop_of_any_length_stays_in_the_graph(small_bound):
    x = np.random.default_rng(1).standard_normal(20000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kiln.compile(running_variance, fullgraph=True)(x)
    np.testing.assert_allclose(got, running_variance(x), rtol=1e-9)
