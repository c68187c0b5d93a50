"""np.lib.stride_tricks.sliding_window_view in the tracer (kiln/_numpy_layout.py): image and
signal code's windows (moving averages, convolutions, morphology) trace into the graph instead
of breaking it, with NumPy's shapes, its view semantics (read-only, follows later writes to the
array) and its errors."""
import numpy as np
import pytest

import kiln

from conformance import check

swv = np.lib.stride_tricks.sliding_window_view
RNG = np.random.default_rng(12)


def compiled(function):
    return kiln.compile(function, fullgraph=True)   # a graph break is an error


def test_windows_of_every_form():
    def windows(x, image):
        return (swv(x, 3), swv(x, 3).mean(axis=-1), swv(x, 0), swv(x, len(x)),
                swv(image, (2, 3)), swv(image, 2, axis=0), swv(image, 2, axis=-1).sum(-1),
                swv(image, (2, 2), axis=(1, 1)), swv(image, (3, 2), axis=(1, 0)),
                swv(image.T[::-1], (2, 2)),
                np.max(swv(np.pad(image, 1), (3, 3)), axis=(-2, -1)),
                np.einsum("ijkl,kl->ij", swv(image, (2, 2)), image[:2, :2]))
    check(windows, [(RNG.random(9), RNG.random((5, 6))),
                    (RNG.random(4).astype(np.float32), RNG.random((4, 4)).astype(np.float32)),
                    (RNG.integers(-9, 9, 6).astype(np.int8), RNG.integers(0, 9, (3, 7)))])


def test_a_window_view_follows_writes_and_refuses_them():
    def later_write(x):
        w = swv(x, 2)
        x[0] = 100.0
        return w.sum(-1)
    x = RNG.random(5)
    np.testing.assert_array_equal(compiled(later_write)(x.copy()), later_write(x.copy()))

    def write(x):
        swv(x, 2)[0, 0] = 1.0
    with pytest.raises(ValueError, match=r"sliding_window_view.*read-only|read-only"):
        compiled(write)(x.copy())


@pytest.mark.parametrize("window, axis", [(5, None), ((2,), None), (2, 2), (-1, None)])
def test_numpys_errors(window, axis):
    x = RNG.random((3, 3)) if window != 5 else RNG.random(4)
    with pytest.raises(Exception) as expected:
        swv(x, window, axis)
    with pytest.raises(expected.type):
        compiled(lambda x: swv(x, window, axis))(x)
