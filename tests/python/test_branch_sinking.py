"""Work that only one side of a branch reads runs inside that side (passes/sink_into_branches.cpp):
a sieve's inner range length only for primes, a one-sided temporary only where taken."""
import re

import numpy as np
import pytest

from kiln.bench.loop_programs import sieve


def final_graph(log):
    """The graph as the last pass that changed it printed it (KILN_LOGS=passes)."""
    graphs = re.findall(r"\[kiln:passes\] \w+ \(round \d+\):\n(.*?)(?=\[kiln:passes\]|\Z)",
                        log, re.S)
    return [graph for graph in graphs if graph.strip()][-1]


def depth_of(graph, op):
    """The nesting depth of each `op` node in a printed graph (0: the top level)."""
    return [(len(line) - len(line.lstrip())) // 4 for line in graph.splitlines()
            if re.search(rf"= {op}\(", line)]


def test_a_sieves_range_length_is_computed_inside_its_branch(compile_logged):
    flags = np.random.default_rng(0).random(2000) > 0.01
    log, got = compile_logged(sieve, (flags,), "passes")
    assert got == sieve(flags.copy())
    graph = final_graph(log)
    # the outer loop's body is depth 1, `if s[i]:` depth 2, the inner range's loop depth 3
    assert depth_of(graph, "floordiv") and min(depth_of(graph, "floordiv")) == 2, graph
    assert depth_of(graph, "gather") == [1], graph  # the test s[i] stays in the outer body


def one_sided(x, y):
    t = np.exp(x)           # only the then side reads it: moves in
    u = x * 3.0             # both sides read it: stays
    if y.sum() > 0:
        x = x + t + u
    else:
        x = x - u
    return x


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_work_one_side_reads_runs_only_there(compile_logged, sign):
    x = np.linspace(-1, 1, 5000)
    y = sign * np.ones(3)
    log, got = compile_logged(one_sided, (x, y), "passes")
    np.testing.assert_allclose(got, one_sided(x, y), rtol=1e-12)
    graph = final_graph(log)
    assert depth_of(graph, "exp") == [1], graph
    assert 0 in depth_of(graph, "mul"), graph
