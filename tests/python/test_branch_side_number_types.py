"""A traced branch whose sides leave a number of different Python types: NumPy's scalar on one
side, a Python number on the other (written in the code, or counted by a loop), or Python
numbers of two types. NumPy's run returns the type of the side taken; kiln gave one type for
both, silently, wherever a side held a loop (the branch runs as a cond node, or as a loop of 0
or 1 iterations per side: each form kept the first side's type, or the type of a loop that ran
none) and where a loop's counter met NumPy's scalar. Such a number is now an AssumedNumber
(kiln._assumed_numbers), or the branch takes a form that keeps both types, or runs as Python.
Each case runs on data that takes either side, as the function itself and inside a loop."""
import numpy as np
import pytest

import kiln
from test_assumed_numbers import _same  # type, dtype and value of each item


def sum_or_one(x):
    if x.sum() > 10:
        t = 0.0
        for v in x:
            t += v
        d = t                # NumPy's float64
    else:
        d = 1.0              # Python's float
    return d, x * d


def one_or_last(x):
    if x.sum() > 10:
        d = 1.0
    else:
        for v in x:
            d = v
    return d


def int64_or_three(x):
    if x.sum() > 10:
        d = np.int64(4)
    else:
        for v in x:
            d = 3
    return d, d + 1


def int64_or_count(x):
    d = 1.5
    if x.sum() > 10:
        d = np.int64(4)
    else:
        n = 0
        for v in x:
            n += 1
        d = n                # a Python int, the loop's counter
    return d, x * d


def half_or_sum(x):
    d = 2
    if x.sum() > 10:
        t = 0.0
        for v in x:
            t += v
        d = t
    else:
        for v in x:
            d = 0.5
    return d, d + 1


def false_or_last(x):
    if x.sum() > 10:
        d = False
    else:
        for v in x:
            d = v
    return d


def count_or_half(x):
    d = x[0] > 1
    if x.sum() > 10:
        n = 0
        for v in x:
            n += 1
        d = n
    else:
        for v in x:
            d = 0.5
    return d, x * d


def counted_or_float(x):
    d = 1.5
    if x.sum() > 10:
        n = 0
        for v in x:
            n += 1
        d = n                # a Python int where the other side keeps the float 1.5 (it
    return d, x * d          # was truncated to 1)


def summed_in_a_loop(x):
    s = 0.0
    for i in range(3):
        if x.sum() > 9 + i:
            t = 0.0
            for v in x:
                t += v
            d = t
        else:
            d = 1.0
        s = s + d
    return s, d


def counted_in_a_loop(x):
    s = 0.0
    for i in range(3):
        d = x[0]
        if x.sum() > 9 + i:
            for v in x:
                d = 3
        s = s + d
    return s, d


_CASES = [sum_or_one, one_or_last, int64_or_three, int64_or_count, half_or_sum, false_or_last,
          count_or_half, counted_or_float, summed_in_a_loop, counted_in_a_loop]
_DATA = {"then side": np.arange(6.0), "else side": np.arange(6.0)[::-1] - 3,
         "then side again": np.full(6, 3.0), "else side again": np.array([0.5, 0.25, 1, 0, 0, 0])}


@pytest.mark.parametrize("function", _CASES, ids=[f.__name__ for f in _CASES])
def test_a_number_has_the_type_of_the_side_taken(function):
    compiled = kiln.compile(function)
    for x in _DATA.values():
        _same(compiled(x), function(x))
