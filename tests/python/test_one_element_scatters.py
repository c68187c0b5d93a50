"""A scatter of one element joins the kernel of the one-element values before it
(sched/kernel_groups.cpp: one_element_scatter): forward substitution's x[i] = (b[i] - L[i] @ x)
/ L[i, i] is one kernel an iteration, its dot product reading x before its store overwrites
x[i]. Each program here reads the array it updates in the kernel that updates it, in other
ways; results are NumPy's, and the store shares the kernel."""
import numpy as np
import pytest

import kiln
from kiln.bench.loop_programs import forward_substitution


def reads_the_element_it_overwrites(x):
    s = x.copy()
    for i in range(len(s)):
        s[i] = s[i] * 2.0 + s.sum()  # the sum and s[i] both read the old values
    return s


def adds_from_the_end(x):
    s = x.copy()
    for i in range(1, len(s)):
        s[-i] += s[: len(s) - i].max()  # a negative index, an accumulating store
    return s


def stores_the_sum_twice(x):
    s = x.copy()
    for i in range(len(s) - 1):
        total = s.sum()
        s[i] = total
        s[i + 1] = total - s[i]  # the second scatter reads the first's result: a kernel of its own
    return s


PROGRAMS = [reads_the_element_it_overwrites, adds_from_the_end, stores_the_sum_twice]


def test_forward_substitution_is_one_kernel_an_iteration(compile_logged):
    rng = np.random.default_rng(0)
    lower, b = np.tril(rng.random((40, 40))) + 40 * np.eye(40), rng.random(40)
    log, got = compile_logged(forward_substitution, (lower, b), "schedule")
    np.testing.assert_allclose(got, forward_substitution(lower, b), rtol=1e-12)
    assert "scatter" not in log.split("program for")[0], log  # no refusal note names it
    body = log[log.index("loop b"):log.index("end loop")]
    assert body.count("kernel") == 1, log


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_results_are_numpys(program, n):
    x = np.random.default_rng(n).standard_normal(n)
    np.testing.assert_allclose(kiln.compile(program)(x), program(x), rtol=1e-12)
