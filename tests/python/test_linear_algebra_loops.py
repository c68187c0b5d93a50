"""Linear-algebra sweeps as users write them (the control-flow issue's evidence: LU,
Gram-Schmidt, covariance), from kiln.bench.workloads: each loop is captured whole
(fullgraph=True: no graph break, which also holds for code that ships inside the kiln package),
compiled once, and agrees with NumPy."""
import numpy as np
import pytest

import kiln
from kiln.bench.workloads import covariance, gram_schmidt, lu

rng = np.random.default_rng(11)
SQUARE = rng.random((60, 60)) + 60 * np.eye(60)
TALL = rng.standard_normal((120, 60))


@pytest.mark.parametrize("function, argument", [
    (lu, SQUARE), (gram_schmidt, SQUARE), (covariance, TALL),
], ids=["lu", "gram_schmidt", "covariance"])
def test_sweeps_with_moving_slices_compile_whole_and_agree_with_numpy(function, argument):
    compiled = kiln.compile(function, fullgraph=True)
    report = kiln.explain(compiled)(argument.copy())
    assert [loop.kind for loop in report.loops] == ["loop"], report.loops
    expected = function(argument.copy())
    got = compiled(argument.copy())
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_the_trailing_update_is_made_in_place(compile_logged):
    # sched/in_place.h: LU's a[k+1:, k+1:] -= ... writes into the carried array (no second
    # buffer swapped in per step), the row and column it reads computed first, and only the
    # window's elements are visited. The CPU's schedule (the GPU's passes leave trim_loops to
    # device loops: codegen/cuda/device_loops.cpp), also under scripts/gpu-check's on_cuda.
    with kiln.device("cpu"):
        log, got = compile_logged(lu, (SQUARE.copy(),), "schedule")
    assert "end loop; swap\n" in log and "<->" not in log, log
    assert log.count(" within [") >= 2, log  # sched/trim_loops.h: the window's rows and columns
    # ... and inside the window the bounds decide the mask: the store is the update itself.
    update = next(line for line in log.splitlines() if "mul(" in line and "sub(" in line)
    assert "where(" not in update, log
    np.testing.assert_allclose(got, lu(SQUARE.copy()), rtol=1e-9, atol=1e-9)


def window_updates(a):
    # Windows whose bounds move with k, from each side, empty ones included (k = 0, k = n - 1).
    a = a.copy()
    n = a.shape[0]
    for k in range(n):
        a[k:, :k] += 1.0
        a[:k, k + 1:] *= 0.5
        a[k + 1:n - 1, 2:k + 3] -= 0.25 * a[k, 0]
    return a


def stepped_window(a):  # every other row: a condition the bounds do not decide
    a = a.copy()
    for k in range(a.shape[0]):
        a[k::2, k:] += 1.0
        a[-1:k:-1, :k] *= 0.5
    return a


@pytest.mark.parametrize("function", [window_updates, stepped_window])
@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_masked_updates_over_moving_windows_agree_with_numpy(function, n):
    x = rng.standard_normal((n, n))
    x[0, -1] = np.nan  # outside most windows: must stay where it is
    np.testing.assert_allclose(kiln.compile(function)(x.copy()), function(x.copy()),
                               rtol=1e-12, atol=1e-12)


def self_reading_update(a):  # reads row and column k+1, which the update itself changes
    a = a.copy()
    for k in range(a.shape[0] - 2):
        a[k + 1:, k + 1:] -= 0.01 * np.outer(a[k + 1:, k + 1], a[k + 1, k + 1:])
    return a


def test_a_masked_update_reading_elements_it_changes_reads_them_first(compile_logged):
    # NumPy computes the right side whole before it assigns: so must the update in place.
    x = rng.standard_normal((30, 30))
    log, got = compile_logged(self_reading_update, (x.copy(),), "schedule")
    assert "<->" not in log, log  # in place
    np.testing.assert_allclose(got, self_reading_update(x.copy()), rtol=1e-12, atol=1e-12)


def floyd_warshall(D):   # the textbook NumPy form: a column and a row as slices of width 1
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


def unit_slice_writes(x):
    y = x.copy()
    for i in range(1, 5):
        y[i:i + 1] = y[i - 1:i] * 2 + 1
        y[:, i:i + 1] *= 0.5
        row = y[i:i + 1, 1:3]
        row += 10
    return y


def past_the_end(x):
    out = np.zeros(x.shape[0] + 1)
    for k in range(x.shape[0] + 1):
        out[k] = x[k:k + 1].sum()     # the last one is empty in NumPy
    return out


@pytest.mark.parametrize("function", [floyd_warshall, unit_slice_writes, past_the_end])
def test_slices_of_width_one_at_the_loop_index_are_one_loop(function):
    """x[k:k+1] is x[k, None] (a view of fixed shape) while the loop keeps k inside the axis:
    as a moving window it met D[k:k+1, :]'s fixed axis, the loop was unrolled and its
    iterations fused with recomputation (Floyd-Warshall 200x200: 72 ms against NumPy's 5)."""
    argument = rng.random((6, 6))
    compiled = kiln.compile(function, fullgraph=True)
    assert [loop.kind for loop in kiln.explain(compiled)(argument.copy()).loops] == ["loop"]
    np.testing.assert_allclose(compiled(argument.copy()), function(argument.copy()),
                               rtol=1e-12)
