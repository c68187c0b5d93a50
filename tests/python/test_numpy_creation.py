"""Creation inside a compiled function (kiln/_numpy_creation.py): every captured NumPy creation
function is compared with eager NumPy (values and dtypes), is built as graph nodes (no graph
break under fullgraph=True, iota instead of an embedded array), and NumPy is left unchanged."""
import threading
import warnings

import numpy as np
import pytest

import kiln
from kiln import _numpy_creation

from conformance import check

X = np.linspace(-2.0, 3.0, 12).reshape(3, 4)

# name -> functions of one traced float64 array (3, 4) that use it; compared with NumPy.
SAMPLES = {
    "zeros": [lambda x: np.zeros(x.shape) + x, lambda x: np.zeros(5, dtype=np.int32),
              lambda x: np.zeros((2, 0)), lambda x: np.zeros(())],
    "ones": [lambda x: np.ones((3, 1), np.float32) * x, lambda x: np.ones(4, dtype=bool)],
    "empty": [lambda x: np.empty_like(x, dtype=np.int32) * 0 + np.empty(4, np.int64) * 0],
    "full": [lambda x: np.full((2, 3), 7), lambda x: np.full(4, 2.5, np.float32),
             lambda x: np.full((3, 4), x[0]), lambda x: np.full((2, 4), [1, 2, 3, 4]),
             lambda x: np.full(3, True)],
    "arange": [lambda x: np.arange(4) + x, lambda x: np.arange(2, 9, 3),
               lambda x: np.arange(1.5, 4, 0.25), lambda x: np.arange(5, dtype=np.float32),
               lambda x: np.arange(10, 0, -3), lambda x: np.arange(3, 3),
               lambda x: np.arange(0.1, 1.0, 0.1, dtype=np.float32),
               lambda x: np.arange(np.int8(4))],
    "linspace": [lambda x: np.linspace(0, 1, 7), lambda x: np.linspace(-1, 5, 4, endpoint=False),
                 lambda x: np.linspace(2, 10, 5, dtype=np.int32),
                 lambda x: np.linspace(x[0], x[1], 3), lambda x: np.linspace(0, 3, 1),
                 lambda x: np.linspace(1, 2, 0), lambda x: np.linspace(x[0], 9, 4, axis=1),
                 lambda x: np.linspace(0, 1, 5, retstep=True)[0]],
    "logspace": [lambda x: np.logspace(0, 3, 4), lambda x: np.logspace(0, 1, 3, base=2.0,
                                                                          dtype=np.float32)],
    "eye": [lambda x: np.eye(3), lambda x: np.eye(3, 5, k=2, dtype=np.int64),
            lambda x: np.eye(3, 4, k=-1, dtype=bool) & (x > 0)],
    "identity": [lambda x: np.identity(3) @ x, lambda x: np.identity(2, dtype=np.int8)],
    "array": [lambda x: np.array([x[0, 0], 1.0, x[1, 1]]), lambda x: np.array(x),
              lambda x: np.array([x[0], x[1]], dtype=np.float32), lambda x: np.array(x, np.int32)],
    "asarray": [lambda x: np.asarray(x) + 1, lambda x: np.asarray([x[0], x[2]]),
                lambda x: np.asarray(x, dtype=np.float32)],
    "asanyarray": [lambda x: np.asanyarray(x) * 2],
    "ascontiguousarray": [lambda x: np.ascontiguousarray(x.T),
                          lambda x: np.ascontiguousarray(x[0, 0], dtype=np.float32)],
    "asfortranarray": [lambda x: np.asfortranarray(x.T) + 1, lambda x: np.asfortranarray(x[0, 0])],
    "require": [lambda x: np.require(x, np.float32, "F"), lambda x: np.require(x[1:], None, "O")],
}


def test_every_captured_function_has_samples():
    assert set(SAMPLES) == set(_numpy_creation.CAPTURED)


@pytest.mark.parametrize("name", sorted(_numpy_creation.CAPTURED))
def test_creation_matches_numpy(name):
    functions = SAMPLES[name]
    check(lambda x: tuple(f(x) for f in functions), [(X.copy(),)])


def test_created_arrays_are_graph_nodes():
    def fill(x):
        out = np.zeros(x.shape[0] + 1)
        out[1:] = x             # a traced value written into a created array: no graph break
        return out + np.arange(x.shape[0] + 1)

    x = np.arange(6.0)
    np.testing.assert_array_equal(kiln.compile(fill, fullgraph=True)(x), fill(x))
    report = str(kiln.explain(fill)(x))
    assert "iota" in report and "Graph Break Count: 0" in report


def test_control_flow_on_created_arrays_uses_their_values():
    def loop(x):
        total = x[0] * 0
        for i in np.arange(3):      # known values: no graph break, static indices
            total = total + x[i]
        if np.eye(2)[0, 0]:
            total = total * 2
        return total, [int(v) for v in np.arange(2, 5)]

    x = np.array([1.0, 2.0, 4.0, 8.0])
    got = kiln.compile(loop, fullgraph=True)(x)
    assert got[0] == 14.0 and got[1] == [2, 3, 4]
    assert "gather" not in str(kiln.explain(loop)(x))


