"""An inner loop kiln cannot capture, with a short static range, inside a loop it captures
(`for t in range(steps): for k in range(len(coeffs)): u = u * 0.5 + coeffs[(k + 1) % 3]`: a
list indexed by the inner index, which a captured loop would hold as a traced number). The
inner loop's refusal refused the outer one too, so the outer loop was traced step by step: the
first call's time grew with `steps` (2.9 s at 500). Such an inner loop (at most
UNROLL_IN_BODY_AT_MOST iterations) now unrolls into the outer loop's body, which is captured."""

import numpy as np
import pytest

from test_numpy_programs_sixth import check_calls, loop_kinds


def read_list_in_inner(u, coeffs, steps):
    for t in range(steps):
        for k in range(len(coeffs)):
            u = u * 0.5 + coeffs[(k + 1) % len(coeffs)] * 0.1
    return u


def weights_by_layer(x, weights, steps):
    h = np.tanh(x)
    for t in range(steps):
        for layer in range(len(weights)):
            h = np.tanh(weights[layer] @ h) + x * t
    return h


@pytest.mark.parametrize("steps", [0, 1, 7, 300])
def test_short_inner_loops_indexing_lists_agree_with_numpy(steps):
    rng = np.random.default_rng(2)
    coeffs = [rng.random(6) for _ in range(3)]
    weights = [rng.random((6, 6)) * 0.3 for _ in range(4)]
    x = rng.random(6)
    check_calls(read_list_in_inner, [(x, coeffs, steps), (x, coeffs[:1], steps)])
    check_calls(weights_by_layer, [(x, weights, steps)])


@pytest.mark.parametrize("function, arguments", [
    (read_list_in_inner, lambda rng: (rng.random(6), [rng.random(6) for _ in range(3)], 400)),
    (weights_by_layer, lambda rng: (rng.random(6), [rng.random((6, 6)) for _ in range(4)], 400)),
], ids=["read_list_in_inner", "weights_by_layer"])
def test_the_outer_loop_is_captured_with_the_inner_one_unrolled(function, arguments):
    kinds, breaks = loop_kinds(function, *arguments(np.random.default_rng(3)))
    assert breaks == 0 and kinds.count("loop") == 1, kinds
