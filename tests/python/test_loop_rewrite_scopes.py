"""Names in functions whose loops and branches kiln rewrites (kiln._loop_transform): the
rewritten function reads the same globals and closure cells as the user's, its own name
included (recursion). The source rewritten is the function's own code: not a function it
wraps, not its file edited since, not a method's source read outside its class."""
import functools
import importlib

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


def perceptron(X, y, epochs):   # a captured loop around a Python loop (zip) with a branch
    w = np.zeros(X.shape[1])
    b = 0.0
    for _ in range(epochs):
        for xi, yi in zip(X, y):
            if yi * (xi @ w + b) <= 0:
                w += yi * xi
                b += yi
        for i in [0, 1]:
            if X[i, 0] > 0:
                w -= 0.5
    return w, b


def test_a_branch_in_a_python_loop_inside_a_captured_loop():
    """The branch's rewrite moved `w += ...` into a function; done in place on the inner
    (not captured) loop's body, it hid `w` from the enclosing captured loop, which then did
    not carry it: kiln's internal error 'a value computed inside a loop body is used
    outside the loop'."""
    rng = np.random.default_rng(15)
    X = rng.standard_normal((10, 2))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    compiled = kiln.compile(perceptron)
    for epochs in (3, 4):
        got, expected = compiled(X, y, epochs), perceptron(X, y, epochs)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1]


# ---- the source rewritten is the code the caller called ----

def times_ten(function):
    @functools.wraps(function)
    def grow(x):  # the wrapped function's name: inspect's source of it was grow's below
        return function(x) * 10
    return grow


@times_ten
def grow(x):
    for _ in range(3):
        x = x + 1
    return x


class Scaled:
    def __init__(self):
        self.__scale = 3.0

    def step(self, x):
        for _ in range(3):
            x = x * self.__scale  # Scaled's private name: _Scaled__scale in the code
        return x


class Report:
    def run(self, x):
        for _ in range(2):
            x = x + 1
        label = """total:
            rows"""  # the rewrite's source was dedented: this string lost 4 spaces
        return x * len(label)


def test_a_wrapper_named_as_the_function_it_wraps_runs_as_the_wrapper():
    # inspect.getsource follows __wrapped__: the wrapped function's loop was rewritten and run
    # in the wrapper's place ([3, 4, 5, 6] where the call gives [30, 40, 50, 60]).
    x = np.arange(4.0)
    np.testing.assert_array_equal(kiln.compile(grow)(x), grow(x))
    # NumPy 1.x's functions are such wrappers (np.sum's code is the dispatcher's, named sum):
    # kiln.compile(np.sum) ran the implementation's source without its defaults, a TypeError.
    np.testing.assert_array_equal(kiln.compile(np.cumsum)(x), np.cumsum(x))
    assert kiln.compile(np.sum)(x) == 6.0


def test_methods_whose_source_compiled_alone_is_other_code():
    # Its source compiled outside the class read self.__scale unmangled: AttributeError.
    x = np.arange(4.0)
    np.testing.assert_array_equal(kiln.compile(Scaled().step)(x), Scaled().step(x))
    # The dedented source of a method holds its multi-line strings dedented: 38.0 for 46.0.
    np.testing.assert_array_equal(kiln.compile(Report().run)(x), Report().run(x))


def test_a_function_whose_file_was_edited_after_its_definition_runs_as_defined(tmp_path,
                                                                                monkeypatch):
    # inspect reads the file as it is now: the edited loop was rewritten and run instead.
    source = tmp_path / "edited_after_import.py"
    source.write_text("def step(x):\n    for _ in range(3):\n        x = x + 1\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_after_import")
    source.write_text("def step(x):\n    for _ in range(3):\n        x = x * 100\n    return x\n")
    x = np.arange(4.0)
    np.testing.assert_array_equal(kiln.compile(module.step)(x), x + 3)
