"""Edge cases of kiln/_numpy_statistics.py beyond the conformance samples: NumPy's errors for bad
arguments, out=, and the documented places where kiln cannot raise NumPy's data-dependent errors."""
import numpy as np
import pytest

import kiln

from conformance import check

X = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan] * 4, [5.0, 6.0, np.nan, 0.5]])
AxisError = getattr(np, "exceptions", np).AxisError  # numpy.exceptions: NumPy >= 1.25


def compiled(function):
    return kiln.compile(function, fullgraph=True)


@pytest.mark.parametrize("function, argument", [
    (lambda x: np.diff(x, n=-1), X), (lambda x: np.diff(x[0, 0]), X),
    (lambda x: np.diff(x, axis=2), X),
    (lambda x: np.diagonal(x[0]), X), (lambda x: np.diagonal(x, 0, 1, -1), X),
    (lambda x: np.trace(x, axis1=3), X),
    (lambda x: np.average(x, weights=x[0]), X),
    (lambda x: np.average(x, axis=0, weights=x[0]), X),
    (lambda x: np.average(x, axis=(0, 0)), X),
    (lambda x: np.nanmean(x, dtype=np.int64), X),
    (lambda x: np.nanvar(x, ddof=1, correction=1), X),
    (lambda x: np.nanmax(x, where=np.array([True, False, True, True])), X),
    (lambda x: np.nanargmax(x[:0]), X),
    (lambda x: np.nanmin(x[:0], axis=0), X),
    (lambda x: np.round(x > 0, 1), X),
    (lambda x: np.round(x, 1, out=np.zeros(3)), X),
])
def test_errors_are_numpys(function, argument):
    with np.errstate(all="ignore"), pytest.raises(Exception) as expected:
        function(argument.copy())
    with pytest.raises(expected.type):
        compiled(function)(argument.copy())


def test_out():
    def fill(x):
        total, rounded, mean, diagonal = np.zeros(()), np.zeros_like(x), np.zeros(4), np.zeros(())
        np.nansum(x, out=total)
        np.round(x, 1, out=rounded)
        np.nanmean(x, axis=0, out=mean)
        np.trace(x, out=diagonal)
        return total, rounded, mean, diagonal, np.nanmax(x, axis=1, out=np.zeros(3))
    check(fill, [(X,)])


def test_out_of_ufunc_methods_and_out_made_after_a_graph_break():
    """NumPy passes a ufunc method's out= on as a tuple of one (np.add.reduce(x, out=o)); an out=
    array made by eager code after a graph break is NumPy's to write. Both were a TypeError."""
    def methods(x):
        total, peak, running = np.empty(x.shape[1]), np.empty(x.shape[1]), np.empty_like(x)
        np.add.reduce(x, axis=0, out=total)
        np.maximum.reduce(x, axis=0, out=peak)
        np.multiply.accumulate(x, axis=1, out=running)
        return total, peak, running
    y = np.abs(np.nan_to_num(X)) + 1
    check(methods, [(y,)])

    def after_break(x):
        total, running, column = np.zeros(4), np.zeros((3, 4)), np.zeros(4)
        if x.sum() > 0:   # a graph break: the arrays above are NumPy's from here on
            x = x * 2
        np.sum(x, axis=0, out=total)
        np.add.accumulate(x, out=running)
        np.add.reduce(x, axis=0, out=column)
        return total, running, column
    for got, expected in zip(kiln.compile(after_break)(y), after_break(y)):
        np.testing.assert_array_equal(got, expected)


def test_mean_and_var_with_an_integer_dtype_compute_in_it():
    """NumPy's mean with dtype=np.int8 sums in int8 (wrapping), then divides and truncates,
    and its var takes the deviations from that truncated mean in integers: kiln took the
    float mean or variance and cast it (49 where NumPy's int8 mean is -7, 915 for 916)."""
    x = (np.random.default_rng(5).random((4, 9)) * 100).astype(np.int8)
    where = np.random.default_rng(6).random((4, 9)) > 0.3

    def means(x):
        return (np.mean(x, dtype=np.int8), x.mean(axis=1, dtype=np.int8),
                np.mean(x, axis=0, dtype=np.uint8, keepdims=True), np.mean(-x, dtype=np.int8),
                np.mean(x, axis=1, dtype=np.int16, where=where), np.mean(x > 50, dtype=bool),
                np.var(x, dtype=np.int8), np.var(x, dtype=np.int64),
                np.var(x, axis=0, dtype=np.int32, keepdims=True, ddof=1),
                np.var(x, axis=1, dtype=np.int64, where=where), np.std(x, dtype=np.int32))
    check(means, [(x,)])
    with pytest.raises(TypeError, match="sqrt"):   # NumPy's: sqrt's float into the int array
        compiled(lambda x: np.std(x, axis=1, dtype=np.int16))(x)


def test_diagonal_is_a_read_only_result_that_stays_independent():
    def function(x):
        d = np.diagonal(x).copy()
        d += 1
        return x, d, x.diagonal(-1), x.trace(1)
    check(function, [(np.arange(12.0).reshape(3, 4),)])


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint16, np.int32, np.float32])
@pytest.mark.parametrize("columns", [1, 7, 173])
def test_column_sums_of_narrow_dtypes(dtype, columns):
    """Column sums whose SIMD lanes (the columns a vector holds) come out as one lane: a 16-bit
    sum over 173 columns did not compile (its result read the lane loop's variable outside it;
    found by the fuzzer, seed 202)."""
    x = (np.arange(197 * columns) % 7).astype(dtype).reshape(197, columns)
    for function in (lambda x: np.sum(x, axis=0), lambda x: np.sum(x - x, axis=0, dtype=x.dtype)):
        np.testing.assert_array_equal(compiled(function)(x), function(x))


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0",
                    reason="var/std's mean= is NumPy 2's")
def test_var_and_std_about_a_given_mean():
    """NumPy 2's var/std(mean=m) take the deviations from m (broadcast, promoted with the data);
    kiln ignored m and used the data's own mean (a silently wrong variance)."""
    rng = np.random.default_rng(7)
    x = rng.random((5, 4))

    def moments(x):
        m = x.mean(axis=0, keepdims=True) + 0.25
        return (np.var(x, mean=0.3), np.std(x, axis=0, mean=m), x.var(axis=0, mean=m, ddof=1),
                np.std(x, axis=1, mean=x.mean(axis=1, keepdims=True) - 1, keepdims=True),
                np.var(x, axis=1, mean=x[:, :1], where=x > 0.2),
                np.var(x, axis=0, mean=np.float64(0.5), dtype=np.float32))
    check(moments, [(x,), (x.astype(np.float32),), ((x * 10).astype(np.int16),), (x > 0.5,)])
