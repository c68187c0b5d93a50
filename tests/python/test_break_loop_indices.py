"""A loop kiln unrolls around a graph break (a data-dependent `if` inside `for i in range(n)`)
reads x[i] at every iteration: the index is fed as a graph input after the break
(kiln._break_indices), so the iterations' segments share one compiled graph whatever n, and
each still reads its own element."""
import numpy as np
import pytest

import kiln


def rsi_steps(gain, loss, period=14):
    # RSI's Wilder smoothing (tests/python/test_numpy_programs_fourteenth.py's rsi) from the
    # first values: no mean, whose summation order is not NumPy's, so results compare exactly.
    avg_g, avg_l = gain[0], loss[0]
    out = []
    for i in range(1, len(gain)):
        avg_g = (avg_g * (period - 1) + gain[i]) / period
        avg_l = (avg_l * (period - 1) + loss[i]) / period
        if avg_l == 0:
            out.append(100.0)
        else:
            out.append(100.0 - 100.0 / (1.0 + avg_g / avg_l))
    return np.array(out)


def rsi_arguments(n, seed=0):
    delta = np.diff(100 + np.random.default_rng(seed).standard_normal(n + 1).cumsum())
    loss = np.where(delta < 0, -delta, 0.0)
    loss[: n // 3] = 0.0  # both sides of the branch are taken
    return np.where(delta > 0, delta, 0.0), loss


def graphs_and_result(fn, *args):
    explained = kiln.explain(fn)(*args)
    return len(explained.graphs), explained.result


def test_graph_count_does_not_grow_with_the_loop_length():
    counts = []
    for n in (30, 90):
        count, result = graphs_and_result(rsi_steps, *rsi_arguments(n))
        np.testing.assert_array_equal(result, rsi_steps(*rsi_arguments(n)))
        counts.append(count)
    assert counts[0] == counts[1] <= 4, counts  # was one graph per iteration: 18 then hit 64


def test_compiled_calls_equal_numpy_and_reuse_their_graphs():
    compiled = kiln.compile(rsi_steps)
    for n, seed in ((40, 1), (40, 2), (120, 3)):
        arguments = rsi_arguments(n, seed)
        np.testing.assert_array_equal(compiled(*arguments), rsi_steps(*arguments))


def reads_each_end(x):
    # The index's value matters: x[i] and x[-1 - i] are different elements, the branch on them
    # picks what is kept, and the same segment text must read other places every time. (A
    # Python float on one side: kiln unrolls the loop, breaking at the branch.)
    out = []
    for i in range(len(x) // 2):
        if x[i] > x[-1 - i]:
            out.append(x[i] * 2.0)
        else:
            out.append(-1.0)
    return np.array(out)


def test_each_iteration_reads_its_own_elements():
    x = np.random.default_rng(4).standard_normal(60)
    count, result = graphs_and_result(reads_each_end, x)
    np.testing.assert_array_equal(result, reads_each_end(x))
    assert count <= 4
    y = np.arange(60.0)[::-1].copy()  # the other side of the branch everywhere
    np.testing.assert_array_equal(kiln.compile(reads_each_end)(y), reads_each_end(y))


def rows_and_writes(a):
    # A row x[i] (a view), a 2-d element and a write out[i] = ..., after a break.
    out = np.zeros(a.shape[0])
    kept = []
    for i in range(a.shape[0]):
        row = a[i]
        if row[0] > 0:
            out[i] = row[0] * row[2]
            kept.append(row[1])
        else:
            out[i] = a[i, 1] - a[i, -1]
            kept.append(0.0)
    return out, np.array(kept)


def test_rows_elements_and_writes_after_a_break():
    a = np.random.default_rng(5).standard_normal((40, 3))
    count, result = graphs_and_result(rows_and_writes, a)
    for got, expected in zip(result, rows_and_writes(a)):
        np.testing.assert_array_equal(got, expected)
    count_longer, _ = graphs_and_result(rows_and_writes, np.vstack([a, a]))
    assert count_longer == count <= 8  # (a segment per pair of sides taken in a row)


def reads_past_the_end(x, stop):
    total = 0.0
    for i in range(stop):
        if x[0] > 0:
            total += x[i]
        else:
            total -= x[i]
    return total


def test_an_index_out_of_range_raises_numpys_error():
    x = np.ones(5)
    with pytest.raises(IndexError, match="out of bounds"):
        kiln.compile(reads_past_the_end)(x, 6)
    assert kiln.compile(reads_past_the_end)(x, 5) == reads_past_the_end(x, 5)
