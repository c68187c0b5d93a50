"""A name a branch's side binds to an array the same side writes in place (`out[3] = v;
result = out`): both sides are traced on the state before the branch, so the array holds that
state again while the other side runs, and the merge must take the side's contents. The common
case is a function whose loop may return early (kiln._loop_returns merges its returns into a
branch on the loop's flag): the code after the loop writes an array and returns it."""
import numpy as np
import pytest

import kiln
from kiln import _branch_capture


def return_in_for(x, limit):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        if acc > limit:
            return out, acc
        acc += x[i]
    out[3] = 7.0
    return out, acc


def return_in_nested_while(x, limit):
    out = np.zeros_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        j = 0
        while j < 3:
            if acc > limit:
                return out, acc
            acc += x[i]
            break
    out[1:3] = acc
    return out, acc


@pytest.mark.parametrize("form", ["select", "loops", None])
@pytest.mark.parametrize("function", [return_in_for, return_in_nested_while])
def test_a_side_binding_an_array_it_wrote_gives_the_written_contents(function, form,
                                                                       monkeypatch):
    monkeypatch.setattr(_branch_capture, "BRANCH_FORM", form)
    compiled = kiln.compile(function)
    for seed, limit in [(0, 100.0), (1, 0.5), (2, -100.0), (3, 1.5)]:
        x = np.random.default_rng(seed).standard_normal(12)
        expected = function(x.copy(), limit)
        actual = compiled(x.copy(), limit)
        for got, want in zip(actual, expected):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
