"""Lists of traced arrays handed to NumPy where it takes one array (kiln/_numpy_sequences.py):
NumPy converted the list itself, a graph break at each traced element; now the traced
function's calls make it the stack NumPy's asarray would make, in the graph (fullgraph: no
break). The functions are module-level: the compiled function's own calls are rewritten."""
import numpy as np
import pytest

import kiln
from numpy import mean as imported_mean


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def compare(function, *arguments):
    got = kiln.compile(function, fullgraph=True)(*arguments)
    expected = function(*arguments)
    for value, reference in zip(got, expected):
        reference = np.asarray(reference)
        assert value.dtype == reference.dtype and value.shape == reference.shape
        np.testing.assert_allclose(value, reference, rtol=1e-5)


def reductions(a, b):
    return (np.mean([a, b], axis=0), np.sum((a, b), axis=0), np.max([a.max(), b.min(), 0.5]),
            np.std([a, b, a * b], axis=1), np.argmax([a, b], axis=0),
            np.average([a, b], axis=0, weights=[0.25, 0.75]), imported_mean([a[0], b[1]]),
            np.any([a > 0.9, b < 0.1], axis=0), np.prod([[a[0], b[0]], [b[1], a[1]]]))


def test_reductions_of_lists(rng):
    a, b = rng.random((4, 3)), rng.random((4, 3))
    for dtype in (np.float64, np.float32, np.int32):
        compare(reductions, (a * 9).astype(dtype), (b * 9).astype(dtype))


def ensemble(x, w, members):
    predictions = []
    for k in range(3):
        predictions.append(np.tanh(x * w[k]))
    return (np.mean(predictions, axis=0), np.var(predictions, axis=0),
            np.max(members, axis=0))


def test_lists_built_in_a_loop_or_passed_in(rng):
    compare(ensemble, rng.random((5, 2)), rng.random(3), [rng.random(2), rng.random(2)])


def geometry(dx, dy):
    return (np.linalg.norm([dx, dy], axis=0), np.cov([dx, dy]), np.corrcoef([dx, dy])[0, 1],
            np.transpose([dx, dy]), np.diff([dx, dy], axis=0), np.clip([dx, dy], 0.2, 0.8),
            np.where([dx > dy, dy > dx], 1.0, [dx, dy]))


def test_other_functions_of_lists(rng):
    compare(geometry, rng.random(6), rng.random(6))


def joined(a, b):
    return (np.concatenate([a, b[:2]]), np.stack((a, b), axis=1), np.vstack([a, b]),
            np.select([a > 0.5, b > 0.5], [a, b], -1.0))


def test_functions_that_take_the_items_still_do(rng):
    compare(joined, rng.random((3, 2)), rng.random((3, 2)))


def ufunc_methods(a, b, c):
    masks = [a > 0.3, b > 0.3, c > 0.3]
    return (np.maximum.reduce([a, b, c]), np.logical_and.reduce(masks),
            np.minimum.accumulate((a, b, c), axis=0), np.add.reduce([a, b], axis=1),
            np.multiply.outer([a[0, 0], b[0, 0]], [c[0, 1], 2.0]), np.maximum([a, b], c))


def test_ufunc_methods_of_lists(rng):
    for dtype in (np.float64, np.float32):
        compare(ufunc_methods, *(rng.random((3, 4)).astype(dtype) for _ in range(3)))


def test_ragged_lists_raise_as_numpy(rng):
    a, b = rng.random(3), rng.random(4)
    with pytest.raises(ValueError):
        np.mean([a, b], axis=0)
    with pytest.raises(ValueError):
        kiln.compile(lambda a, b: np.mean([a, b], axis=0))(a, b)


def pairs(z, rho):
    x = y = 0.0
    out = np.zeros((z.shape[0], 2))
    for i in range(z.shape[0]):
        x = rho * y + z[i, 0]
        y = rho * x + z[i, 1]
        out[i] = x, y       # a tuple of traced numbers, stored as a row
    return out


def test_lists_of_traced_numbers_as_values_and_operands(rng):
    """Any list or tuple holding traced values that kiln converts (an assigned value, an
    operand of an operator or a ufunc, np.where's choices) is their stack: NumPy's conversion
    was a graph break (a Gibbs sampler's `out[i] = x, y`: a graph per iteration)."""
    report = kiln.explain(kiln.compile(pairs, fullgraph=True))(rng.normal(size=(50, 2)), 0.8)
    assert [loop.kind for loop in report.loops] == ["loop"], str(report)
    z = rng.normal(size=(50, 2))
    np.testing.assert_allclose(kiln.compile(pairs)(z, 0.8), pairs(z, 0.8))
    operations = (lambda a, b: a + [a.max(), b.min(), 1.0],   # lambdas: not rewritten
                  lambda a, b: np.maximum(a, (b.min(), a.max(), 0.5)),
                  lambda a, b: np.where(a > 0.5, [a.max(), b.min(), 0.0], a),
                  lambda a, b: np.subtract([b.max(), 2], a[:2]))
    for dtype in (np.float64, np.float32, np.int16):
        a, b = (rng.random(3) * 9).astype(dtype), (rng.random(3) * 9).astype(dtype)
        for operation in operations:
            got, expected = kiln.compile(operation, fullgraph=True)(a, b), operation(a, b)
            assert got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected)


def blocks(a, b):
    return np.block([[a, b], [b, a]])


def block_of_a_tuple(a, b):
    return np.block((a, b))     # NumPy: only lists arrange blocks (TypeError)


def test_functions_of_sequences_keep_numpys_meaning(rng):
    """np.block arranges a list's items (kiln runs it eagerly): the list must reach it as the
    user's list, not as one stacked array, and a tuple stays a tuple (NumPy's TypeError)."""
    a, b = rng.random((2, 2)), rng.random((2, 2))
    np.testing.assert_array_equal(kiln.compile(blocks)(a, b), blocks(a, b))
    with pytest.raises(TypeError):
        block_of_a_tuple(a, b)
    with pytest.raises(TypeError):
        kiln.compile(block_of_a_tuple)(a, b)
