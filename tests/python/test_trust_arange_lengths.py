"""np.arange at the edges of its length computation: an infinite or underflowing step, an
infinite or NaN bound, a length past intp. NumPy gives one element, none, or a ValueError
naming the problem; kiln gave an empty or NaN result, or Python's OverflowError of int(inf)
naming neither the op nor the line."""
import numpy as np
import pytest

import kiln


@pytest.mark.parametrize("start, stop, step", [
    (0, 1, np.inf), (0, -1, -np.inf), (0, 1e-300, 1e300), (0.0, 5e-324, 2.0),
    (0, -1e-300, 1e300), (5, 5, np.inf), (1, 1.3, 0.1), (10, 0, -3),
    (0, 2**63 - 1, 2**62)])
def test_lengths_and_values_are_numpys(start, stop, step):
    # np.arange(0, 1, inf) is [0.]: the quotient 1 / inf underflowed from a nonzero distance.
    def ramp(x):
        return np.arange(start, stop, step) + x
    expected, result = ramp(0.0), kiln.compile(ramp)(0.0)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("start, stop, step, message", [
    (0, np.inf, 1, "Maximum allowed size exceeded"),
    (0, 1e300, 1e-300, "Maximum allowed size exceeded"),
    (0, np.nan, 1, "arange: cannot compute length"),
    (0, np.inf, np.inf, "arange: cannot compute length")])
def test_lengths_numpy_cannot_make_are_its_value_error_naming_the_line(start, stop, step,
                                                                       message):
    def ramp(x):
        return np.arange(start, stop, step) + x
    with pytest.raises(ValueError, match=message):
        ramp(0.0)
    with pytest.raises(ValueError, match=message) as raised:
        kiln.compile(ramp)(0.0)
    assert "arange" in str(raised.value) and "test_trust_arange_lengths.py:" in str(raised.value)
