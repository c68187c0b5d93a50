"""Edge cases of NumPy's API that once gave a confusing TypeError about TracedArray or a wrong
error: each now matches NumPy or is reported as kiln's, naming the user's line."""
import numpy as np
import pytest

import kiln


def both(function, *arguments):
    """The compiled and the eager result, or the exception class each raised."""
    def run(callable_):
        try:
            return callable_(*arguments)
        except Exception as error:  # noqa: BLE001 - the class is what is compared
            return type(error)
    return run(kiln.compile(function)), run(function)


@pytest.mark.parametrize("function, shape", [
    (lambda x: x.min(initial=5.0), (0,)),
    (lambda x: x.max(initial=-1.0), (0,)),
    (lambda x: np.max(x, axis=0, initial=-1.0), (0, 3)),
    (lambda x: np.min(x, axis=1, initial=5.0, keepdims=True), (2, 0)),
    (lambda x: np.max(x, axis=(0, 1), initial=7), (0, 0, 4)),
    (lambda x: np.min(x, axis=1, initial=5.0), (0, 3)),
])
def test_empty_max_min_with_initial_is_initial(function, shape):
    compiled, eager = both(function, np.ones(shape))
    np.testing.assert_array_equal(compiled, eager)
    assert np.asarray(compiled).shape == np.asarray(eager).shape


def test_empty_max_min_without_initial_raises_like_numpy():
    compiled, eager = both(lambda x: x.min(), np.ones((0,)))
    assert compiled is eager is ValueError


@pytest.mark.parametrize("shape", [(-2, 3), (3, -7), (-1,), (2, -1, 1)])
def test_any_negative_extent_is_the_unknown_dimension(shape):
    compiled, eager = both(lambda x: x.reshape(shape), np.arange(6.0))
    np.testing.assert_array_equal(compiled, eager)


def test_two_unknown_dimensions_raise_numpys_error_with_the_line():
    with pytest.raises(ValueError, match=r"test_trust_numpy_edges.py:\d+: can only specify one"):
        kiln.compile(lambda x: x.reshape(-1, -2))(np.arange(6.0))


@pytest.mark.parametrize("function", [
    lambda x: x * 1j,
    lambda x: 1j + x,
    lambda x: x + complex(1, 2),
    lambda x: x - np.complex64(2),
    lambda x: np.sqrt(x.astype(complex)),
    lambda x: np.abs(x * (1 + 1j)),
])
def test_complex_scalars_match_numpy(function):
    compiled, eager = both(function, np.arange(3.0))
    np.testing.assert_allclose(compiled, eager)


def test_complex_op_kiln_does_not_lower_names_the_op_and_line_under_fullgraph():
    z = np.arange(3.0) * 1j
    np.testing.assert_allclose(kiln.compile(lambda x: x * 1j, fullgraph=True)(np.arange(3.0)), z)
    with pytest.raises(kiln.Unsupported, match=r"max.*test_trust_numpy_edges.py:\d+.*complex"):
        kiln.compile(lambda x: np.max(x * 1j), fullgraph=True)(np.arange(3.0))


@pytest.mark.parametrize("function", [np.triu, np.tril])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_triangle_of_a_vector_is_numpys_square(function, k):
    """NumPy's tri(*m.shape[-2:]) makes a 1-d m the rows of a square; kiln raised ValueError."""
    compiled, eager = both(lambda x: function(x, k), np.arange(1.0, 6.0))
    np.testing.assert_array_equal(compiled, eager)
    assert compiled.shape == eager.shape == (5, 5)
