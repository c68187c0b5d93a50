"""Items of a Python list of arrays that a loop replaces (`xs[k] = xs[k] * 0.9 + ...`,
`layers[i] = np.tanh(W[i] @ layers[i - 1])`) carried by the loop (kiln._loop_container_items):
one loop node whatever the trip count, the list holding what NumPy's loop leaves in it. Such
loops were refused ("a Python list, dict or set changes") and unrolled, a graph per step. Where
the body changes the list's structure, or two items hold one array that the body rebinds one
of, the loop runs as written, with NumPy's answer."""
import copy

import numpy as np

import kiln
from test_numpy_programs import _assert_same


def loop_kinds(function, *arguments):
    explained = kiln.explain(kiln.compile(function))(*copy.deepcopy(arguments))
    return [loop.kind for loop in explained.loops], explained.op_count


def check(function, *arguments, calls=2):
    """kiln agrees with NumPy: the result (its Python types too) and the arguments after."""
    compiled = kiln.compile(function)
    for _ in range(calls):
        mine, theirs = copy.deepcopy(arguments), copy.deepcopy(arguments)
        got, expected = compiled(*mine), function(*theirs)
        assert_same_tree(got, expected, "result")
        assert_same_tree(mine, theirs, "arguments after the call")


def assert_same_tree(got, expected, what):
    if hasattr(expected, "__dict__") and not isinstance(expected, (np.ndarray, np.generic)):
        assert type(got) is type(expected), (what, type(got), type(expected))
        assert_same_tree(vars(got), vars(expected), f"{what}'s attributes")
        return
    if isinstance(expected, (list, tuple, dict)):
        assert type(got) is type(expected), (what, type(got), type(expected))
        assert len(got) == len(expected), what
        keys = expected.keys() if isinstance(expected, dict) else range(len(expected))
        if isinstance(expected, dict):
            assert list(got.keys()) == list(expected.keys()), what
        for key in keys:
            assert_same_tree(got[key], expected[key], f"{what}[{key!r}]")
        return
    _assert_same(got, expected, what)


def cyclic_mixing(a, b, c, n):
    xs = [a.copy(), b.copy(), c.copy()]
    for t in range(n):
        for k in range(len(xs)):
            xs[k] = xs[k] * 0.9 + 0.1 * xs[(k + 1) % len(xs)]
    return xs


def layer_stack(weights, x, n):
    layers = [x] + [np.zeros_like(x) for _ in range(len(weights))]
    for t in range(n):
        for i in range(1, len(layers)):
            layers[i] = np.tanh(weights[i - 1] @ layers[i - 1])
        layers[0] = layers[0] * 0.99
    return layers[-1], layers


def counted_steps(x, n):
    totals = [0, 0.0, x.copy()]
    for t in range(n):
        totals[0] += 1
        totals[1] = totals[1] + 0.5
        totals[2] = totals[2] * 0.5 + totals[1]
    return totals


def running_while(x, limit):
    xs = [x.copy(), x * 2.0]
    while xs[0].sum() < limit:
        xs[0] = xs[0] + xs[1]
        xs[1] = xs[1] * 1.01
    return xs


def test_cyclic_mixing_of_a_list_of_arrays_is_one_loop():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(50) for _ in range(3))
    for n in (0, 1, 2, 3, 40):
        check(cyclic_mixing, a, b, c, n)
    (kinds, short), (long_kinds, long) = (loop_kinds(cyclic_mixing, a, b, c, n)
                                          for n in (20, 300))
    assert kinds.count("loop") == 1 and long_kinds.count("loop") == 1
    assert long == short  # the trace does not grow with the trip count


def test_layers_of_a_network_in_a_list():
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal((8, 8)) * 0.3 for _ in range(3)]
    x = rng.standard_normal(8)
    for n in (0, 1, 3, 30):
        check(layer_stack, weights, x, n)
    kinds, _ = loop_kinds(layer_stack, weights, x, 30)
    assert kinds[-1] == "loop"  # the time loop (its inner loop unrolls into its body)


def test_python_numbers_among_the_items_stay_python_numbers():
    x = np.linspace(0.0, 1.0, 5)
    for n in (0, 1, 5, 25):
        check(counted_steps, x, n)
    kinds, _ = loop_kinds(counted_steps, x, 25)
    assert kinds == ["loop"]


def test_a_while_loop_over_list_items():
    x = np.linspace(0.1, 1.0, 6)
    for limit in (0.0, 10.0, 500.0):
        check(running_while, x, limit)
    kinds, _ = loop_kinds(running_while, x, 500.0)
    assert "loop" in kinds and "unrolled" not in kinds


# ---- aliasing and structure: NumPy's answer, the loop as written where it must be ----

def shared_item(a, n):
    xs = [a, a]  # two items, one array
    for t in range(n):
        xs[0] = xs[0] + 1.0
        xs[1] += 0.5  # in place: seen through xs[0] too until xs[0] is rebound
    return xs


def list_named_twice(a, b, n):
    xs = [a.copy(), b.copy()]
    other = xs
    for t in range(n):
        xs[0] = xs[0] + other[1]
        other[1] = other[1] * 0.5
    return xs, other is xs


def list_inside_a_dict(a, n):
    xs = [a.copy(), a * 2.0]
    holder = {"xs": xs}
    for t in range(n):
        xs[1] = xs[1] - xs[0] * 0.1
    return holder


def appends_too(a, n):
    xs = [a.copy()]
    for t in range(n):
        xs[0] = xs[0] * 0.5
        xs.append(xs[0])
    return xs


def nested_lists(a, n):
    grid = [[a.copy(), a + 1.0], [a - 1.0, a * 2.0]]
    for t in range(n):
        grid[0] = [grid[1][0] + grid[0][0], grid[0][1]]
    return grid


def test_two_items_holding_one_array():
    a = np.arange(4.0)
    for n in (0, 1, 6):
        check(shared_item, a, n)


def test_a_list_named_twice_is_one_list():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(5), rng.standard_normal(5)
    for n in (0, 1, 12):
        check(list_named_twice, a, b, n)
    kinds, _ = loop_kinds(list_named_twice, a, b, 12)
    assert kinds == ["loop"]


def test_a_list_another_container_holds():
    a = np.linspace(-1.0, 1.0, 7)
    for n in (0, 1, 9):
        check(list_inside_a_dict, a, n)
    kinds, _ = loop_kinds(list_inside_a_dict, a, 9)
    assert kinds == ["loop"]


def test_a_body_that_changes_the_lists_length_runs_as_written():
    a = np.arange(3.0)
    for n in (0, 1, 5):
        check(appends_too, a, n)


def test_lists_of_lists_run_as_written():
    a = np.arange(3.0)
    for n in (0, 1, 5):
        check(nested_lists, a, n)
