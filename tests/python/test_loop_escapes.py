"""A captured loop body that changes state no variable holds (kiln._loop_escapes): an array
made before the loop that it writes in place through an alias bound in the body or through a
method of self, or an attribute a method assigns. The loop carried its variables only: the
first left a value of the body in the array (an internal error after the trace), the second made
every iteration read the value from before the loop (a wrong answer). Such a loop runs as
Python now, with NumPy's answer; updates through `self.h[...]` in the loop's own code are
carried (kiln._loop_attribute_targets)."""
import numpy as np

import kiln

X = np.random.default_rng(0).normal(size=(4, 6))


class Recurrence:
    def __init__(self):
        self.w = np.full((4, 4), 0.3)

    def through_an_alias(self, X):
        self.h = np.zeros((4, 6))
        for t in range(6):
            h = self.h
            h[:, t] = self.w @ h[:, t - 1] + X[:, t]
        return self.h

    def write(self, t, value):
        self.h[:, t] = value

    def through_a_method(self, X):
        self.h = np.zeros((4, 6))
        for t in range(6):
            self.write(t, self.w @ self.h[:, t - 1] + X[:, t])
        return self.h

    def halve(self):
        self.h = self.h * 0.5

    def rebinding_in_a_method(self, X):
        self.h = X.copy()
        total = np.zeros(4)
        for t in range(6):
            self.halve()
            total = total + self.h[:, t]
        return total, self.h

    def in_its_own_code(self, X):
        self.h = np.zeros((4, 6))
        for t in range(6):
            self.h[:, t] = np.tanh(self.w @ self.h[:, t - 1] + X[:, t])
            self.h[:, t] *= 0.5
        return self.h


def _check(method):
    compiled = kiln.compile(getattr(Recurrence(), method))
    for _ in range(2):
        got, expected = compiled(X), getattr(Recurrence(), method)(X)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    return kiln.explain(kiln.compile(getattr(Recurrence(), method)))(X)


def test_a_write_through_an_alias_bound_in_the_body_runs_the_loop_as_python():
    report = _check("through_an_alias")   # was a CompilerError (a body value used outside)
    assert [loop.kind for loop in report.loops] == ["unrolled"]
    assert "no variable holds" in report.loops[0].reason


def test_a_write_through_a_method_runs_the_loop_as_python():
    report = _check("through_a_method")
    assert [loop.kind for loop in report.loops] == ["unrolled"]


def test_an_attribute_a_method_assigns_in_the_body_gives_numpys_answer():
    _check("rebinding_in_a_method")   # each iteration read the array from before the loop


def test_updates_through_an_attribute_in_the_loops_own_code_are_carried():
    report = _check("in_its_own_code")  # unrolled: "an assignment to an attribute ..."
    assert [loop.kind for loop in report.loops] == ["loop"], report.loops
