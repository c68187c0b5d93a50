"""np.linalg.solve, inv and det traced (kiln._numpy_linalg: LU with partial pivoting as loop
nodes): NumPy's values and dtypes, no graph break, a singular matrix's error, and the calls kiln
leaves to LAPACK (large, batched, complex) still NumPy's."""
import numpy as np
import pytest

import kiln
from kiln._numpy_linalg import MOST_ROWS


def systems(A, b):
    return (np.linalg.solve(A, b), np.linalg.solve(A, np.stack([b, 2 * b - 1], axis=1)),
            np.linalg.inv(A), np.linalg.det(A))


def _check(function, *arguments, rtol):
    compiled = kiln.compile(function)
    for _ in range(2):  # the trace, then the cached graph
        got, expected = compiled(*arguments), function(*arguments)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            assert type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype, (a, b)
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
    return kiln.explain(kiln.compile(function))(*arguments)


@pytest.mark.parametrize("n", [1, 2, 7, 20])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_solve_inv_det_agree_with_numpy_without_a_graph_break(n, dtype):
    rng = np.random.default_rng(n)
    A = (rng.random((n, n)) * 4 - 2 + n * np.eye(n) * (rng.random() > 0.5)).astype(dtype)
    if dtype == np.int64:
        A = rng.integers(-3, 4, (n, n)) + 8 * np.eye(n, dtype=np.int64)
    b = rng.random(n).astype(dtype if dtype != np.int64 else np.float64)
    report = _check(systems, A, b, rtol=1e-4 if dtype == np.float32 else 1e-9)
    assert report.graph_break_count == 0, report.break_reasons


def singular(A, b):
    return np.linalg.solve(A, b)


def test_a_singular_matrix_raises_and_its_determinant_is_zero():
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        kiln.compile(singular)(A, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        kiln.compile(lambda A: np.linalg.inv(A))(A)
    det = kiln.compile(lambda A: np.linalg.det(A))(A)
    assert det == 0.0 and np.signbit(det) == np.signbit(np.linalg.det(A))


def heat_implicit(u, r, steps):
    n = u.shape[0]
    A = np.diag((1 + 2 * r) * np.ones(n)) + np.diag(-r * np.ones(n - 1), 1) \
        + np.diag(-r * np.ones(n - 1), -1)
    for _ in range(steps):
        u = np.linalg.solve(A, u)
    return u


def test_a_time_loop_solving_a_system_each_step_is_one_loop():
    # a graph break per step before: the loop unrolled
    u = np.random.default_rng(1).random(16)
    report = _check(heat_implicit, u, 0.5, 30, rtol=1e-9)
    assert report.graph_break_count == 0
    assert report.loops and all(loop.kind == "loop" for loop in report.loops), report.loops


@pytest.mark.parametrize("A", [
    np.eye(MOST_ROWS + 1) * 2 + 0.01,                               # large: LAPACK's blocked LU
    np.stack([np.eye(3) * 2, np.eye(3) * 3]) + 0.1,                 # a stack of matrices
    (np.eye(3) * 2 + 1j).astype(np.complex128),                    # complex
])
def test_what_kiln_leaves_to_numpy_runs_eagerly(A):
    b = np.ones(A.shape[:-1])
    _check(lambda A, b: (np.linalg.solve(A, b[..., None])[..., 0], np.linalg.det(A)), A, b,
           rtol=1e-9)
