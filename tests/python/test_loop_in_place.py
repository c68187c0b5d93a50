"""A loop nested in a loop body updates the outer loop's array in place even where the body
reads that array before it (loop_in_place.h): the sieve's `if s[i]:` reads the flags, then
strikes the multiples of i in them. It copied the whole array in and out on every outer
iteration before (100,000 flags: 275 ms a call, NumPy's own loop 40 ms). Reads that are not
needed before the inner loop, or a view of the array the inner loop reads, keep the copy:
results are NumPy's either way."""
import numpy as np
import pytest

import kiln


def sieve(flags):
    s = flags.copy()
    n = len(s)
    for i in range(2, n):
        if s[i]:
            for j in range(i * i, n, i):
                s[j] = False
    return s


@pytest.mark.parametrize("n", [2, 3, 50, 997, 5000])
def test_the_loop_sieve_is_numpys(n):
    flags = np.ones(n, dtype=bool)
    compiled = kiln.compile(sieve)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(flags), sieve(flags))
    assert flags.all()  # the caller's array is not the loop's


def reads_after_the_inner_loop(x):
    s = x.copy()
    total = 0.0
    for i in range(len(s) - 1):
        before = s[i + 1]  # read before the inner loop, used after it: the old value
        if s[i] > 0:
            for j in range(i + 1, len(s)):
                s[j] = s[j] - 1.0
        total = total + before
    return s, total


def reads_a_whole_copy_after(x):
    s = x.copy()
    out = np.zeros_like(s)
    for i in range(len(s)):
        old = s * 2.0  # the whole array, before the inner loop changes it
        if s[i] > 1:
            for j in range(len(s)):
                s[j] = s[j] * 0.5
        out = out + old
    return s, out


def inner_loop_reads_another_row(a):
    s = a.copy()
    for i in range(s.shape[0] - 1):
        if s[i, 0] > 0:
            for j in range(s.shape[1]):
                s[i + 1, j] = s[i + 1, j] + s[i, j]
    return s


@pytest.mark.parametrize("fn", [reads_after_the_inner_loop, reads_a_whole_copy_after])
def test_reads_of_the_old_array_after_the_inner_loop_see_the_old_values(fn):
    x = np.array([1.0, 3.0, -2.0, 5.0, 0.5, 2.0, 4.0])
    compiled = kiln.compile(fn)
    for _ in range(2):
        for got, want in zip(compiled(x), fn(x)):
            np.testing.assert_array_equal(got, want)


def test_an_inner_loop_over_rows_of_the_carried_array_is_numpys():
    a = np.random.default_rng(0).standard_normal((6, 5))
    compiled = kiln.compile(inner_loop_reads_another_row)
    np.testing.assert_allclose(compiled(a), inner_loop_reads_another_row(a), rtol=1e-14)


def test_the_sieves_flags_are_updated_in_their_own_buffer(compile_logged):
    # Before, each outer iteration copied the flags into a `next` buffer and swapped the two.
    log, _ = compile_logged(sieve, (np.ones(50, dtype=bool),), "schedule")
    arrays = [line for line in log.splitlines() if "bool(50,)" in line]
    assert not [line for line in arrays if line.split()[1].startswith("next")], log
