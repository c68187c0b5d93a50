"""Graph breaks: continuation through the driver's graph_break (retrace entries, segment memo),
eager fallback through GraphBreakSignal, fullgraph errors, logs and explain."""
import numpy as np
import pytest

import kiln


def branchy(x):
    if (x.sum() > 0.0):  # bool() of a traced value: a graph break
        return x * 2.0
    return x - 1.0


def test_break_continues_and_results_equal_eager(standin):
    f = kiln.compile(branchy)
    positive, negative = np.arange(1.0, 4.0), -np.arange(1.0, 4.0)
    np.testing.assert_array_equal(f(positive), positive * 2)
    np.testing.assert_array_equal(f(negative), negative - 1)  # same guards, other branch
    np.testing.assert_array_equal(f(positive + 1), (positive + 1) * 2)  # retraced, memo hits
    assert len(f._kiln_function.cache) == 1  # one entry: guards never look at the data
    assert len(f._kiln_function.segments) == 3  # the prefix and each branch, compiled once


def test_break_is_logged_with_reason_and_line(standin, capfd):
    kiln.set_logs("graph_breaks")
    kiln.compile(branchy)(np.ones(2))
    err = capfd.readouterr().err
    assert "graph break in branchy: bool() of a traced array at test_graph_breaks.py:10" in err


def test_fullgraph_raises_graph_break_naming_the_line(standin):
    f = kiln.compile(branchy, fullgraph=True)
    with pytest.raises(kiln.GraphBreak, match=r"bool\(\) of a traced array at "
                                              r"test_graph_breaks\.py:10"):
        f(np.ones(2))


def item_user(x):
    scale = (x * 1.0).item()  # GraphBreakSignal: the call runs eagerly
    return x * scale


def test_signal_break_runs_eagerly_and_is_cached(standin):
    f = kiln.compile(item_user)
    x = np.array([3.0])
    np.testing.assert_array_equal(f(x), x * 3.0)
    traces = standin.StandIn.traces
    np.testing.assert_array_equal(f(np.array([4.0])), [16.0])
    assert standin.StandIn.traces == traces  # the eager entry answered without retracing
    with pytest.raises(kiln.GraphBreak, match=r"item\(\) of a traced array at "
                                              r"test_graph_breaks\.py:\d+"):
        kiln.compile(item_user, fullgraph=True)(x)


def test_explain_counts_graphs_and_breaks(standin):
    report = kiln.explain(branchy)(np.ones(3))
    assert report.graph_count == 2 and report.graph_break_count == 1
    (reason,) = report.break_reasons
    assert reason.reason == "bool() of a traced array"
    assert reason.location == "test_graph_breaks.py:10"
    text = str(report)
    assert "Graph Break Count: 1" in text and "test_graph_breaks.py:10" in text
    np.testing.assert_array_equal(report.result, np.full(3, 2.0))

    eager_report = kiln.explain(item_user)(np.array([2.0]))
    assert eager_report.graph_count == 0 and eager_report.graph_break_count == 1
