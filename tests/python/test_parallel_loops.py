"""Python loops whose iterations are independent run them on the thread pool
(sched/independent_iterations.h, sched/cpu/parallel_iterations.h), and only those: each case is
compiled with KILN_LOGS=schedule, checked for the loop's `parallel` mark (or its absence), and
compared with NumPy running the same function eagerly. Sizes are past the target's parallel
threshold, so the decision is the analysis's, not the work's."""
import numpy as np
import pytest

from kiln.bench.workloads import element_branch  # one element per iteration, with a branch

N = 200_000


def backwards(x):  # step -1, indices from the end
    out = np.zeros_like(x)
    for i in range(x.shape[0] - 1, -1, -1):
        out[i] = x[i] * x[i] - 1.0
    return out


def two_per_iteration(x):  # out[2i] and out[2i + 1]: a block of two elements each
    out = np.zeros(2 * x.shape[0])
    for i in range(x.shape[0]):
        out[2 * i] = np.sin(x[i])
        out[2 * i + 1] = np.cos(x[i])
    return out


def rows_with_temporaries(x):  # each iteration's temporaries are its own (private copies)
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        row = np.tanh(x[i] * 2.0)
        out[i] = row / (1.0 + row.sum() ** 2)
    return out


def recurrence(x):  # reads the previous iteration's element
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = 0.5 * out[i - 1] + x[i]
    return out


def reads_ahead(x):  # out[i] from out[i + 1], not yet overwritten: order matters
    out = x.copy()
    for i in range(x.shape[0] - 1):
        out[i] = out[i + 1] * 0.5 + out[i]
    return out


def overlapping_writes(x):  # out[i] and out[i + 1]: iteration i + 1 writes over i's
    out = np.zeros(x.shape[0] + 1)
    for i in range(x.shape[0]):
        out[i] = x[i]
        out[i + 1] = 2.0 * x[i]
    return out


def sweeps(x):  # a time loop (sequential) around an element loop (parallel)
    out = x.copy()
    for t in range(3):
        for i in range(x.shape[0]):
            out[i] = 0.5 * out[i] + x[i] * t
    return out


def running_total(x):  # a carried scalar
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i]
    return total


def wrapped_index(x):  # x[i - 1] at i = 0 is x[-1]: the wrap is not foldable there
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i - 1] + x[i]
    return out


rng = np.random.default_rng(7)
VECTOR = rng.standard_normal(N)
ROWS = rng.standard_normal((2000, 128))


@pytest.mark.parametrize("function, argument, parallel", [
    (element_branch, VECTOR, [True]),
    (backwards, VECTOR, [True]),
    (two_per_iteration, VECTOR, [True]),
    (rows_with_temporaries, ROWS, [True]),
    (wrapped_index, VECTOR, [True]),
    (sweeps, VECTOR, [False, True]),
    (recurrence, VECTOR, [False]),
    (reads_ahead, VECTOR, [False]),
    (overlapping_writes, VECTOR, [False]),
    (running_total, VECTOR, [False]),
], ids=lambda value: getattr(value, "__name__", None))
def test_independent_iterations_and_only_those_run_in_parallel(function, argument, parallel,
                                                               compile_logged):
    log, got = compile_logged(function, (argument.copy(),), "schedule")
    loops = [line for line in log.splitlines() if line.startswith("loop b")]
    assert [" parallel, own " in loop for loop in loops] == parallel, log
    np.testing.assert_allclose(got, function(argument.copy()), rtol=1e-12, atol=1e-12)


def test_indexing_by_the_loop_index_is_neither_wrapped_nor_clamped(compile_logged):
    # sched/induction_ranges.h: i in [0, n) makes x[i]'s wrap and clamp vanish, so the C++
    # compiler sees x[i] and vectorises the loop.
    log, got = compile_logged(element_branch, (VECTOR.copy(),), "output_code")
    assert "kiln_index_min(kiln_index_max(" not in log, log
    np.testing.assert_allclose(got, element_branch(VECTOR.copy()), rtol=1e-12)
    log, got = compile_logged(wrapped_index, (VECTOR.copy(),), "output_code")
    assert "kiln_index_min(kiln_index_max(" in log  # x[i - 1] wraps at i = 0: kept
