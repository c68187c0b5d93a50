"""Containers that hold themselves (a list appended to itself, a dict of nodes naming each
other) or are nested deeper than any pytree kiln traces, among a call's arguments, closure
variables, globals and results: Python calls such a function without complaint, so kiln must
too, never with a RecursionError of its own."""
import numpy as np

import kiln


def first_doubled(items):
    return items[0] * 2


def test_a_list_holding_itself_as_an_argument_runs_as_python_at_every_call():
    # kiln's pytree flatten followed the list into itself: RecursionError on every call.
    items = [np.arange(3.0)]
    items.append(items)
    compiled = kiln.compile(first_doubled)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(items), first_doubled(items))
    items[0] = np.ones(3)  # an array rebound inside the cycle is read again
    np.testing.assert_array_equal(compiled(items), [2.0, 2.0, 2.0])


def test_dicts_and_tuples_reaching_themselves_through_others():
    graph = {"weight": np.arange(3.0)}
    graph["self"] = graph
    pair = ([np.arange(2.0)],)
    pair[0].append(pair)
    np.testing.assert_array_equal(kiln.compile(lambda g: g["weight"] + 1)(graph), [1, 2, 3])
    np.testing.assert_array_equal(kiln.compile(lambda t: t[0][0] + 1)(pair), [1, 2])


def test_an_argument_inside_a_cycle_updated_in_place_is_updated_at_every_call():
    def bump(items):
        items[0] += 1
    items = [np.zeros(2)]
    items.append(items)
    compiled = kiln.compile(bump)
    compiled(items)
    compiled(items)
    np.testing.assert_array_equal(items[0], [2.0, 2.0])


def test_a_cyclic_static_argument_without_arrays():
    factors = [3, 2]
    factors.append(factors)
    result = kiln.compile(lambda x, f: x * f[0])(np.arange(3.0), factors)
    np.testing.assert_array_equal(result, [0.0, 3.0, 6.0])


GLOBAL_TABLE = [np.arange(3.0)]
GLOBAL_TABLE.append(GLOBAL_TABLE)


def plus_global_table(x):
    return x + GLOBAL_TABLE[0]


def test_cyclic_globals_and_closure_variables_are_read_at_every_call():
    compiled = kiln.compile(plus_global_table)
    np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 2.0, 3.0])
    GLOBAL_TABLE[0] = np.zeros(3)
    try:
        np.testing.assert_array_equal(compiled(np.ones(3)), [1.0, 1.0, 1.0])
    finally:
        GLOBAL_TABLE[0] = np.arange(3.0)

    table = {"w": np.arange(3.0)}
    table["me"] = table

    def scaled(x):
        return x * table["w"]
    compiled = kiln.compile(scaled)
    np.testing.assert_array_equal(compiled(np.ones(3)), [0.0, 1.0, 2.0])
    table["w"] = np.full(3, 5.0)
    np.testing.assert_array_equal(compiled(np.ones(3)), [5.0, 5.0, 5.0])


def test_a_cyclic_result_is_the_cycle_python_returns():
    def looped(x):
        items = [x * 2]
        items.append(items)
        return items
    result = kiln.compile(looped)(np.arange(3.0))
    np.testing.assert_array_equal(result[0], [0.0, 2.0, 4.0])
    assert result[1] is result


def innermost_plus_one(x):
    while isinstance(x, list):
        x = x[0]
    return x + 1


def nested(value, depth):
    for _ in range(depth):
        value = [value]
    return value


def test_lists_nested_thousands_deep_run_and_shallow_nesting_still_compiles():
    compiled = kiln.compile(innermost_plus_one)
    deep = nested(np.arange(3.0), 3000)  # Python's own frames never recurse into it
    for _ in range(2):
        np.testing.assert_array_equal(compiled(deep), [1.0, 2.0, 3.0])
    shallow = nested(np.arange(3.0), 8)
    report = kiln.explain(innermost_plus_one)(shallow)
    assert report.graph_count == 1 and not report.break_reasons
    np.testing.assert_array_equal(compiled(shallow), [1.0, 2.0, 3.0])
