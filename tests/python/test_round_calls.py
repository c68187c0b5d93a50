"""Python's round(x) of a traced number (`out[i] = round(x[i] / tick) * tick`, a bin index
`round(v * (n - 1))`): it asked for the value, a graph break in every iteration, so the loop was
unrolled and the function ran as NumPy does. It is now traced like math.floor
(kiln._math_calls): half to even as Python's, a Python int; round of an integer is the integer;
NaN and infinity run the call again eagerly, where Python raises; round(x, n) stays NumPy's
scalar round."""
import math

import numpy as np
import pytest

from test_numpy_programs_sixth import check_calls, loop_kinds


def round_to_ticks(x, tick):
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = round(x[i] / tick) * tick
    return out


def rounded_total(x):
    total = 0
    for v in x:
        total += round(v)
    return total, round(x.sum()), round(x[0], 2)


def bins_by_round(x, n):
    h = np.zeros(n, dtype=np.int64)
    for v in x:
        h[round(v * (n - 1))] += 1
    return h


def floors_of_ints(x):
    total = 0
    for v in x:
        total += round(v) + math.floor(v) + math.ceil(v)
    return total


ROUNDING = [
    (round_to_ticks, lambda rng: [(rng.random(300) * 10, 0.25), (np.arange(-20, 20) * 0.5, 1.0)]),
    (rounded_total, lambda rng: [(rng.standard_normal(200) * 5,),
                                 ((rng.standard_normal(200) * 5).astype(np.float32),),
                                 (np.array([0.5, 1.5, 2.5, -0.5, -2.5]),)]),
    (bins_by_round, lambda rng: [(rng.random(300), 11)]),
    (floors_of_ints, lambda rng: [(rng.integers(-9, 9, 50),), (np.arange(5, dtype=np.uint8),)]),
]


@pytest.mark.parametrize("function, argument_sets", ROUNDING,
                         ids=[function.__name__ for function, _ in ROUNDING])
def test_round_of_traced_numbers_agrees_with_python(function, argument_sets):
    check_calls(function, argument_sets(np.random.default_rng(4)))


@pytest.mark.parametrize("function, arguments", [
    (round_to_ticks, (np.arange(10.0), 0.3)), (bins_by_round, (np.linspace(0, 1, 30), 5)),
    (floors_of_ints, (np.arange(6),)),
], ids=["round_to_ticks", "bins_by_round", "floors_of_ints"])
def test_a_loop_that_rounds_is_captured(function, arguments):
    kinds, breaks = loop_kinds(function, *arguments)
    assert breaks == 0 and kinds == ["loop"], kinds


@pytest.mark.parametrize("bad, error", [(np.nan, ValueError), (np.inf, OverflowError)])
def test_round_of_nan_or_infinity_raises_pythons_error(bad, error):
    import kiln
    x = np.array([0.4, 1.6, bad, 2.0])
    with pytest.raises(error):
        rounded_total(x)
    with pytest.raises(error):
        kiln.compile(rounded_total)(x)
    np.testing.assert_equal(kiln.compile(rounded_total)(x[:2]), rounded_total(x[:2]))
