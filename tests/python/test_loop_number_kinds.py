"""Numbers a captured loop carries whose kind changes in its first iteration: `total = 0.0`
(a Python float) that `total += x[i]` makes NumPy's float64 (or float32 of float32 data). In
NumPy only the first iteration sees the Python number; the traced body saw it in every
iteration, so NEP 50's rules for Python numbers held in all of them (`total * np.float32(2)`
float32 where NumPy's is float64 from the second iteration on), and an inner loop that ran no
iteration (`for j in range(i + 1, n)` at the last i) reran the whole call eagerly. The first
iteration now runs on its own before the loop (kiln._loop_capture's _peel_first)."""
import numpy as np
import pytest

import kiln
from test_numpy_programs_fifth import _python_runs
from test_numpy_programs_sixth import check_calls, loop_kinds


def itemsize_of_products(x):
    total = 0.0
    sizes = np.zeros(len(x))
    for i in range(len(x)):
        sizes[i] = (total * np.float32(1.5)).dtype.itemsize  # 4 first, then 8
        total += x[i]
    return sizes, total


def itemsize_of_products_to(x, n):
    total = 0.0
    sizes = np.zeros(len(x))
    for i in range(n):
        sizes[i] = (total * np.float32(1.5)).dtype.itemsize
        total += x[i]
    return sizes, total


def halved_sum(x):
    total = 0.0
    for i in range(len(x) - 1, -1, -1):
        total = total * np.float32(0.5) + x[i]
    return total


def pair_distances(x):
    n = len(x)
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            total += np.sqrt(np.sum(d * d))
    return total


def pair_products_to(x, n):
    total = 0
    for i in range(n):
        for j in range(i + 1, n):
            total = total + x[i] * x[j]
    return total


def itemsizes_until(x, n, limit):
    total = 0
    sizes = np.zeros(len(x))
    for i in range(n):
        sizes[i] = (total * np.float32(1.5)).dtype.itemsize
        total = total + x[i]
        if total > limit:
            break
    return sizes, total


def doubled_sizes_of_a_branch_max(x):
    m = 0
    sizes = np.zeros(len(x))
    for i in range(len(x)):
        t = m + 1  # a Python number made of m: read as Python's too
        sizes[i] = (t * np.float32(2)).dtype.itemsize
        if x[i] > 0.5:
            m = x[i]
    return sizes, m


def branch_max(x):
    m = 0
    for i in range(len(x)):
        if x[i] > m:
            m = x[i]
    return m


def swapped_kinds(x):
    a, b = 0.0, x[0]
    sizes = np.zeros(len(x))
    for i in range(len(x)):
        a, b = b, a  # a Python float and NumPy's float64 by turns
        sizes[i] = (a * np.float32(2)).dtype.itemsize
    return sizes


def test_the_first_iteration_sees_the_python_number_and_the_others_numpys():
    x = np.arange(1.0, 9.0)
    sizes, _ = itemsize_of_products(x)
    assert list(sizes) == [4, 8, 8, 8, 8, 8, 8, 8]  # NumPy's
    check_calls(itemsize_of_products, [(x,), (x[:3],), (x[:1],)])
    assert "loop" in loop_kinds(itemsize_of_products, x)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64])
def test_sums_from_python_numbers_keep_numpys_types(dtype):
    x = (np.arange(1, 13) % 7).astype(dtype)
    check_calls(halved_sum, [(x,), (x[:5],)])


def test_a_dynamic_trip_count_runs_its_first_iteration_on_its_own():
    x = np.arange(1.0, 7.0)
    check_calls(itemsize_of_products_to, [(x, n) for n in (0, 1, 2, 5, 6, 3, 0)])


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_nested_loops_whose_inner_loop_runs_no_iteration_at_the_end(dtype):
    x = np.arange(1, 7).astype(dtype)
    check_calls(pair_products_to, [(x, n) for n in (0, 1, 2, 6, 4)])


def test_an_inner_loop_that_runs_no_iteration_does_not_rerun_the_call():
    x = np.random.default_rng(3).random((40, 3))
    compiled = kiln.compile(pair_distances)
    check_calls(pair_distances, [(x,), (x[:2],), (x[:1],)])
    compiled(x)
    # The last i's inner loop runs none: it reran the call eagerly, every call (NumPy's speed).
    assert _python_runs(pair_distances, compiled, (x,)) == 0
    kinds, breaks = loop_kinds(pair_distances, x)
    assert breaks == 0 and "unrolled" not in kinds


@pytest.mark.parametrize("limit", [0.5, 2.0, 10.0, 100.0])
def test_a_loop_that_may_break_runs_its_first_iteration_on_its_own(limit):
    # the first iteration may break too: the loop after it then runs none
    x = np.arange(1.0, 9.0)
    check_calls(itemsizes_until, [(x, n, limit) for n in (5, 0, 1, 8)])


def test_a_number_whose_kind_changes_every_iteration_runs_as_python():
    x = np.arange(1.0, 9.0)
    assert list(swapped_kinds(x)) == [8, 4, 8, 4, 8, 4, 8, 4]  # NumPy's
    check_calls(swapped_kinds, [(x,), (x[:5],)])


def test_a_number_only_a_branch_retypes_is_peeled_where_the_body_reads_its_kind():
    # BranchRetyping carried m with whether the branch was taken, and the body saw the Python
    # number in every iteration: [4, 4, 4, 4, 4, 4] where NumPy's is [4, 4, 8, 8, 8, 8]
    x = np.array([0.1, 0.7, 0.2, 0.9, 0.3, 0.4])
    sizes, _ = doubled_sizes_of_a_branch_max(x)
    assert list(sizes) == [4, 4, 8, 8, 8, 8]  # NumPy's
    check_calls(doubled_sizes_of_a_branch_max, [(x,), (-x,), (x[::-1].copy(),)])


def test_a_number_only_a_branch_retypes_and_only_compared_stays_one_loop():
    # `x[i] > m` takes one loop for either kind: no peel, so no rerun where the first
    # iteration's branch is not taken (returning m reruns where no iteration's was)
    x = np.array([0.1, 0.7, 0.2, 0.9, 0.3, 0.4])
    check_calls(branch_max, [(x,), (-x,)])
    assert loop_kinds(branch_max, x) == (["select", "loop"], 0)
    compiled = kiln.compile(branch_max)
    compiled(x)
    assert _python_runs(branch_max, compiled, (x,)) == 0
