"""A loop that may return an array early (`if k[i] > 0: return M`), then a loop that writes the
same array in place: the loop after runs where the first did not return, and the function's
result is the array it wrote. The scheduler carried that array as two values of one loop, and
the second one's buffer was never written (uninitialized memory came back)."""
import numpy as np
import pytest

import kiln
from kiln import _branch_capture


def return_then_loop_on_argument(x, k, M):
    for i in range(3):
        if k[i] > 0:
            return M
    for e in range(4):
        M[e, 2] += x[2] * 0.375
    return M


def return_then_loop_on_copy(x, k, M):
    M = M.copy()
    for i in range(3):
        if k[i] > 0:
            return M
    for e in range(4):
        M[3, 2] += x[2] * 0.375
    return M


@pytest.mark.parametrize("form", ["select", "loops", None])
@pytest.mark.parametrize("function", [return_then_loop_on_argument, return_then_loop_on_copy])
def test_the_loop_after_an_early_return_writes_the_result(function, form, monkeypatch):
    monkeypatch.setattr(_branch_capture, "BRANCH_FORM", form)
    compiled = kiln.compile(function)
    for seed in range(6):
        data = np.random.default_rng(seed)
        x, k, M = data.standard_normal(4), data.integers(-3, 2, 3), data.standard_normal((6, 6))
        expected_M, actual_M = M.copy(), M.copy()
        expected = function(x.copy(), k.copy(), expected_M)
        actual = compiled(x.copy(), k.copy(), actual_M)
        np.testing.assert_array_equal(actual, expected)
        np.testing.assert_array_equal(actual_M, expected_M)  # the argument written as NumPy does
