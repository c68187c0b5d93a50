"""Work a captured loop does on arrays it only reads runs once, outside the loop
(api/loop_trace.cpp, cut_region: rebuilt_outside). Every array a Python loop's body names is
carried by the loop node; one the body leaves as it is reads its initial value, so what is
computed from it alone (and from other invariants) is the same in every iteration. An implicit
heat equation factored its fixed matrix in every time step (100 steps at n = 50: 11 ms, NumPy
1.3 ms; now 0.27 ms)."""
import numpy as np

import kiln


def smooth(u, A, steps):
    for _ in range(steps):
        B = np.exp(-A) / np.exp(-A).sum(axis=1, keepdims=True)   # depends on A only
        u = B @ u + 0.1 * np.cos(u)
    return u


def nested(u, A, steps):
    for _ in range(steps):
        C = A.copy()
        for k in range(A.shape[0]):    # a nested loop on A only: hoisted whole
            C[k] = C[k] * np.sqrt(C[k].sum())
        u = C @ u
        A_T = A.T                      # a view of an invariant
        u = u / np.abs(A_T @ u).max()
    return u


def _body_lines(text, op):
    """Lines of `text` holding `op` inside a loop body (indented) and outside it."""
    lines = [line for line in text.splitlines() if f"= {op}(" in line]
    return ([line for line in lines if line.startswith("    ")],
            [line for line in lines if not line.startswith("    ")])


def test_work_on_arrays_a_loop_only_reads_is_hoisted():
    rng = np.random.default_rng(0)
    u, A = rng.random(6), rng.random((6, 6))
    report = kiln.explain(kiln.compile(smooth))(u, A, 7)
    np.testing.assert_allclose(report.result, smooth(u, A, 7), rtol=1e-12)
    inside, outside = _body_lines(report.graphs[0].graph_text, "exp")
    assert outside and not inside, report.graphs[0].graph_text
    assert _body_lines(report.graphs[0].graph_text, "cos")[0]  # what varies stays in the body
    compiled = kiln.compile(smooth)
    for steps in (0, 1, 5):
        np.testing.assert_allclose(compiled(u, A, steps), smooth(u, A, steps), rtol=1e-12)


def test_a_nested_loop_on_read_only_arrays_is_hoisted_whole():
    rng = np.random.default_rng(1)
    u, A = rng.random(5), rng.random((5, 5))
    report = kiln.explain(kiln.compile(nested))(u, A, 4)
    np.testing.assert_allclose(report.result, nested(u, A, 4), rtol=1e-12)
    loops = [line for line in report.graphs[0].graph_text.splitlines() if "= loop(" in line]
    assert len(loops) == 2 and not any(line.startswith("    ") for line in loops), loops
    compiled = kiln.compile(nested)
    for steps in (0, 3):
        np.testing.assert_allclose(compiled(u, A, steps), nested(u, A, steps), rtol=1e-12)


def diagonal_sweep(lower, b):  # lower[i, i] reads lower.reshape(-1): a reshape of an input
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - lower[i] @ x) / lower[i, i]
    return x


def test_a_reshaped_input_is_read_in_place_by_the_loop(compile_logged):
    # sched/materialize.cpp: the loop reads the input's buffer with the reshape's strides; it
    # copied the whole matrix first (forward substitution, n = 1000: 8 MB a call).
    rng = np.random.default_rng(3)
    lower = np.tril(rng.random((40, 40))) + 40 * np.eye(40)
    b = rng.random(40)
    log, got = compile_logged(diagonal_sweep, (lower, b), "schedule")
    before_loop = log[:log.index("\nloop ")]
    assert "b0[(i0)*40 + i1]" not in before_loop, log
    np.testing.assert_allclose(got, diagonal_sweep(lower, b), rtol=1e-12)
    # Strides a reshape cannot be read through (a transpose, every other row) get a copy.
    every_other_row = np.zeros((80, 40))
    every_other_row[::2] = lower
    compiled = kiln.compile(diagonal_sweep)
    for view in (np.asfortranarray(lower), every_other_row[::2]):
        np.testing.assert_allclose(compiled(view, b), diagonal_sweep(lower, b), rtol=1e-12)
