"""for loops over range(start, stop, step) with a traced step (kiln._loop_strides): a sieve's
inner `range(i * i, n, i)` over the outer loop's index is one loop node counting Python's
len(range(...)) in the graph, where range() asked the step's value (a graph break that unrolled
the outer loop: a sieve of 3,000 took 13-22 s to compile). The index, the target after the loop
and a zero step's ValueError are Python's."""
import numpy as np
import pytest

import kiln


def kinds(f, *args):
    report = kiln.explain(f)(*args)
    assert report.graph_break_count == 0, str(report)
    return [loop.kind for loop in report.loops if loop.kind != "select"]


def sieve(flags):
    s = flags.copy()
    n = len(s)
    for i in range(2, n):
        if s[i]:
            for j in range(i * i, n, i):
                s[j] = False
    return s.sum(), s


@pytest.mark.parametrize("n", [5, 10, 50, 331])
def test_a_sieve_is_two_loops_and_counts_the_primes(n):
    flags = np.ones(n, dtype=bool)
    assert kinds(sieve, flags) == ["loop", "branch", "loop"]
    count, s = kiln.compile(sieve)(flags)
    expected = sieve(flags)
    assert count == expected[0] and type(count) is type(expected[0])
    np.testing.assert_array_equal(s, expected[1])


def strides_from_data(x, steps):
    out = np.zeros_like(x)
    last = -1
    for k in range(steps.shape[0]):
        start = 0 if steps[k] > 0 else x.shape[0] - 1
        for j in range(start, x.shape[0] if steps[k] > 0 else -1, steps[k]):
            out[j] += x[j] * (k + 1)
            last = j
    return out, last


def descending_multiples(x):
    total = np.zeros(())
    seen = 0
    for i in range(1, x.shape[0]):
        j = -1
        for j in range(x.shape[0] - 1, i - 1, -i):  # a negative traced step
            total = total + x[j]
        seen = seen + j                              # the target after the loop
    return total, seen


def stride_with_break(x):
    hits = np.zeros(x.shape[0], dtype=np.int64)
    for i in range(1, 6):
        for j in range(i, x.shape[0], i + 1):
            if x[j] > 0.8:
                break
            hits[j] += 1
    return hits


@pytest.mark.parametrize("function, args", [
    (strides_from_data, (np.arange(10.0), np.array([3, -2, 4, 1, -7]))),
    (strides_from_data, (np.arange(4.0), np.array([5, -9, 2]))),
    (descending_multiples, (np.random.default_rng(0).random(17),)),
    (stride_with_break, (np.random.default_rng(1).random(30),)),
], ids=["from-data", "past-the-end", "descending", "break"])
def test_traced_steps_agree_with_python(function, args):
    assert kinds(function, *args).count("loop") == 2
    got, expected = kiln.compile(function)(*args), function(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
        assert type(a) is type(b) or isinstance(a, np.ndarray)


def test_a_zero_step_raises_pythons_value_error():
    x, steps = np.arange(6.0), np.array([2, 0, 1])
    with pytest.raises(ValueError, match="must not be zero"):
        strides_from_data(x, steps)
    with pytest.raises(ValueError, match="must not be zero"):
        kiln.compile(strides_from_data)(x, steps)
    np.testing.assert_allclose(kiln.compile(strides_from_data)(x, np.array([2, 1, 4]))[0],
                               strides_from_data(x, np.array([2, 1, 4]))[0])
