"""A branch between a traced NumPy scalar and a Python number written in the code
(`max(hi - lo, 1)`, `min(x, 0.5)`, `if d < 1: d = 1`, `x[j] if ok else -1.0`) is captured
(kiln._assumed_numbers): it was a graph break ("bool() of a traced array") when the types
differed, and a NumPy scalar where NumPy gives the Python float (`x32 * max(s, 1.0)` was float64,
NumPy's float32). Each case runs on data that takes either side and must give NumPy's values,
dtypes and Python types; a division by the Python side's zero raises Python's error."""

import numpy as np
import pytest

import kiln


def normalise(img):
    lo, hi = img.min(), img.max()
    return ((img - lo) * 255.0 / max(hi - lo, 1)).astype(np.uint8)


def clamped_range(x):
    d = x.max() - x.min()
    if d < 1:
        d = 1
    return x / d, d


def scale_of(x):
    scale = 255.0 / max(x.max() - x.min(), 1)
    return x * scale, scale


def float32_times(x32, s):
    m = max(s.max(), 1.0)
    k = min(s.min(), 1)
    return x32 * m, x32 * k, m, k


def clamped(x):
    v = x.mean() * 3 - 1
    c = min(max(v, 0.0), 1.0)          # a Python float at either bound, else NumPy's
    return c, x * c


def previous_of_peak(x):
    j = np.argmax(x)
    return x[max(j - 1, 0)], min(j + 1, len(x) - 1)


def float32_beside_a_tenth(x64, s32):
    return x64 * min(s32.max(), 0.1)   # 0.1 is no float32: the Python side's value is 0.1


def mixed(x):
    return min(x[0], 0.5), max(x[1], 1), max(max(x[2], 1), 2), min(x[0], 0.1)


def sentinel(x):
    j = np.argmax(x)
    nxt = x[j + 1] if j + 1 < len(x) else -1.0
    return nxt, x * nxt


def uint8_bound(u):
    lo = max(u.min(), 300)    # uint8 does not hold 300: NumPy's int 300
    hi = max(u.max(), 1)
    return lo, hi, u * hi


def in_loops(x):
    out = x.copy()
    for _ in range(3):
        out = out / max(out.max(), 1)
    t = 0
    for i in range(len(x)):
        t = t + max(x[i], 1)
    return out, t


def per_tile(img, t):
    out = np.empty_like(img)
    for i in range(0, img.shape[0], t):
        for j in range(0, img.shape[1], t):
            tile = img[i:i + t, j:j + t]
            lo, hi = tile.min(), tile.max()
            out[i:i + t, j:j + t] = ((tile - lo) * 255.0 / max(hi - lo, 1)).astype(np.uint8)
    return out


def squares_or_one(x):
    if x.sum() > 10:   # a side that holds a loop runs only where taken (a loop of its own)
        d = 0.0
        for v in x:
            d += v * v     # NumPy's float64 on this side, Python's float on the other
    else:
        d = 1.0
    return d, x * d


def counted_or_half(x):
    d = 1.5
    if x.sum() > 10:
        t = 0
        for v in x:
            t += 1         # a Python int on this side (its loop's counter), a float on the other
        d = t
    return d, x * d


def compared_later(x):
    d = max(x.max() - x.min(), 1)
    return 2 * d if d > 1 else d


_DATA = {
    "small range": lambda rng: (rng.random(6),),          # hi - lo < 1: the Python side
    "wide range": lambda rng: (rng.random(6) * 10,),      # the NumPy side
    "constant": lambda rng: (np.full(6, 3.0),),
    "increasing": lambda rng: (np.arange(6.0),),         # the sentinel's side
    "peak first": lambda rng: (np.arange(6.0)[::-1] - 3,),
}
_CASES = [normalise, clamped_range, scale_of, mixed, sentinel, in_loops, compared_later, clamped,
          previous_of_peak, squares_or_one, counted_or_half]