def test_mutated_created_array_is_not_treated_as_known():
    def mutate(x):
        a = np.zeros(3)
        a[1] = x[0]
        positive = bool(a[1] > 0)  # needs the traced value: a real graph break
        return positive            # (a returned bool(...) itself would stay traced)

    with pytest.raises(kiln.GraphBreak):
        kiln.compile(mutate, fullgraph=True)(np.ones(2))
    assert kiln.compile(mutate)(np.ones(2)) is True


def test_constant_results_keep_their_shape():
    got = kiln.compile(lambda x: (np.array(2.0), np.float32(3), np.ones((1, 2))))(np.ones(3))
    assert [np.shape(v) for v in got] == [(), (), (1, 2)]
    assert got[1].dtype == np.float32


def test_numpy_is_unchanged_outside_traces():
    originals = {name: getattr(np, name) for name in _numpy_creation.CAPTURED}
    kiln.compile(lambda x: np.zeros(3) + x)(np.ones(3))
    assert all(getattr(np, name) is original for name, original in originals.items())


def test_other_threads_keep_eager_numpy():
    seen = []
    started, release = threading.Event(), threading.Event()

    def worker():
        started.wait()
        seen.append(type(np.zeros(2)))
        release.set()

    def traced(x):
        started.set()
        release.wait(5)          # the other thread creates an array while this trace runs
        return x + 1

    thread = threading.Thread(target=worker)
    thread.start()
    kiln.compile(traced)(np.ones(2))
    thread.join()
    assert seen == [np.ndarray]


def test_bad_creation_arguments_raise_numpy_errors():
    with pytest.raises(ValueError, match="negative dimensions"):
        kiln.compile(lambda x: np.zeros(-1) + x)(np.ones(1))
    with pytest.raises(ValueError, match="Number of samples"):
        kiln.compile(lambda x: np.linspace(0, 1, -2) + x)(np.ones(1))


@pytest.mark.parametrize("fill", [300, -1, 2**70, 300.0, 255])
def test_creation_converts_python_ints_as_numpy(fill):
    """np.full / np.full_like / np.array / np.arange of a Python int the dtype cannot hold:
    NumPy 2's OverflowError (NumPy 1.x wraps it; both refuse ints past 64 bits, and arange
    checks only the values it makes), where kiln wrapped it silently."""
    x = np.arange(3, dtype=np.uint8)

    def filled(x):
        return (np.full_like(x, fill), np.full((2,), fill, np.uint8),
                np.array([x[0], fill], dtype=np.uint8),
                np.arange(-fill, 2, dtype=np.uint8) if isinstance(fill, int) else x,
                np.arange(-fill, -fill - 3, dtype=np.uint8) if isinstance(fill, int) else x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # NumPy 1.x's, for the wrapping
        try:
            expected = filled(x)
        except OverflowError:
            named = r"in np\.(full|array|arange) at .*test_numpy_creation"
            with pytest.raises(OverflowError, match=named):
                kiln.compile(filled)(x)
            return
        got = kiln.compile(filled)(x)
    for value, reference in zip(got, expected):
        assert value.dtype == reference.dtype
        np.testing.assert_array_equal(value, reference)


def lookup(x, rule):
    table = np.array([(rule >> i) & 1 for i in range(8)], dtype=np.uint8)
    coef = np.asarray([0.5, 1.5, -1.0])
    total = 0.0
    for i in range(x.shape[0]):
        total = total + coef[i % 3] * x[i]
    return table[x % 8], total


def test_arrays_of_plain_data_are_traced_constants():
    """np.array of plain data (a lookup table, coefficients) is a traced constant of known
    value, as np.zeros is: indexing it by a traced index was NumPy's conversion of the index, a
    graph break (and the loop around it ran as Python)."""
    x = np.arange(10)
    report = kiln.explain(kiln.compile(lookup, fullgraph=True))(x, 30)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    for rule in (30, 110):
        got, expected = kiln.compile(lookup)(x, rule), lookup(x, rule)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1]
    assert kiln.compile(lambda x: np.array(["a", "b"])[x])(np.array([1, 0])).tolist() == ["b", "a"]


@pytest.mark.parametrize("shape", [np.array([2, 3]), np.array([6], np.int32), np.array([-1, 2])])
def test_an_integer_array_as_a_shape(shape):
    # NumPy reads any sequence of integers as a shape; an array argument (or a global array)
    # raised TypeError "expected a sequence of integers" (x.reshape: "only integer scalar
    # arrays can be converted to a scalar index")
    def fn(x, s):
        fixed = s if s.min() > 0 else np.abs(s) * 3
        return np.zeros(fixed), x.reshape(s), np.full(fixed, 2.0), np.reshape(x, s)
    compiled = kiln.compile(fn)
    x = np.arange(6.0)
    for _ in range(2):
        for expected, got in zip(fn(x, shape), compiled(x, shape)):
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
