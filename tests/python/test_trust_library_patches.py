"""NumPy's functions and constants replaced while a compiled function lives: a test's
unittest.mock.patch("numpy.sin"), a compatibility shim, a profiler wrapping np.linalg.norm.
Python looks np.sin up at every call, so the compiled function must see the replacement
(and its removal), never keep computing with the function its first trace called."""
import math
from unittest import mock

import numpy as np

import kiln


def sine(x):
    return np.sin(x) * 2.0


def test_a_numpy_function_patched_after_the_first_call_is_the_one_called():
    # The guard read the global np (the module, unchanged) and not np.sin: the patched calls
    # returned 2 sin(x), silently.
    compiled, x = kiln.compile(sine), np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(compiled(x), sine(x))
    with mock.patch("numpy.sin", np.cos):
        np.testing.assert_allclose(compiled(x), np.cos(x) * 2.0)
    np.testing.assert_allclose(compiled(x), np.sin(x) * 2.0)


def test_a_numpy_function_replaced_by_python_code_runs_that_code():
    calls, exp = [], np.exp

    def counted_exp(value):
        calls.append(1)
        return exp(value) + 1.0
    compiled, x = kiln.compile(lambda x: np.exp(x) - 1.0), np.arange(3.0)
    np.testing.assert_allclose(compiled(x), np.exp(x) - 1.0)
    with mock.patch.object(np, "exp", counted_exp):
        np.testing.assert_allclose(compiled(x), exp(x))
    assert calls


def test_constants_and_functions_of_numpy_submodules_and_math():
    compiled = kiln.compile(lambda x: x * np.pi + np.linalg.norm(x) + math.e)
    x = np.arange(3.0)
    np.testing.assert_allclose(compiled(x), x * np.pi + np.linalg.norm(x) + math.e)
    with mock.patch("numpy.pi", 3.0), mock.patch("numpy.linalg.norm", lambda v: 100.0), \
            mock.patch("math.e", 2.0):
        np.testing.assert_allclose(compiled(x), x * 3.0 + 100.0 + 2.0)
    np.testing.assert_allclose(compiled(x), x * np.pi + np.linalg.norm(x) + math.e)


def test_unpatched_calls_still_compile_once(traces):
    compiled = kiln.compile(sine)
    for _ in range(3):
        np.testing.assert_allclose(compiled(np.ones(4)), np.sin(np.ones(4)) * 2.0)
    assert len(traces) == 1
