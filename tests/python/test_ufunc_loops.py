"""ufunc methods NumPy computes step by step (kiln/_ufunc_loops.py): np.maximum.accumulate and
the other accumulates of binary ufuncs, and ufunc.at of ufuncs other than a plain scatter-add,
are traced as one loop node (fullgraph: no eager step), with NumPy's values, dtypes and errors.
They ran eagerly, a graph break."""
import numpy as np
import pytest

import kiln
from conformance import check


@pytest.fixture
def rng():
    return np.random.default_rng(17)


def test_running_extremes(rng):
    def extremes(p):
        peak = np.maximum.accumulate(p)
        return (p - peak) / peak, np.minimum.accumulate(p[::-1])[::-1], np.fmax.accumulate(p)
    p = np.cumsum(rng.normal(size=300)) + 100
    p[7] = np.nan   # NaN propagates through maximum, not through fmax
    check(extremes, [(p,), (p[:50].astype(np.float32),), (np.arange(1, 9),), (p[:1],)])


def test_accumulate_along_an_axis_keeps_numpys_dtype(rng):
    def along(x):
        return (np.maximum.accumulate(x, axis=1), np.minimum.accumulate(x, axis=0),
                np.maximum.accumulate(x, axis=-1, dtype=np.float64),
                np.logical_or.accumulate(x > 2, axis=1),
                np.bitwise_xor.accumulate((x * 7).astype(np.int16), axis=0))
    x = rng.random((6, 5)) * 4
    check(along, [(x,), (x.astype(np.float32),), (x.astype(np.int8),), (x[:, :1],)])


def test_accumulate_into_out(rng):
    def into(x):
        out = np.zeros_like(x)
        np.maximum.accumulate(x, axis=0, out=out)
        return out
    check(into, [(rng.random((4, 3)),)])


def test_accumulate_errors_are_numpys(rng):
    x = rng.random((3, 4))
    for function in (lambda x: np.maximum.accumulate(x, axis=None),
                     lambda x: np.maximum.accumulate(x, axis=2),
                     lambda x: np.maximum.accumulate(x[0, 0])):
        with pytest.raises(Exception) as expected:
            function(x)
        with pytest.raises(expected.type):
            kiln.compile(function)(x)


def test_at_of_any_ufunc_applies_repeated_indices_in_turn(rng):
    i = np.array([0, 3, 3, 1, 0, -1])

    def scatters(a, v, i):
        b = np.ones(a.shape[0], a.dtype)
        np.multiply.at(b, i, 2)                        # 2 ** count per position
        np.maximum.at(a, i, v)                         # rows, a value array per row
        np.minimum.at(a, (i, i % 3), -1)               # two index arrays, a scalar
        np.negative.at(a[1:], [0, 0, 1])               # a unary ufunc, through a view
        np.multiply.at(a, 2, 0.5)                      # one integer
        return a, b
    for dtype in (np.float64, np.float32, np.int32, np.int8):
        a = (rng.random((5, 3)) * 10).astype(dtype)
        v = (rng.random((6, 3)) * 10).astype(dtype)
        check(scatters, [(a, v, i)])


def test_at_casts_each_step_back_as_numpy(rng):
    def steps(x, i):
        y = x * 1
        np.multiply.at(y, i, 2.5)    # 1 -> 2 -> 5 in an int array: a float step, cast back
        np.add.at(y, i[:2], 0.7)
        return y
    check(steps, [(np.arange(1, 5, dtype=np.int32), np.array([1, 1, 3, 0]))])


def test_at_errors_are_numpys(rng):
    x = rng.random(4)
    with pytest.raises(IndexError, match="out of bounds"):
        kiln.compile(lambda x: np.maximum.at(x, [0, 7], 1.0) or x)(x)
    with pytest.raises(ValueError):
        kiln.compile(lambda x: np.maximum.at(x, [0, 1], np.ones(3)) or x)(x)


def test_running_extremes_are_scans_with_numpys_nans_and_zeros(rng, monkeypatch):
    """np.maximum/minimum.accumulate of real arrays are kiln's cummax/cummin scans along the
    axis itself (one kernel, no loop node, no transposes; a row's loop ran 3x NumPy's time),
    keeping NumPy's NaN and its signed zeros where equal values meet."""
    graphs = []
    real = kiln._compile._kiln.compile_graph

    def noting(trace, outputs, *args, **kwargs):
        graphs.append(trace.graph_text(outputs))
        return real(trace, outputs, *args, **kwargs)
    monkeypatch.setattr(kiln._compile._kiln, "compile_graph", noting)

    def running(x):
        return (np.maximum.accumulate(x, axis=1), np.minimum.accumulate(x, axis=0),
                np.maximum.accumulate(x[:, 0]))
    x = rng.normal(size=(50, 40))
    x[3, 5] = np.nan
    x[::7], x[1::7, ::2] = 0.0, -0.0
    for sample in (x, x.astype(np.float32), (x * 10).astype(np.int32), x > 0):
        with np.errstate(invalid="ignore"):
            expected = running(sample)
        got = kiln.compile(running, fullgraph=True)(sample)
        for value, reference in zip(got, expected):
            assert value.dtype == reference.dtype
            np.testing.assert_array_equal(value, reference)
            np.testing.assert_array_equal(np.signbit(value), np.signbit(reference))
    assert graphs and all("= cummax(" in text and "= cummin(" in text and "= loop" not in text
                          and "= permute(" not in text for text in graphs)
