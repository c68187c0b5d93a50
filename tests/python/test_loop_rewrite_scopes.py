"""Names in functions whose loops and branches kiln rewrites (kiln._loop_transform): the
rewritten function reads the same globals and closure cells as the user's, its own name
included (recursion)."""
import numpy as np

import kiln


def fib_matrix(n):  # recursion through the global name; the conditional expression is rewritten
    if n == 0:
        return np.eye(2, dtype=np.int64)
    half = fib_matrix(n // 2)
    half = half @ half
    return half @ np.array([[1, 1], [1, 0]]) if n % 2 else half


def smooth(x, times):
    for _ in range(2):
        x = 0.5 * (x + np.roll(x, 1))
    return smooth(x, times - 1) if times > 1 else x


def make_recursive_closure(scale):
    def halve(x, depth):
        y = x * scale if x.sum() > 0 else -x
        return halve(y, depth - 1) if depth else y
    return halve


def test_recursive_functions_call_themselves_through_their_own_name():
    """The rewritten code was made inside a factory function that bound the user's name, so
    a recursive call looked for it among the closure cells (KeyError at the first call)."""
    for n in (0, 10, 11, 50):
        np.testing.assert_array_equal(kiln.compile(fib_matrix)(n), fib_matrix(n))
    x = np.arange(6.0)
    np.testing.assert_allclose(kiln.compile(smooth)(x, 3), smooth(x, 3))
    halve = make_recursive_closure(0.5)
    np.testing.assert_allclose(kiln.compile(halve)(x, 3), halve(x, 3))
