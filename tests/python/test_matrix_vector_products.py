"""Matrix-vector products on the CPU (passes/canonicalize_matmul.cpp): a large float one whose
matrix is an input BLAS reads in place runs as BLAS's gemv (extern/matmul.cpp), which streamed
the matrix faster than the generated reduction; a computed matrix keeps its producer fused into
the generated reduction, and small matrices stay generated. Results against NumPy's in every
layout gemv takes (row-major, transposed, sliced, a strided vector)."""
import numpy as np
import pytest

import kiln

LAYOUTS = {
    "A @ x": lambda A, x, y: A @ x,
    "y @ A": lambda A, x, y: y @ A,
    "A.T @ y": lambda A, x, y: A.T @ y,
    "x @ A.T": lambda A, x, y: x @ A.T,
    "A[10:, 5:] @ x[5:]": lambda A, x, y: A[10:, 5:] @ x[5:],
    "y[::2] @ A[::2]": lambda A, x, y: y[::2] @ A[::2],  # a row step: generated
    "A @ x[::-1] + 1": lambda A, x, y: A @ x[::-1] + 1,
    "np.dot(A, x), y.dot(A)": lambda A, x, y: (np.dot(A, x), y.dot(A)),
}


def _results(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", LAYOUTS)
def test_products_match_numpy_in_every_layout(dtype, name):
    rng = np.random.default_rng(0)
    A, x, y = rng.standard_normal((600, 300)), rng.standard_normal(300), rng.standard_normal(600)
    A, x, y = A.astype(dtype), x.astype(dtype), y.astype(dtype)
    function = LAYOUTS[name]
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    for got, expected in zip(_results(kiln.compile(function)(A, x, y)),
                             _results(function(A, x, y))):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * 10)


def _schedule(compile_logged, function, *args):
    log, result = compile_logged(function, args, "schedule")
    for got, expected in zip(_results(result), _results(function(*args))):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    return log


def test_an_input_matrix_is_read_by_gemv(compile_logged):
    rng = np.random.default_rng(1)
    A, x, y = rng.random((600, 300)), rng.random(300), rng.random(600)
    log = _schedule(compile_logged, lambda A, x, y: (y @ A, A @ x), A, x, y)
    assert log.count("extern matmul") == 2, log


def test_a_computed_or_small_matrix_stays_generated(compile_logged):
    rng = np.random.default_rng(2)
    A, x = rng.random((600, 300)), rng.random(300)
    # the doubling fuses into the reduction: the matrix is never written out for a library
    log = _schedule(compile_logged, lambda A, x: (A * 2) @ x, A, x)
    assert "extern matmul" not in log and "kernel1" not in log, log
    small = A[:200, :200].copy()
    log = _schedule(compile_logged, lambda A, x: A @ x, small, x[:200])
    assert "extern matmul" not in log, log
