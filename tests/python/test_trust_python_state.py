"""Python state a compiled function reads or changes, changed between calls or by the call
itself: each call sees it as eager NumPy's would, never a value fixed at an earlier trace."""
import numpy as np

import kiln


def counter():
    count = 0

    def step(x):
        nonlocal count
        count += 1
        return x + count
    return step


def test_a_closure_variable_the_function_rebinds_is_rebound_at_every_call():
    # From the second call on the count was a graph input: the trace's `count += 1` went to
    # a fresh cell, so every later call returned x + 2 and the count stayed 1.
    mine, theirs = counter(), counter()
    compiled = kiln.compile(mine)
    for _ in range(4):
        np.testing.assert_array_equal(compiled(np.ones(3)), theirs(np.ones(3)))
        assert mine.__closure__[0].cell_contents == theirs.__closure__[0].cell_contents
    report = kiln.explain(counter())(np.ones(3))
    assert "closure variable 'count'" in report.break_reasons[0].reason