def _same(got, expected):
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e)
        return
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (got, expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("data", list(_DATA), ids=list(_DATA))
@pytest.mark.parametrize("function", _CASES, ids=[f.__name__ for f in _CASES])
def test_numbers_of_either_side_have_numpys_type(function, data):
    rng = np.random.default_rng(1)
    compiled = kiln.compile(function)
    for _ in range(2):
        args = _DATA[data](rng)
        _same(compiled(*args), function(*args))


def test_python_numbers_beside_other_dtypes():
    rng = np.random.default_rng(2)
    for s in (np.array([0.25, 0.5]), np.array([2.0, 4.0])):
        x32 = rng.random(4).astype(np.float32)
        _same(kiln.compile(float32_times)(x32, s), float32_times(x32, s))
    for s32 in (np.array([0.5], np.float32), np.array([0.0625], np.float32)):
        x64 = rng.random(3)
        _same(kiln.compile(float32_beside_a_tenth)(x64, s32), float32_beside_a_tenth(x64, s32))
    for u in (np.array([0, 0], np.uint8), np.array([3, 200], np.uint8)):
        _same(kiln.compile(uint8_bound)(u), uint8_bound(u))


@pytest.mark.parametrize("function, args", [
    (normalise, (np.arange(12.0).reshape(3, 4) / 20,)),
    (clamped_range, (np.arange(4.0),)),
    (in_loops, (np.arange(4.0),)),
    (per_tile, (np.arange(64, dtype=np.uint8).reshape(8, 8), 4)),
], ids=["normalise", "clamped_range", "in_loops", "per_tile"])
def test_python_number_branches_are_captured(function, args):
    explained = kiln.explain(function)(*args)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert all(loop.kind in ("loop", "select") for loop in explained.loops), explained.loops
    _same(kiln.compile(function)(*args), function(*args))


def test_division_by_the_python_sides_zero_raises_pythons_error():
    def inverse(x):
        return 1.0 / min(x.max(), 0)

    compiled = kiln.compile(inverse)
    _same(compiled(np.array([-2.0, -4.0])), inverse(np.array([-2.0, -4.0])))
    with pytest.raises(ZeroDivisionError):
        inverse(np.array([2.0]))
    with pytest.raises(ZeroDivisionError):
        compiled(np.array([2.0]))


def test_a_call_run_again_eagerly_says_why(capfd):
    # `x32 * m` reads m's type, so the Python side's calls run again eagerly: as costly as
    # NumPy's own run, and said on the graph_breaks channel (first call and cached ones)
    x32, s = np.arange(3, dtype=np.float32), np.array([0.25, 0.5])
    compiled = kiln.compile(float32_times)
    kiln.set_logs("graph_breaks")
    try:
        for _ in range(2):
            _same(compiled(x32, s), float32_times(x32, s))
    finally:
        kiln.set_logs("")
    reruns = [line for line in capfd.readouterr().err.splitlines() if "runs again eagerly:" in line]
    assert len(reruns) == 2, reruns
    assert all("float32_times" in line and "side of a Python number" in line for line in reruns)


def restocked(start, days, rng):
    stock = start.sum()
    levels = np.zeros(days)
    lost = 0.0
    for day in range(days):
        demand = rng.poisson(6.0)        # a Python int, drawn during the trace
        sold = min(stock, demand)        # the Python int's side where demand is below stock
        stock -= sold
        if stock < 10:
            stock += 30.0
        levels[day] = stock
        lost += 5.0 * (demand - sold)   # a use whose type differs by side: a check
    return levels, lost


def test_a_call_run_again_for_the_python_side_draws_what_numpy_draws():
    # The trace drew all 14 demands, then the Python side's check failed and the call ran
    # again eagerly from where the generator stood: every demand differed from NumPy's.
    # The generator's state from before the trace goes back first (_call_tracing._undo_trace).
    compiled = kiln.compile(restocked)
    for seed in (1, 2):
        mine, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        (levels, lost), expected = (compiled(np.array([8.0]), 14, mine),
                                    restocked(np.array([8.0]), 14, theirs))
        np.testing.assert_array_equal(levels, expected[0])
        assert lost == expected[1]
        assert mine.random() == theirs.random()


def sold_out_days(stock, demands):
    lost = 0.0
    for day, demand in enumerate(demands):
        print("day", day)
        sold = min(stock.sum(), demand)  # the Python int's side where demand is below stock
        lost += 5.0 * (demand - sold)    # a use whose type differs by side: a check
    return lost


def test_a_call_run_again_for_the_python_side_prints_once(capsys):
    # The trace printed each day, then the check reran the call eagerly, which printed them
    # again: the trace's prints wait for its graph's run (held_output's deferred).
    expected = sold_out_days(np.array([9.0]), [3, 2, 4])
    numpys = capsys.readouterr().out
    assert kiln.compile(sold_out_days)(np.array([9.0]), [3, 2, 4]) == expected
    assert capsys.readouterr().out == numpys
