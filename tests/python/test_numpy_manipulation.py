"""np.tile, np.repeat, np.roll and np.pad in the tracer (kiln/_numpy_manipulation.py): the edge
cases the conformance samples leave out (pads wider than the array, traced fill values and
shifts, integer ramps), NumPy's exceptions, graph breaks, and fusion into one kernel."""
import numpy as np
import pytest

import kiln

from conformance import check

RNG = np.random.default_rng(11)
X = RNG.uniform(-3, 3, (3, 4))


def test_pads_wider_than_the_array_mirror_and_wrap_again():
    # NumPy pads these iteratively; every size, both reflect types, several dtypes.
    def wide(x):
        results = []
        for mode in ["reflect", "symmetric", "wrap"]:
            for kwargs in ([{}] if mode == "wrap" else [{}, {"reflect_type": "odd"}]):
                results.append(np.pad(x, ((17, 23), (5, 0)), mode, **kwargs))
        return tuple(results)

    samples = []
    for n in [1, 2, 3, 5]:
        values = RNG.integers(0, 7, (n, 2))
        samples += [(values.astype(np.float64),), (values.astype(np.int32),),
                    (values.astype(np.uint8),), (values > 3,)]
    if np.lib.NumpyVersion(np.__version__) >= "1.25.0":
        check(wide, samples)
    else:  # NumPy < 1.25 chunks wide pads differently: kiln breaks the graph and runs NumPy
        for sample in samples:
            for got, expected in zip(kiln.compile(wide)(*sample), wide(*sample)):
                np.testing.assert_array_equal(got, expected)


def test_integer_ramps_and_statistics_round_like_numpy():
    def integer(x):
        return (np.pad(x, ((1, 2), (3, 1)), "linear_ramp", end_values=(5, -4)),
                np.pad(x, 3, "linear_ramp", end_values=((1.5, 2), (-3, 40))),
                np.pad(x, 2, "linear_ramp", end_values=x[0, 0]),  # a zero step somewhere
                np.pad(x, 2, "mean"), np.pad(x, 2, "mean", stat_length=(1, 2)))
    values = RNG.integers(0, 9, (4, 3))
    check(integer, [(values.astype(np.uint8),), (values.astype(np.int32),),
                    (values.astype(np.float32),)])


def test_traced_fill_values_and_shift():
    def traced(x, shift):
        return (np.pad(x, 2, constant_values=x.max()),
                np.pad(x, ((1, 2), (3, 1)), constant_values=((x[0, 0], 7), (x[1, 1], x[2, 2]))),
                np.pad(x, (1, 3), "linear_ramp", end_values=(x.min(), x.max())),
                np.roll(x, shift, axis=1), np.roll(x, -shift), np.roll(x[:0], shift, axis=0))
    check(traced, [(X.copy(), np.array(-3)), (X.astype(np.int32), np.array(6, np.int32))])


def test_known_repeats_do_not_break_the_graph():
    # np.arange inside the function is a graph node whose value the tracer knows.
    def known(x):
        return np.repeat(x, np.arange(12)), np.repeat(x, np.array([1, 0, 2]), axis=0)
    check(known, [(X.copy(),)])


@pytest.mark.parametrize("function", [
    lambda x, r: np.repeat(x, r, axis=0),
    lambda x, r: np.pad(x, 1, "median"),
    lambda x, r: np.pad(x, 1, lambda vector, width, axis, kwargs: None),
    lambda x, r: np.roll(x, (r[0], r[1]), axis=(0, 1)),
], ids=["traced-repeats", "median", "callable", "traced-shifts"])
def test_graph_breaks(function):
    repeats = np.array([2, 0, 1])
    with pytest.raises(kiln.GraphBreak):
        kiln.compile(function, fullgraph=True)(X, repeats)
    np.testing.assert_array_equal(kiln.compile(function)(X, repeats), function(X, repeats))


@pytest.mark.parametrize("function", [
    lambda x: np.tile(x, -1), lambda x: np.tile(x, 2.0),
    lambda x: np.repeat(x, -1), lambda x: np.repeat(x, [1, 2], axis=0),
    lambda x: np.repeat(x, [[2]]), lambda x: np.repeat(x, 2, axis=2),
    lambda x: np.roll(x, 1, axis=2), lambda x: np.roll(x, [[1]], axis=0),
    lambda x: np.roll(x, (1, 2, 3), axis=(0, 1)),
    lambda x: np.pad(x, -1), lambda x: np.pad(x, 1.0), lambda x: np.pad(x, ((1, 2),) * 3),
    lambda x: np.pad(x, 1, "foo"), lambda x: np.pad(x, 1, "edge", constant_values=3),
    lambda x: np.pad(x, 1, "maximum", stat_length=0),
    lambda x: np.pad((x > 0).astype(np.uint8), 1, constant_values=((-1, 2), (3, 4))),
    lambda x: np.pad(x[:0], 1, "edge"), lambda x: np.pad(x[:0], 1, "wrap"),
])
def test_errors_are_numpys(function):
    try:
        expected = function(X)
    except Exception as error:
        with pytest.raises(type(error)):
            kiln.compile(function, fullgraph=True)(X)
    else:  # NumPy 1.x wraps Python integers out of the dtype's range (a DeprecationWarning)
        with pytest.warns(DeprecationWarning):
            np.testing.assert_array_equal(kiln.compile(function, fullgraph=True)(X), expected)


@pytest.mark.parametrize("function", [
    lambda x: np.tile(x, (2, 1, 3)), lambda x: np.repeat(x, 3, axis=1),
    lambda x: np.roll(x, (1, -2), axis=(0, 1)), lambda x: np.pad(x, ((1, 2), (3, 4)), "reflect"),
    lambda x: np.pad(x, ((7, 2), (3, 9)), "symmetric"), lambda x: np.pad(x, 5, "wrap"),
    lambda x: np.pad(x, 2, constant_values=((1, 2), (3, 4))),
], ids=["tile", "repeat", "roll", "reflect", "symmetric", "wrap", "constant"])
def test_views_fuse_into_one_kernel(function):
    report = kiln.explain(lambda x: function(x) * 2)(X)
    assert report.graphs and len(report.graphs[0].kernels) == 1, str(report)
    assert "gather" not in str(report)
