"""A triangular loop nest whose inner loop may run no iteration, its accumulator reset each
outer iteration (forward substitution as textbooks write it: `s = 0.0; for k in range(i): s +=
L[i, k] * y[k]`). The inner loop's first iteration runs on its own (kiln._loop_peeling: it makes
the Python float NumPy's float64), and after it `s` is NumPy's where it ran, Python's where it
did not (i = 0). The loop of the other iterations carried that choice and checked it: the check
failed at i = 0 and every call ran again eagerly, twice NumPy's time. That loop runs only where
the first iteration ran, so it now reads the number as NumPy's with no check, and after it the
choice stands again (kiln._loop_number_types.assumed_where_running)."""
import numpy as np
import pytest

from test_numpy_programs_fifth import _python_runs
from test_numpy_programs_sixth import check_calls

import kiln


def forward_substitution(L, b):
    y = np.zeros(len(b))
    for i in range(len(b)):
        s = 0.0
        for k in range(i):
            s += L[i, k] * y[k]
        y[i] = (b[i] - s) / L[i, i]
    return y


def prefix_products(x):
    out = np.zeros(len(x))
    for j in range(len(x)):
        p = 1
        for i in range(j):
            p = p * x[i]
        out[j] = p
    return out


def triangle_then_type(x):
    # after the inner loop the number's type still follows NumPy's: float32 times a Python
    # float is float32, times NumPy's float64 is float64
    sizes = np.zeros(len(x))
    for j in range(len(x)):
        s = 0.0
        for i in range(j):
            s = s + x[i]
        sizes[j] = (np.float32(2) * s).dtype.itemsize
    return sizes


def last_sum(x):
    for j in range(len(x)):
        s = 0.0
        for i in range(j):
            s += x[i]
    return s


def forward_substitution_and_last_sum(L, b):
    # `s` first bound in the outer loop's body and read after it: the loop carried the number
    # whose type the inner loop's running decides, a check failing at i = 0 on every call
    y = np.zeros(len(b))
    for i in range(len(b)):
        s = 0.0
        for k in range(i):
            s += L[i, k] * y[k]
        y[i] = (b[i] - s) / L[i, i]
    return y, s


def first_bound_last_sum(x):
    for j in range(x.shape[0]):
        s = 0.0
        for i in range(j):
            s += x[i]
    return s


@pytest.mark.parametrize("function, argument_sets", [
    (forward_substitution, lambda L, b: [(L, b), (L[:1, :1], b[:1])]),
    (prefix_products, lambda L, b: [(b + 0.5,), (b[:1],)]),
    (triangle_then_type, lambda L, b: [(b,), (b[:1],)]),
    (last_sum, lambda L, b: [(b,), (b[:1],), (b[:2],)]),
    (forward_substitution_and_last_sum, lambda L, b: [(L, b), (L[:1, :1], b[:1]),
                                                      (L[:2, :2], b[:2])]),
    (first_bound_last_sum, lambda L, b: [(b,), (b[:1],), (b[:2],)]),
], ids=["forward_substitution", "prefix_products", "triangle_then_type", "last_sum",
        "forward_substitution_and_last_sum", "first_bound_last_sum"])
def test_triangular_loops_agree_with_numpy(function, argument_sets):
    rng = np.random.default_rng(8)
    L = np.tril(rng.random((30, 30))) + 30 * np.eye(30)
    check_calls(function, argument_sets(L, rng.random(30)))


@pytest.mark.parametrize("function", [forward_substitution, prefix_products,
                                      forward_substitution_and_last_sum, first_bound_last_sum],
                         ids=["forward_substitution", "prefix_products",
                              "forward_substitution_and_last_sum", "first_bound_last_sum"])
def test_a_triangular_loop_runs_no_call_again(function):
    rng = np.random.default_rng(9)
    L = np.tril(rng.random((40, 40))) + 40 * np.eye(40)
    arguments = ((L, rng.random(40)) if function.__code__.co_argcount == 2 else
                 (rng.random(40),))
    compiled = kiln.compile(function)
    compiled(*arguments)
    assert _python_runs(function, compiled, arguments) == 0


def test_a_number_first_bound_in_a_loop_of_no_iteration_is_unbound():
    compiled = kiln.compile(first_bound_last_sum)
    assert compiled(np.arange(5.0)) == first_bound_last_sum(np.arange(5.0))
    with pytest.raises(UnboundLocalError):
        compiled(np.zeros(0))
