"""np.linalg.norm of a slice whose bounds move with a captured loop's index, and assignments to
single elements of a copy of such a slice: Householder's QR as written (`x = R[k:, k]; v =
x.copy(); v[0] += np.copysign(np.linalg.norm(x), x[0])`) was unrolled, 14 s for its first
call at 40x40 where it is now one loop node."""
import copy

import numpy as np

import kiln
from test_numpy_programs_eleventh import assert_same, householder_qr


def loop_kinds(function, *arguments):
    report = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [(loop.kind, loop.reason) for loop in report.loops]


def check_captured(function, *arguments, single=False):
    kinds = loop_kinds(function, *arguments)
    assert kinds and all(kind == "loop" for kind, _ in kinds), kinds
    compiled = kiln.compile(function)
    for _ in range(2):
        mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
        assert_same(compiled(*mine), function(*theirs), function.__name__, single)


def column_tail_norms(R):
    out = np.zeros(R.shape[1])
    for k in range(R.shape[1]):
        out[k] = np.linalg.norm(R[k:, k])
    return out


def block_norms(A, keepdims=False):
    out = []
    for k in range(A.shape[0] - 1):
        out.append(np.linalg.norm(A[k:, k:], axis=1, keepdims=keepdims).sum())
    return np.array(out)


def tail_frobenius(A):
    total = 0.0
    for k in range(A.shape[0]):
        total += np.linalg.norm(A[k:, :k + 1])
    return total


def first_element_bumped(R):
    out = np.zeros((R.shape[1], R.shape[0]))
    for k in range(R.shape[1]):
        v = R[k:, k].copy()
        v[0] += 100.0
        v[-1] = -1.0
        out[k, k:] = v
    return out


def test_the_norm_of_a_moving_slice_is_one_loop():
    rng = np.random.default_rng(0)
    check_captured(column_tail_norms, rng.random((6, 4)))
    check_captured(column_tail_norms, rng.integers(-5, 5, (5, 5)))  # float64, as NumPy's
    # float32 norms stored into float64: equal to float32's precision
    check_captured(column_tail_norms, rng.random((5, 3)).astype(np.float32), single=True)
    check_captured(column_tail_norms, rng.random((4, 4)) + 1j * rng.random((4, 4)))
    check_captured(block_norms, rng.random((5, 5)))
    check_captured(block_norms, rng.random((5, 5)), True)
    check_captured(tail_frobenius, rng.random((4, 6)))


def test_an_element_of_a_moving_slices_copy_is_assigned_in_the_loop():
    R = np.arange(30.0).reshape(6, 5)
    check_captured(first_element_bumped, R)
    assert_same(R, np.arange(30.0).reshape(6, 5), "the argument is only read")


def test_householder_qr_is_one_loop():
    rng = np.random.default_rng(1)
    check_captured(householder_qr, rng.random((7, 5)))
    check_captured(householder_qr, rng.random((12, 12)))
