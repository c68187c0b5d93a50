"""Early returns merged into one exit (kiln._loop_returns): a guard clause on a traced test is
a branch kiln selects, not a graph break, and a loop that returns (Numba's Mandelbrot) sets
the result and breaks; returns it cannot merge leave the function as written, still NumPy's
results."""
import numpy as np
import pytest

import kiln


def safe_normalize(v, eps=1e-12):
    n = np.linalg.norm(v)
    if n < eps:
        return v
    return v / n


def classify(x):
    s = x.sum()
    if s > 10:
        return x * 2
    elif s > 5:
        y = x + 1
        return y
    else:
        if s < 0:
            return -x
    return x                      # (also reached from the else side above)


def extreme(x):
    if x.sum() > 1:
        return x.max()            # NumPy scalars on both sides
    return x.min()


def static_flag(x, flag):
    if flag:                      # a Python test: runs as Python, as before
        return x + 1
    return x - 1


def none_or_array(x):
    if x.sum() > 0:
        return None               # no select of None and an array: a graph break, as before
    return x


def in_a_loop(x):
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            return x[i]           # the result and a flag set, then a break
    return x[0]


def mandel(c, max_iters):         # the Numba example's, as written
    i = 0
    z = 0.0j
    for i in range(max_iters):
        z = z * z + c
        if (z.real * z.real + z.imag * z.imag) >= 4:
            return i
    return 255


def fractal(C, iters):
    out = np.zeros(C.shape, dtype=np.uint8)
    for k in range(C.shape[0]):
        out[k] = mandel(C[k], iters)
    return out


def first_negative(x):
    i = 0
    while i < x.shape[0]:
        if x[i] < 0:
            return i
        i += 1
    return -1


def in_a_nested_loop(x):
    for i in range(2):
        for j in range(x.shape[0]):
            if x[j] > 0.5 * (i + 1):
                return x[j] * i   # a return in a nested loop: left as written
    return x[0]


def newton(x, tol, maxit):        # the result and the iteration count, from inside the loop
    it = 0
    while it < maxit:
        x_new = 0.5 * (x + 2.0 / x)
        if np.abs(x_new - x).max() < tol:
            return x_new, it
        x = x_new
        it += 1
    return x, it


def newton_for(x, tol, maxit):
    for it in range(maxit):
        x_new = 0.5 * (x + 2.0 / x)
        if np.abs(x_new - x).max() < tol:
            return [x_new, it, x_new.sum()]   # a list: a Python int, an array, a NumPy scalar
        x = x_new
    return [x, maxit, x.sum()]


def newton_dict(x, tol, maxit):
    it = 0
    while it < maxit:
        x_new = 0.5 * (x + 2.0 / x)
        if np.abs(x_new - x).max() < tol:
            return {"x": x_new, "iterations": it}
        x = x_new
        it += 1
    return {"x": x, "iterations": it}


def fixed_point(x, tol):          # a single return in `while True:`: nothing follows the loop
    while True:
        x_new = np.cos(x)
        if np.abs(x_new - x).max() < tol:
            return x_new
        x = x_new


def fixed_point_count(x, tol, maxit):   # `while True:` with a break as well
    it = 0
    while True:
        x_new = np.cos(x)
        if np.abs(x_new - x).max() < tol:
            return x_new, it
        it += 1
        if it >= maxit:
            break
        x = x_new
    return x, -1


def tuples_of_two_lengths(x, tol):
    for it in range(40):
        x_new = np.cos(x)
        if np.abs(x_new - x).max() < tol:
            return x_new, it, 0   # no shared form: one result, still NumPy's values
        x = x_new
    return x, 40


X = np.linspace(1.0, 2.0, 5)
Y = np.linspace(0.1, 0.9, 5)
CONTAINERS = [(newton, [(X, 1e-10, 300), (X, -1.0, 30)]),
              (newton_for, [(X, 1e-10, 300), (X, -1.0, 30)]),
              (newton_dict, [(X, 1e-10, 300), (X, -1.0, 30)]),
              (fixed_point, [(Y, 1e-12)]),
              (fixed_point_count, [(Y, 1e-9, 500), (Y, 1e-9, 5)])]

MERGED = [(safe_normalize, [(np.array([3.0, 4.0]),), (np.zeros(2),)]),
          (classify, [(np.full(3, 4.0),), (np.full(3, 2.0),), (np.full(3, 1.0),),
                      (np.full(3, -1.0),)]),
          (extreme, [(np.array([0.2, 0.9]),), (np.array([0.1, 0.2]),)]),
          (in_a_loop, [(np.array([0.1, 0.7, 0.9]),), (np.array([0.1, 0.2, 0.3]),)]),
          (fractal, [((np.linspace(-2, 1, 12) + 0.3j).astype(np.complex128), 20)]),
          (first_negative, [(np.array([1.0, 2.0, -1.0]),), (np.array([1.0, 2.0]),)])]
AS_WRITTEN = [(static_flag, [(np.ones(2), True), (np.ones(2), False)]),
              (none_or_array, [(np.ones(2),), (-np.ones(2),)]),
              (in_a_nested_loop, [(np.array([0.1, 0.7, 0.9]),), (np.array([0.1, 0.2]),)])]


def _agrees(function, cases):
    compiled = kiln.compile(function)
    for arguments in cases * 2:  # each case traced, then from the cache
        got, expected = compiled(*arguments), function(*arguments)
        assert (got is None) == (expected is None)
        if expected is not None:
            assert type(got) is type(expected)
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("function, cases", MERGED, ids=lambda v: getattr(v, "__name__", ""))
def test_guard_clauses_on_traced_tests_are_one_graph(function, cases):
    _agrees(function, cases)
    for arguments in cases:
        report = kiln.explain(kiln.compile(function))(*arguments)
        assert report.graph_break_count == 0, report.break_reasons


def _same(got, expected):
    """Equal values of the same types, element by element in containers."""
    assert type(got) is type(expected)
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            _same(got[key], expected[key])
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            _same(a, b)
    else:
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("function, cases", CONTAINERS, ids=lambda v: getattr(v, "__name__", ""))
def test_loops_returning_containers_or_from_while_true_are_one_loop(function, cases):
    compiled = kiln.compile(function)
    for arguments in cases * 2:
        _same(compiled(*arguments), function(*arguments))
    for arguments in cases:
        report = kiln.explain(kiln.compile(function))(*arguments)
        assert report.graph_break_count == 0, report.break_reasons
        assert "loop" in {loop.kind for loop in report.loops}
        assert "unrolled" not in {loop.kind for loop in report.loops}, report.loops


def test_returns_of_no_shared_form_agree_with_numpy():
    compiled = kiln.compile(tuples_of_two_lengths)
    for arguments in [(Y, 1e-9), (Y, -1.0)] * 2:
        _same(compiled(*arguments), tuples_of_two_lengths(*arguments))


@pytest.mark.parametrize("function, cases", AS_WRITTEN, ids=lambda v: getattr(v, "__name__", ""))
def test_returns_left_as_written_agree_with_numpy(function, cases):
    _agrees(function, cases)
