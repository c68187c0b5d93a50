"""Attacks of a fourth round: what a compiled call reads that can change between calls
unseen (callbacks held beyond the arguments), aliasing, the cache, errors and threads."""
import functools

import numpy as np
import pytest

import kiln


# ---- partials and bound methods held by closures, defaults, self and global containers ----

def _scaled(x, w=1.0, k=1):
    return x * w + k


def _in_a_cell(callback):
    def f(x):
        return callback(x)
    return f


def _in_a_default(callback):
    def f(x, step=callback):
        return step(x)
    return f


def _in_a_cell_list(callback):
    steps = [callback]

    def f(x):
        return steps[0](x)
    return f


class _Holder:
    def __init__(self, callback):
        self.step = callback

    def run(self, x):
        return self.step(x)


_STEPS = []


def _from_a_global_list(x):
    return _STEPS[0](x)


def _in_a_global_list(callback):
    _STEPS[:] = [callback]
    return _from_a_global_list


@pytest.mark.parametrize("holding", [_in_a_cell, _in_a_default, _in_a_cell_list,
                                     lambda p: _Holder(p).run, _in_a_global_list])
def test_a_held_partials_keywords_and_arguments_changed_in_place_are_seen(holding):
    # the partial's snapshot compared it as itself: k=5 set, w changed, the call gave k=2's
    weights = np.full(3, 2.0)
    step = functools.partial(_scaled, weights, k=2)
    f = holding(step)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), f(x))
    step.keywords["k"] = 5
    np.testing.assert_array_equal(compiled(x), [7.0, 7.0, 7.0])
    weights[:] = 7.0
    np.testing.assert_array_equal(compiled(x), [12.0, 12.0, 12.0])


class _Model:
    def __init__(self):
        self.k = 2
        self.w = np.full(3, 2.0)

    def forward(self, x):
        return x * self.w + self.k


def test_a_bound_method_held_by_a_closure_reads_its_objects_state_at_each_call():
    model = _Model()
    forward = model.forward
    f = _in_a_cell(forward)
    compiled, x = kiln.compile(f), np.ones(3)
    np.testing.assert_array_equal(compiled(x), [4.0, 4.0, 4.0])
    model.k = 9  # a number: a guard
    np.testing.assert_array_equal(compiled(x), [11.0, 11.0, 11.0])
    model.w[:] = 5.0  # an array of the object (the trace made it a constant): seen
    np.testing.assert_array_equal(compiled(x), [14.0, 14.0, 14.0])


def test_a_global_partial_without_arrays_in_a_closure_stays_compiled():
    f = _in_a_cell(functools.partial(_scaled, k=2))
    report = kiln.explain(f)(np.ones(3))
    assert not report.break_reasons and len(report.graphs) == 1
