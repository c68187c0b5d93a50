"""np.linalg.solve, inv and det traced (kiln._numpy_linalg: on the CPU solve and inv are the
solve op, LAPACK's gesv; det is LU with partial pivoting as loop nodes): NumPy's values and
dtypes, no graph break, a singular matrix's error, batches and broadcasting as NumPy's, and the
calls kiln leaves to NumPy (complex) still NumPy's."""
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


def _numpy_1_refuses(A, b):
    """Whether the installed NumPy is 1.x and, reading b as vectors only where b.ndim is
    A.ndim - 1, raises for these operands (NumPy 2 reads a 1-D b as a vector): then kiln, which
    leaves such calls to it, raises its error too."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0" or (b.ndim == A.ndim - 1) == (b.ndim == 1):
        return False
    solve = kiln.compile(lambda A, b: np.linalg.solve(A, b))
    with pytest.raises(ValueError) as expected:
        np.linalg.solve(A, b)
    with pytest.raises(ValueError, match=str(expected.value).split(":")[0]):
        solve(A, b)
    return True


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


SYSTEMS = [((MOST_ROWS + 22, MOST_ROWS + 22), (MOST_ROWS + 22,)),  # large: once a loop's size
           ((5, 5), (5, 3)), ((2, 3, 3), (2, 3, 4)),                     # several right-hand sides
           ((2, 1, 4, 4), (3, 4, 2)),                                    # batches broadcast
           ((3, 6, 6), (6,))]                                            # NumPy 2: b a vector


@pytest.mark.parametrize("shapes", SYSTEMS, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_systems_of_any_size_and_batch_are_one_lapack_call(compile_logged, shapes, dtype):
    rng = np.random.default_rng(len(shapes[0]))
    n = shapes[0][-1]
    A = (rng.random(shapes[0]) + n * np.eye(n)).astype(dtype)
    b = rng.random(shapes[1]).astype(dtype)
    if _numpy_1_refuses(A, b):
        return
    report = _check(lambda A, b: (np.linalg.solve(A, b), np.linalg.inv(A)), A, b,
                    rtol=1e-4 if dtype == np.float32 else 1e-9)
    assert report.graph_break_count == 0, report.break_reasons
    log, _ = compile_logged(lambda A, b: np.linalg.solve(A, b), (A, b), "schedule")
    assert log.count("extern solve") == 1, log


def test_operands_promote_as_numpy_and_a_singular_system_in_a_batch_raises():
    A = np.stack([np.eye(3) * 2, np.eye(3) * 3]).astype(np.float32)
    _check(lambda A, b: np.linalg.solve(A, b), A, np.arange(6).reshape(2, 3, 1), rtol=1e-6)
    if not _numpy_1_refuses(A, np.ones(3)):
        _check(lambda A, b: np.linalg.solve(A, b), A, np.ones(3), rtol=1e-6)
    A[1, 2] = 0
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        kiln.compile(lambda A, b: np.linalg.solve(A, b))(A, np.ones((2, 3, 1), np.float32))


@pytest.mark.parametrize("A", [
    np.eye(MOST_ROWS + 1) * 2 + 0.01,                               # det: LAPACK's blocked LU
    np.stack([np.eye(3) * 2, np.eye(3) * 3]) + 0.1,                 # a stack of matrices
    (np.eye(3) * 2 + 1j).astype(np.complex128),                    # complex
])
def test_what_kiln_leaves_to_numpy_runs_eagerly(A):
    b = np.ones(A.shape[:-1])
    _check(lambda A, b: (np.linalg.solve(A, b[..., None])[..., 0], np.linalg.det(A)), A, b,
           rtol=1e-9)
