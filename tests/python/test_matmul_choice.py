"""max-autotune's library-or-generated choice for matrix products (src/api/matmul_choice.h):
each float product small enough for a generated reduction to compete is timed alone both ways
and the faster form is compiled; the choice is part of the cached program. Which form wins is
the machine's business: the tests check that the choice is made where it should be, made once,
and that either way the results are right."""
import numpy as np
import pytest

import kiln


def scores(q, k):
    return q @ np.swapaxes(k, -1, -2) * 0.125


def mixed(a, b, c):
    return (a @ b).sum(axis=0), c @ c  # a small batched product and a large one


def _choices(capfd, function, *args, mode="max-autotune"):
    """(result, the max-autotune log lines) of one call of a fresh kiln.compile(function)."""
    compiled = kiln.compile(function, mode=mode)
    capfd.readouterr()
    kiln.set_logs("perf")
    try:
        result = compiled(*args)
    finally:
        kiln.set_logs("")
    lines = [line for line in capfd.readouterr().err.splitlines() if "max-autotune: matmul" in line]
    return result, lines


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_products_are_timed_both_ways(capfd, dtype):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((12, 8, 64)).astype(dtype)
    k = rng.standard_normal((12, 8, 64)).astype(dtype)
    got, lines = _choices(capfd, scores, q, k)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, scores(q, k), rtol=tolerance, atol=tolerance)
    assert len(lines) == 1, lines
    assert f"(12, 8, 64) @ (12, 64, 8) {np.dtype(dtype).name}" in lines[0]
    assert "library" in lines[0] and "generated" in lines[0]


def test_only_products_that_can_compete_are_timed(capfd):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 16, 4)), rng.standard_normal((64, 4, 16))
    c = rng.standard_normal((300, 300))  # 27M multiply-adds: BLAS, untimed
    (first, second), lines = _choices(capfd, mixed, a, b, c)
    np.testing.assert_allclose(first, (a @ b).sum(axis=0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(second, c @ c, rtol=1e-10, atol=1e-10)
    assert len(lines) == 1 and "(64, 16, 4) @ (64, 4, 16)" in lines[0], lines


def test_the_choice_is_made_once_and_only_in_max_autotune(capfd):
    rng = np.random.default_rng(2)
    q = rng.standard_normal((12, 8, 64)).astype(np.float32)
    _, lines = _choices(capfd, scores, q, q, mode="default")
    assert lines == []
    _, lines = _choices(capfd, scores, q, q)
    assert len(lines) == 1
    kiln.reset()  # a new process, as far as kiln's memory goes: the disk cache has the program
    got, lines = _choices(capfd, scores, q, q)
    assert lines == []
    np.testing.assert_allclose(got, scores(q, q), rtol=1e-5, atol=1e-5)
