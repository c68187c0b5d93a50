"""Conformance samples for kiln/_numpy_manipulation.py: function -> f(rng) -> [(callable, arrays)]."""
import numpy as np

from conformance import one, reductions, sample_array  # noqa: F401


def shaped(function, dtypes=("float64", "int32", "bool")):
    """`function` over a (3, 4) array, a 0-d one, a size-0 (0, 3) one and a strided view."""
    def samples(rng):
        cases = []
        for dtype in dtypes:
            for shape in [(3, 4), (), (0, 3), "view"]:
                # np.asarray: a 0-d bool sample is a NumPy scalar, which kiln treats as static
                array = (sample_array(rng, dtype, (6, 4))[::2] if shape == "view"
                         else np.asarray(sample_array(rng, dtype, shape)))
                cases.append((function, (array,)))
        return cases
    return samples


def tiles(x):
    return (np.tile(x, 2), np.tile(x, (2, 1, 3)), np.tile(x, (0, 2)), np.tile(x, ()),
            np.tile(x, [1, 1]))


def repeats(x):
    results = [np.repeat(x, 2), np.repeat(x, 0), x.repeat(3, axis=-1 if x.ndim else None),
               np.repeat(x, [2], axis=0)]
    if x.ndim:
        axis = x.shape.index(3)  # a per-element repeats array along the axis of length 3
        results += [np.repeat(x, [1, 0, 2], axis=axis), x.repeat(np.array([2, 2, 2]), axis)]
    return tuple(results)


def rolls(x):
    results = [np.roll(x, 1), np.roll(x, -5), np.roll(x, (1, 2))]
    if x.ndim:
        results += [np.roll(x, -2, axis=0), np.roll(x, (1, -3), axis=(0, 1)),
                    np.roll(x, 5, axis=-1), np.roll(x, (2, 3), axis=(1, 1))]
    if x.ndim and x.size:  # a traced shift: a gather at (i - shift) mod n
        results += [np.roll(x, np.argmax(x), axis=-1)]
    return tuple(results)


# Pads wider than the array (mirrored/wrapped in several rounds) are captured from NumPy 1.25.
ROUNDS = np.lib.NumpyVersion(np.__version__) >= "1.25.0"


def pads(x):
    if x.size == 0:  # only constant padding may extend an empty axis
        wide = wrap = one = ((0, 0), (1, 2))
    elif x.ndim:
        wide, wrap, one = ((2, 5) if ROUNDS else (2, 2), (1, 2)), (4, 7) if ROUNDS else 2, 1
    else:
        wide = wrap = one = 1
    two_sided = ((1, 2), (3, 4)) if x.ndim else 7
    return (np.pad(x, 1), np.pad(x, two_sided, constant_values=two_sided),
            np.pad(x, (2, 1), "constant", constant_values=(-1.5, 2)),
            np.pad(x, wide, "edge"), np.pad(x, wide, "reflect"), np.pad(x, one, "reflect"),
            np.pad(x, wide, "reflect", reflect_type="odd"), np.pad(x, wide, "symmetric"),
            np.pad(x, wrap, "wrap"), np.pad(x, wide, "maximum"),
            np.pad(x, wide, "minimum", stat_length=2),
            np.pad(x, wide, "mean", stat_length=((1, 2), (3, 1)) if x.ndim else 2),
            np.pad(x, wide, "linear_ramp", end_values=(5, -4)),
            np.pad(x, 1, "empty")[(slice(1, -1),) * x.ndim])


SAMPLES = {np.tile: shaped(tiles), np.repeat: shaped(repeats), np.roll: shaped(rolls),
           np.pad: shaped(pads)}
