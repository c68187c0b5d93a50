"""Random programs of nested loops (for and while loops up to three deep, data-dependent
branches, break / continue / early return, `None` sentinels, list appends, in-place writes of
the arguments), written to a module file so that kiln reads their source as it reads any
user's, compiled, and compared with NumPy over three calls (errors included: a program that
indexes out of bounds must raise NumPy's error). Seeds print on failure:
KILN_NESTED_FUZZ_SEED and KILN_NESTED_FUZZ_PROGRAMS widen the search. The regression tests below
are what it found."""
import importlib.util
import os
import random

import numpy as np
import pytest

import kiln


class _Generator:
    """Statements, conditions and expressions over the loop variables in scope."""

    def __init__(self, rng):
        self.rng, self.loop_vars, self.depth, self.nest = rng, [], 0, 0

    def constant(self, low=-2, high=2):
        return repr(round(self.rng.uniform(low, high), 3))

    def index(self):
        """An index valid for x (of n items) made of a loop variable."""
        if not self.loop_vars:
            return str(self.rng.randint(0, 3))
        v = self.rng.choice(self.loop_vars)
        return self.rng.choice([v, f"({v} + 1) % n", f"n - 1 - {v}", f"{v} // 2",
                                f"min({v}, n - 1)"])

    def expression(self, depth=0):
        i = self.index()
        atoms = [f"x[{i}]", f"u[({i}) % m]", "acc", f"out[{i}]", self.constant(), "float(cnt)",
                 f"k[{i}] * 0.5"]
        if depth > 1 or self.rng.random() < 0.4:
            return self.rng.choice(atoms)
        a, b = self.expression(depth + 1), self.expression(depth + 1)
        form = self.rng.choice(["({a} + {b})", "({a} - {b})", "({a} * {b})", "max({a}, {b})",
                                "min({a}, {b})", "np.sin({a})", "abs({a})", "np.sqrt(abs({a}))",
                                "({a} if {c} else {b})"])
        return form.format(a=a, b=b, c=self.condition() if "{c}" in form else "")

    def condition(self):
        i = self.index()
        return self.rng.choice([f"x[{i}] > {self.constant(-0.5, 0.5)}",
                                f"acc > {self.constant(-1, 3)}", "cnt % 2 == 0", f"k[{i}] > 0",
                                f"out[{i}] < x[{i}]",
                                f"{self.loop_vars[-1] if self.loop_vars else 'cnt'} % 3 == 1"])

    def simple(self):
        i, c, h = self.index(), self.constant(), self.constant(0.05, 0.5)
        e = self.expression
        last = self.loop_vars[-1] if self.loop_vars else 0
        return self.rng.choice([
            f"acc = acc + {e()} * {h}", f"acc += {e()}", f"out[{i}] = {e()}",
            f"out[{i}] += {e()} * {h}", "cnt += 1", f"k[{i}] = k[{i}] + 1",
            f"u[({i}) % m] = u[({i}) % m] * {h} + {e()}",
            f"u[1:-1] = u[1:-1] + {h} * (u[2:] - u[:-2])",
            f"acc = acc * {h} + np.tanh(u[:3] * {c}).sum()", f"vals.append({e()})",
            f"a, b = b, a * {h} + {e()}",
            f"if best is None or {e()} > best:\n    best = {e()}",
            f"if found is None and {self.condition()}:\n    found = {last}",
            f"acc = helper(acc, {e()})", f"out[:] = out * {h}", f"x[{i}] = {e()}",
            f"M[{i} % 6, {self.index()} % 6] += {e()} * {h}", f"acc += M[{i} % 6].sum() * {h}",
            f"acc += np.dot(x[:{i}], x[:{i}]) * {h}", f"acc += x[{i}:{i} + 3].sum()",
            "cnt = cnt + int(np.argmax(u))", f"u[k[{i}] % m] += {h}",
            f"done = done or {self.condition()}",
            "if done:\n    break" if self.loop_vars else "cnt += 2",
            f"out[{i}], acc = acc, out[{i}]", "acc = float(np.clip(acc, -5.0, 5.0))"])

    def block(self, count, allow_loop=True):
        return [line for _ in range(count) for line in self.statement(allow_loop).split("\n")]

    def statement(self, allow_loop=True):
        p = self.rng.random()
        if allow_loop and self.depth < 2 and p < 0.25:
            return self.loop()
        if p < 0.45 and self.nest < 2:
            lines = [f"if {self.condition()}:"] + self.nested(self.rng.randint(1, 2))
            if self.rng.random() < 0.5:
                lines += ["else:"] + self.nested(1)
            return "\n".join(lines)
        if self.loop_vars and p < 0.52:
            jump = self.rng.choice(["break", "continue", "return out, acc, u, cnt, x, M"])
            return f"if {self.condition()}:\n    {jump}"
        return self.simple()

    def nested(self, count):
        self.nest += 1
        lines = ["    " + line for line in self.block(count, allow_loop=False)]
        self.nest -= 1
        return lines

    def loop(self):
        var = "ijl"[len(self.loop_vars)]
        self.depth += 1
        self.loop_vars.append(var)
        body = self.block(self.rng.randint(1, 3))
        self.loop_vars.pop()
        self.depth -= 1
        if self.rng.random() < 0.2:
            head = [f"{var} = 0", f"while {var} < n and acc < {self.constant(2, 10)}:"]
            # a continue would skip the increment: a break instead
            body = [line.replace("continue", "break") for line in body] + [f"{var} += 1"]
        else:
            stop = self.rng.choice(["n", "m", "3", "0", "1", "n - 2",
                                    "j + 1" if var == "l" else "n // 2",
                                    "i + 1" if var == "j" else "n"])
            start = self.rng.choice(["0", "0", "1"])
            head = [f"for {var} in range({stop} - 1, {start} - 1, -1):"
                    if self.rng.random() < 0.2 else f"for {var} in range({start}, {stop}):"]
        return "\n".join(head + ["    " + line for line in body])


