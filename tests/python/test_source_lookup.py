"""kiln reads a function's source (kiln._loop_source.source_of) as inspect.getsource reads its
code object, without inspect's search of every loaded module for the code's file (a code object
has no __module__: inspect.getmodule took the real path of each module's file, part of each
process's first kiln.compile call). The source found is the same, a decorator's __wrapped__ is
not followed, and a function without a file still has no source."""
import functools
import inspect

import numpy as np
import pytest

import kiln
from kiln._loop_source import source_of


def running_sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * 2.0
    return total


def scaled_by(factor):
    def scale(x):
        return x * factor  # a closure: its code has a free variable
    return scale


class Holder:
    def method(self, x):
        """A docstring."""
        return x + 1

    @staticmethod
    def static(x): return x - 1


def logged(function):
    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)
    return wrapper


@logged
def decorated(x):
    return x * 3


square = lambda x: x * x  # noqa: E731


@pytest.mark.parametrize("function", [running_sum, scaled_by(2.0), Holder.method, Holder.static,
                                      square], ids=lambda function: function.__name__)
def test_the_source_is_inspects(function):
    code = function.__code__
    assert source_of(code, function.__globals__) == inspect.getsource(code)


def test_a_decorators_wrapped_function_is_not_followed():
    source = source_of(decorated.__code__, decorated.__globals__)
    assert source == inspect.getsource(decorated.__code__)
    assert "def wrapper(*args)" in source and "x * 3" not in source


def test_code_without_a_file_has_no_source():
    namespace = {}
    exec("def made(x):\n    return x + 1\n", namespace)
    made = namespace["made"]
    with pytest.raises(OSError):
        source_of(made.__code__, made.__globals__)
    compiled = kiln.compile(made)  # traced as it is, as before
    x = np.arange(4.0)
    np.testing.assert_array_equal(compiled(x), x + 1)


def test_the_first_call_does_not_search_the_modules(monkeypatch):
    searched = []
    getmodule = inspect.getmodule

    def recording_getmodule(object, *args):
        if inspect.iscode(object):
            searched.append(object)
        return getmodule(object, *args)
    monkeypatch.setattr(inspect, "getmodule", recording_getmodule)

    def loop_sum(x):  # a new code object: kiln's rewrite of it is not cached
        total = 0.0
        for i in range(x.shape[0]):
            total = total + x[i] * 2.0
        return total
    x = np.arange(6.0)
    assert kiln.compile(loop_sum)(x) == running_sum(x)
    assert searched == []
