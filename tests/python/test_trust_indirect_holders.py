"""Arrays a compiled function reaches through the standard library's indirect holders: a
weakref.ref called, a ContextVar's value, a deque, a queue.Queue's items, a MappingProxyType,
a WeakValueDictionary. kiln's check for values holding arrays it does not trace looked into
dicts, sequences and instance attributes only, so these arrays became constants of the graph
and a change made to them in place went unseen, silently. Such calls run eagerly now."""
import collections
import contextvars
import queue
import types
import weakref

import numpy as np
import pytest

import kiln

W = np.arange(3.0)
REFERENCE = weakref.ref(W)
VARIABLE = contextvars.ContextVar("weights")
VARIABLE.set(W)
ROW = collections.deque([W])
WAITING = queue.Queue()
WAITING.put(W)
VIEW = types.MappingProxyType({"w": W})
WEAK_VALUES = weakref.WeakValueDictionary(w=W)


@pytest.mark.parametrize("read", [
    lambda: REFERENCE(), lambda: VARIABLE.get(), lambda: ROW[0], lambda: WAITING.queue[0],
    lambda: VIEW["w"], lambda: WEAK_VALUES["w"]],
    ids=["weakref", "contextvar", "deque", "queue", "mappingproxy", "weakvaluedict"])
def test_an_array_reached_through_a_holder_is_read_at_every_call(read):
    def plus(x):
        return x + read()
    compiled = kiln.compile(plus)
    saved = W.copy()
    try:
        np.testing.assert_array_equal(compiled(np.ones(3)), plus(np.ones(3)))
        W[0] += 100.0
        np.testing.assert_array_equal(compiled(np.ones(3)), plus(np.ones(3)))
    finally:
        W[:] = saved


def test_holders_of_numbers_still_compile_once(traces):
    scales = collections.deque([2.0])

    def scaled(x):
        return x * scales[0]
    compiled = kiln.compile(scaled)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(np.ones(2)), [2.0, 2.0])
    assert len(traces) == 1
