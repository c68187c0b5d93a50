"""`for v in x:`, `for i, v in enumerate(x):` and `for a, b in zip(x, y):` over traced arrays are
captured as range loops that index them (kiln/_loop_transform.py, sequence_loop): tracing
unrolled them (100,000 elements: 34 s of tracing, then an eager run). Other iterables keep
Python's loop."""
import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(29)


def welford(x):
    n = 0
    mean = 0.0
    m2 = 0.0
    for v in x:
        n += 1
        d = v - mean
        mean += d / n
        m2 += d * (v - mean)
    return mean, m2 / (n - 1)


def rows(X, w):
    out = []
    for row in X:
        out.append(row @ w)
    s = 0.0
    for i, r in enumerate(X, 1):
        s = s + i * r.sum()
    for k, (a, b) in enumerate(zip(w, X.sum(axis=0))):
        s += k * a * b
    return np.array(out), s


def scale_rows_in_place(X):
    for row in X:
        row *= 2       # a view: writes reach X, as NumPy's iteration gives views
    return X


def python_iterables(items, x):
    t = x * 0
    for item in items:
        t = t + item
    for v in (1.0, 2.0):
        t = t + v
    return t


def captured(function, *arguments):
    report = kiln.explain(kiln.compile(function, fullgraph=True))(*arguments)
    assert report.graph_break_count == 0, str(report)
    return report


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_iteration_over_traced_arrays_is_one_loop(rng, dtype):
    x = (rng.random(200) * 10).astype(dtype)
    report = captured(welford, x)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    for got, expected in zip(report.result, welford(x)):
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    X, w = (rng.random((6, 3)) * 4).astype(dtype), rng.random(3)
    report = captured(rows, X, w)
    assert [loop.kind for loop in report.loops] == ["loop"] * 3, str(report)
    for got, expected in zip(report.result, rows(X, w)):
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_rows_are_views_and_other_iterables_stay_python(rng):
    X = rng.random((5, 3))
    np.testing.assert_array_equal(kiln.compile(scale_rows_in_place)(X.copy()), X * 2)
    items, x = [rng.random(3), rng.random(3)], rng.random(3)
    np.testing.assert_allclose(kiln.compile(python_iterables)(items, x),
                               python_iterables(items, x))
    with pytest.raises(TypeError):
        kiln.compile(lambda x: [v for v in x.sum()])(x)


def max_subarray(x):
    best = cur = x[0]
    for v in x[1:]:             # a view: iterated as a copy (the body stores into names only)
        cur = max(v, cur + v)
        best = max(best, cur)
    return best


def offsets(x, y):
    for row in x[1:]:           # a view the body writes through: stays a view (unrolled)
        row += y
    return x


def test_views_are_iterated_as_copies_where_the_body_cannot_write(rng):
    x = rng.normal(size=100)
    report = captured(max_subarray, x)   # (and `best = cur = x[0]`: two scalars apart)
    assert [loop.kind for loop in report.loops if loop.kind != "select"] == ["loop"], str(report)
    assert report.result == max_subarray(x)
    x, y = rng.random((4, 3)), rng.random(3)
    np.testing.assert_array_equal(kiln.compile(offsets)(x.copy(), y), offsets(x.copy(), y))
