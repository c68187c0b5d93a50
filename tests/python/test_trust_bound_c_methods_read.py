"""Methods written in C bound to arrays, held where a compiled function reads them: a global
ADD = W.__add__, SUM = W.sum, GET = {"w": W}.get, an operator.methodcaller("dot", W), closure
variables holding V.__mul__, and arguments passing them. Python calls them over W as it is;
kiln took them for functions holding nothing and baked W into the graph, so a W changed in
place gave the first call's results, silently. Such calls run eagerly now (W's memory is not
a name kiln can read each call), with NumPy's results."""
import operator

import numpy as np

import kiln

W = np.arange(3.0)
ADD = W.__add__
SUM = W.sum
GET = {"w": W}.get
DOT = operator.methodcaller("dot", W)


def plus(x):
    return ADD(x)


def plus_total(x):
    return x + SUM()


def plus_looked_up(x):
    return x + GET("w")


def dotted(x):
    return DOT(x)


def test_globals_bound_to_an_array_follow_it_changed_in_place():
    for function in (plus, plus_total, plus_looked_up, dotted):
        compiled = kiln.compile(function)
        saved = W.copy()
        try:
            np.testing.assert_array_equal(compiled(np.ones(3)), function(np.ones(3)))
            W[0] += 100.0
            np.testing.assert_array_equal(compiled(np.ones(3)), function(np.ones(3)))
        finally:
            W[:] = saved


def test_closure_variables_and_arguments_bound_to_an_array():
    values = np.arange(3.0)
    times = values.__mul__

    def scaled(x):
        return times(x) + 1.0
    compiled = kiln.compile(scaled)
    np.testing.assert_array_equal(compiled(2.0), [1.0, 3.0, 5.0])
    values[0] = 9.0
    np.testing.assert_array_equal(compiled(2.0), [19.0, 3.0, 5.0])

    def applied(x, callback):
        return callback(x) * 2.0
    passed = kiln.compile(applied)
    np.testing.assert_array_equal(passed(1.0, values.__add__), [20.0, 4.0, 6.0])
    values[1] = -1.0
    np.testing.assert_array_equal(passed(1.0, values.__add__), [20.0, 0.0, 6.0])


def test_a_compiled_methodcaller_over_an_array_follows_it():
    values = np.arange(3.0)
    compiled = kiln.compile(operator.methodcaller("dot", values))
    assert compiled(np.ones(3)) == 3.0
    values[0] = 100.0
    assert compiled(np.ones(3)) == 103.0


def test_functions_of_modules_and_ufunc_methods_still_compile(traces):
    def uses_them(x):
        return np.add.reduce(x) + len(x) + abs(x[0])
    compiled = kiln.compile(uses_them)
    for _ in range(3):
        assert compiled(np.arange(3.0)) == 6.0
    assert len(traces) == 1
