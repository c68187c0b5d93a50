"""Callables written in C handed to kiln.compile with an array bound in: functools.partial over
a ufunc (partial(np.add, w)) and an array's own method-wrappers (w.__add__, w.__mul__). Python
reads w at every call; kiln baked it into the graph as a constant, so a w changed in place
gave the old results, silently."""
import functools
import types

import numpy as np

import kiln


def test_a_partial_of_a_ufunc_reads_its_array_at_every_call():
    weights = np.arange(3.0)
    compiled = kiln.compile(functools.partial(np.add, weights))
    np.testing.assert_array_equal(compiled(1.0), [1.0, 2.0, 3.0])
    weights[0] = 50.0
    np.testing.assert_array_equal(compiled(1.0), [51.0, 2.0, 3.0])
    bounds = np.full(3, 2.0)
    clipped = kiln.compile(functools.partial(np.clip, a_min=0.0, a_max=bounds))
    np.testing.assert_array_equal(clipped(np.arange(3.0)), [0.0, 1.0, 2.0])
    bounds[2] = 1.5
    np.testing.assert_array_equal(clipped(np.arange(3.0)), [0.0, 1.0, 1.5])


def test_an_arrays_bound_operator_reads_the_array_at_every_call():
    weights = np.arange(3.0)
    compiled = kiln.compile(weights.__mul__)
    np.testing.assert_array_equal(compiled(2.0), [0.0, 2.0, 4.0])
    weights[:] = 7.0
    np.testing.assert_array_equal(compiled(2.0), [14.0, 14.0, 14.0])
    report = kiln.explain(weights.__mul__)(np.ones(3))
    assert report.graph_count == 1 and not report.break_reasons


def test_an_arrays_bound_reduction_and_a_ufunc_method_still_work():
    values = np.arange(4.0)
    total = kiln.compile(values.sum)
    assert total() == 6.0
    values[0] = 10.0
    assert total() == 16.0
    np.testing.assert_array_equal(kiln.compile(np.add.outer)(values[:2], values[:2]),
                                  np.add.outer(values[:2], values[:2]))


def test_a_ufunc_bound_as_a_method_and_a_partial_of_an_arrays_operator():
    # types.MethodType(np.add, w) failed inside kiln with AttributeError: the ufunc has no
    # __code__ for the method's rebuilding to read.
    weights = np.arange(3.0)
    bound = kiln.compile(types.MethodType(np.add, weights))
    wrapped = kiln.compile(functools.partial(weights.__add__))
    np.testing.assert_array_equal(bound(1.0), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(wrapped(1.0), [1.0, 2.0, 3.0])
    weights[0] = 100.0
    np.testing.assert_array_equal(bound(1.0), [101.0, 2.0, 3.0])
    np.testing.assert_array_equal(wrapped(1.0), [101.0, 2.0, 3.0])
