"""NumPy's array-creation functions called in a list comprehension over a range whose element
reads a local (`[np.eye(d) for _ in range(k)]`, `[np.zeros(n) for _ in range(m)]`: a mixture's
covariances, a list of buffers). kiln rewrites such a comprehension into a loop beside the
comprehension as written; the rewrite placed every node of it at the comprehension's place, so
the call's own place no longer told np.eye's call from C code's (np.random makes its results
with np.empty), and the call broke the graph ("np.eye called by C code the tracer cannot
follow"): every call traced again, and ran eagerly."""
import numpy as np

import kiln
from test_numpy_programs_eleventh import check_repeated_calls


def identity_stack(X, means):
    n, d = X.shape
    k = len(means)
    cov = np.array([np.eye(d) for _ in range(k)])
    return cov * X.var() + means[:, :, None]


def zero_buffers(x, m):
    n = len(x)
    buffers = [np.zeros(n) for _ in range(m)]
    for j, buffer in enumerate(buffers):
        buffer += x * j
    return np.stack(buffers)


def filled_rows(x, m):
    n = x.shape[0]
    return sum(np.ones(n) * x for _ in range(m))


def test_creation_calls_in_a_comprehension_do_not_break_the_graph():
    rng = np.random.default_rng(0)
    cases = [(identity_stack, (rng.random((5, 2)), rng.random((3, 2)))),
             (zero_buffers, (rng.random(4), 3)), (filled_rows, (rng.random(6), 4))]
    for function, arguments in cases:
        report = kiln.explain(kiln.compile(function))(*arguments)
        assert report.graph_break_count == 0, (function.__name__, str(report))
        check_repeated_calls(function, arguments)
