"""Loops that clamp a load's index near one end (pads, concatenations, shifted reads) run as two
loops, each with its clamps folded away (src/sched/cpu/peel_clamps.h: unit-stride loads where
g++ gathered). Results must not change: checked against NumPy around the split points, with
clamps at one end, both ends, on inner and outer axes, and on loops too short to split."""
import numpy as np
import pytest

import kiln


def shifted_sum(x):
    return np.pad(x[1:], (0, 1)) + x


def both_ends(x):
    return np.pad(x, (2, 3), mode="edge")[1:-2] * 2.0 - np.pad(x, (1, 1), mode="reflect")


def stencil(x):
    return np.concatenate([x[:1], x[2:] - 2.0 * x[1:-1] + x[:-2], x[-1:]])


def rolled(x):
    return np.roll(x, 3, axis=-1) - np.roll(x, -2, axis=0)


def moved_rows(a):
    return np.pad(a[:, 2:], ((0, 0), (0, 2))) + np.pad(a[1:], ((0, 1), (0, 0)), mode="edge")


@pytest.mark.parametrize("function", [shifted_sum, both_ends, stencil, rolled])
@pytest.mark.parametrize("size", [5, 16, 17, 1001])
def test_clamped_loads_agree_with_numpy(function, size):
    x = np.random.default_rng(size).standard_normal(size)
    np.testing.assert_allclose(kiln.compile(function)(x), function(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 40), (40, 3), (33, 65)])
def test_clamps_of_two_dimensional_loops(shape):
    a = np.random.default_rng(1).standard_normal(shape)
    np.testing.assert_allclose(kiln.compile(moved_rows)(a), moved_rows(a), rtol=1e-12)
    np.testing.assert_allclose(kiln.compile(rolled)(a), rolled(a), rtol=1e-12)


def integer_differences(x):
    for i in range(5):
        x = x[1:] - x[:-1]   # a shrinking loop's step: the shift the split was made for
    return x


def test_integer_steps_are_exact():
    x = np.random.default_rng(2).integers(-1000, 1000, 300)
    np.testing.assert_array_equal(kiln.compile(integer_differences)(x), np.diff(x, n=5))
