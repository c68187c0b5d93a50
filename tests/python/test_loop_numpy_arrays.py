"""NumPy arrays the function made (a generator's draw, a library's result) that a captured loop
indexes by its traced index (kiln._loop_numpy_arrays): read as graph values, where NumPy's own
indexing asked for the index's value (a graph break: the loop unrolled, 15-22 s for a
1,000-step random walk). A draw is an input of the graph, fed each call's values."""
import numpy as np
import pytest

import kiln


def loops(report, kind="loop"):
    return [loop for loop in report.loops if loop.kind == kind]


def walk(rng, n):
    steps = rng.standard_normal(n)
    pos = np.zeros(n + 1)
    for i in range(n):
        pos[i + 1] = pos[i] + steps[i]
    return pos


def walk_choice(rng, n):
    steps = rng.choice([-1, 1], size=n)
    pos = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        pos[i + 1] = pos[i] + steps[i]
    return pos, steps


def positive_steps(rng, n):  # a branch on the array's elements, a counter carried
    steps = rng.standard_normal(n)
    count, total = 0, 0.0
    for i in range(n):
        if steps[i] > 0:
            count += 1
            total = total + steps[i]
    return count, total


def quadrature(x):  # Gauss-Legendre nodes and weights: ndarrays NumPy's Python code made
    nodes, weights = np.polynomial.legendre.leggauss(6)
    out = np.zeros_like(x)
    for k in range(len(x)):
        for i in range(6):
            out[k] += weights[i] * np.cos(nodes[i] * x[k])
    return out


def changed_between_loops(rng, n):  # Python writes the array between two loops
    t = rng.random(n)
    first, second = np.zeros(n), np.zeros(n)
    for i in range(n):
        first[i] = t[i] * 2
    t[1:] = 7.0
    for i in range(n):
        second[i] = t[i] * 3
    return first, second, t


CASES = [
    (walk, lambda seed: (np.random.default_rng(seed), 40), 1),
    (walk_choice, lambda seed: (np.random.default_rng(seed), 40), 1),
    (positive_steps, lambda seed: (np.random.default_rng(seed), 30), 1),
    (quadrature, lambda seed: (np.linspace(0.0, 2.0, 9) + seed,), 2),
    (changed_between_loops, lambda seed: (np.random.default_rng(seed), 7), 2),
]


def _same(got, want):
    for g, w in zip(got if isinstance(want, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype


@pytest.mark.parametrize("function, arguments, count", CASES,
                         ids=[case[0].__name__ for case in CASES])
def test_numpy_arrays_indexed_by_a_loop_index_are_captured(function, arguments, count):
    report = kiln.explain(function)(*arguments(0))
    _same(report.result, function(*arguments(0)))
    assert len(loops(report)) == count and not loops(report, "unrolled"), str(report)
    compiled = kiln.compile(function)
    for seed in (1, 2, 3):  # each call's draw: a graph input, not the first call's constant
        _same(compiled(*arguments(seed)), function(*arguments(seed)))


def writes_into_it(rng, n):
    buf = rng.random(n)
    for i in range(1, n):
        buf[i] = buf[i - 1] * 0.5 + buf[i]
    return buf


def keeps_an_alias(rng, x):
    buf = rng.random(len(x))
    keep = x
    for i in range(len(x)):
        x[i] = x[i] + buf[i]
        keep = buf
    keep[0] = 7.0  # NumPy's keep is buf itself
    return buf, x


def converts_it(rng, x):  # ndarray.tolist() of the graph value would be a graph break
    table = rng.random(4)
    for i in range(len(x)):
        x[i] = x[i] + sum(table.tolist())
    return x


@pytest.mark.parametrize("function, arguments, reason", [
    (writes_into_it, lambda: (np.random.default_rng(5), 9), "writes into `buf`"),
    (keeps_an_alias, lambda: (np.random.default_rng(5), np.ones(6)),
     "`keep` holds the NumPy array `buf`"),
    (converts_it, lambda: (np.random.default_rng(5), np.ones(6)), None),
])
def test_a_numpy_array_the_body_writes_or_shares_stays_an_ndarray(function, arguments, reason):
    """The body's writes go to NumPy's array, an alias shares it: the loop runs as before."""
    report = kiln.explain(function)(*arguments())
    _same(report.result, function(*arguments()))
    if reason is not None:
        assert any(reason in loop.reason for loop in loops(report, "unrolled")), str(report)
    compiled = kiln.compile(function)
    for _ in range(2):
        _same(compiled(*arguments()), function(*arguments()))