def program(rng):
    """Source of `def f(x, u, k, M)` (and its helper) with at least one loop."""
    generator = _Generator(rng)
    lines = ["def helper(a, b):", "    return a * 0.5 + np.cos(b)", "",
             "def f(x, u, k, M):", "    n = x.shape[0]", "    m = u.shape[0]",
             "    out = np.zeros_like(x)", "    acc = 0.0", "    cnt = 0", "    vals = []",
             "    a, b = 0.0, 1.0", "    best = None", "    found = None", "    done = False"]
    body = generator.block(rng.randint(1, 3))
    if not any(line.lstrip().startswith(("for ", "while ")) for line in body):
        body = generator.loop().split("\n") + body
    lines += ["    " + line for line in body]
    if rng.random() < 0.3:  # a loop with an `else` clause after
        lines += ["    for e in range(n):",
                  "        " + generator.simple().replace("\n", "\n        "),
                  "    else:", "        cnt += 5"]
    lines += ["    extra = sum(vals) + a + b + (0.0 if best is None else best) + "
              "(-1 if found is None else found)",
              "    return out, acc + extra, u, cnt, x, M"]
    return "\n".join(lines) + "\n"


def load(source, directory, name, function="f"):
    path = directory / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, function)


def inputs(seed, dtype):
    data = np.random.default_rng(seed)
    return (data.standard_normal(24).astype(dtype), data.standard_normal(16).astype(dtype),
            data.integers(-3, 4, 24), data.standard_normal((6, 6)).astype(dtype))


def run(f, args):
    """("ok", results) or ("err", the exception's type) of f on copies of args."""
    try:
        return "ok", f(*[arg.copy() for arg in args])
    except (IndexError, ValueError, ZeroDivisionError) as error:
        return "err", type(error)


def assert_calls_match_numpy(f, dtype, seeds, source):
    compiled = kiln.compile(f)
    tolerance = 1e-4 if dtype == np.float32 else 1e-9
    for call, seed in enumerate(seeds):
        args = inputs(seed, dtype)
        (want_kind, want), (got_kind, got) = run(f, args), run(compiled, args)
        assert (got_kind, got if got_kind == "err" else None) == (
            want_kind, want if want_kind == "err" else None), f"call {call}, program:\n{source}"
        if want_kind == "ok":
            for actual, expected in zip(got, want):
                np.testing.assert_allclose(np.asarray(actual, float), np.asarray(expected, float),
                                           rtol=tolerance, atol=tolerance,
                                           err_msg=f"call {call}, program:\n{source}")


SEED = int(os.environ.get("KILN_NESTED_FUZZ_SEED", "2026"))
PROGRAMS = int(os.environ.get("KILN_NESTED_FUZZ_PROGRAMS", "30"))


@pytest.mark.parametrize("number", range(PROGRAMS))
def test_random_nested_loop_program_matches_numpy(number, tmp_path):
    seed = SEED * 1000 + number
    rng = random.Random(seed)
    source = program(rng)
    dtype = rng.choice([np.float64, np.float32])
    f = load(source, tmp_path, f"nested_program_{number}")
    assert_calls_match_numpy(f, dtype, [seed * 10 + call for call in range(3)],
                             f"seed {SEED}, number {number}:\n{source}")


CONTINUE_IN_INNER_LOOP = '''
def f(x):
    n = x.shape[0]
    acc = 0.0
    found = None
    for i in range(0, n - 2):
        for j in range(0, n):
            if x[j] > 0:
                continue
            acc = acc * 0.5 + x[j]
            found = i
    return found
'''


@pytest.mark.parametrize("values", [[1.0, -2.0, 3.0, -1.0, 0.5, -0.3], [1.0, 2.0, 3.0, 4.0]])
def test_continue_flag_of_an_inner_loop_is_not_carried_from_an_abandoned_trace(values, tmp_path):
    # The outer loop's trace, abandoned (acc became a NumPy scalar), left the inner loop's
    # continue flag holding a value of its body, which the next trace carried into the inner
    # loop: an internal error ("a value computed inside a loop body is used outside the loop")
    f = load(CONTINUE_IN_INNER_LOOP, tmp_path, "continue_in_inner_loop")
    x = np.array(values)
    assert kiln.compile(f)(x) == f(x)


CHECK_BEFORE_A_RAISE = '''
def f(x, u, k, M):
    n = x.shape[0]
    m = u.shape[0]
    acc = 0.0
    done = False
    i = 0
    while i < n and acc < 4.841:
        acc += M[(i + 1) % n % 6].sum() * 0.213
        if k[i // 2] > 0:
            done = done or acc > 0.426
            u[((i + 1) % n) % m] = u[((i + 1) % n) % m] * 0.286 + 1.0
        acc += M[n - 1 - i % 6].sum() * 0.39
        i += 1
    return acc, u, done
'''


def test_an_assumption_check_before_the_function_raises_reruns_the_call(tmp_path):
    # The function raises NumPy's IndexError, after writing u: the graph of those writes ran,
    # and a check of the trace's assumption (which branch side a Python number took) failed
    # there: its ValueError reached the user instead of the call running again eagerly
    f = load(CHECK_BEFORE_A_RAISE, tmp_path, "check_before_a_raise")
    assert_calls_match_numpy(f, np.float64, [14140, 14141, 14142], CHECK_BEFORE_A_RAISE)
