"""Random loop programs (a for or while loop whose body is drawn from the statements NumPy users
write in loops: row updates through the index, accumulators, branches on data, stencil steps,
in-place slice updates, slices whose bounds move with the index), written to a module file so that kiln reads their source as it reads
any user's, compiled, and compared with NumPy. Seeds print on failure: KILN_LOOP_FUZZ_SEED and
KILN_LOOP_FUZZ_PROGRAMS widen the search."""
import importlib.util
import os
import random

import numpy as np
import pytest

import kiln
from kiln import _branch_capture

STATEMENTS = [
    "out[i] = x[i] * {c} + acc",
    "acc = acc + x[i] * x[i]",
    "acc = acc * {h} + np.sin(x[i])",
    "u = u + {h} * (np.roll(u, 1) - 2 * u + np.roll(u, -1))",
    "u[1:-1] = u[1:-1] + {h} * (u[2:] - u[:-2])",
    "out[i] = out[i - 1] * {h} + x[i]",
    "if x[i] > {t}:\n        acc = acc + x[i]\n    else:\n        acc = acc - {h}",
    "if acc > {t}:\n        out[i] = acc\n    else:\n        out[i] = -x[i]",
    "w = np.tanh(u[:3] * {c})\n    acc = acc + w.sum()",
    "u[i % u.shape[0]] = acc",
    # slices whose bounds move with the index (kiln._windows), aligned or not
    "acc = acc + x[:i].sum() * {h}",
    "acc = acc + np.dot(x[i:], out[i:]) * {h}",
    "out[i:] = out[i:] * {h} + x[i:]",
    "out[:i] += x[:i] * {c}",
    "acc = acc + np.max(x[:i + 1]) - np.mean(out[i:i + 3])",
    "out[i + 1:] = x[i + 1:] - x[:x.shape[0] - i - 1]",
]


def program(rng):
    """Source of `def f(x, u)` with one loop of 1..4 random statements."""
    start = rng.choice([0, 1, 2])
    stop = rng.choice([0, 1, 3, 7, 20])
    step = rng.choice([1, 1, 2, -1])
    if step < 0:
        start, stop = stop - 1, start - 1
    body = [rng.choice(STATEMENTS).format(c=round(rng.uniform(-2, 2), 3),
                                          h=round(rng.uniform(0.05, 0.5), 3),
                                          t=round(rng.uniform(-0.5, 0.5), 3))
            for _ in range(rng.randint(1, 4))]
    lines = ["def f(x, u):", "    out = np.zeros_like(x)", "    acc = 0.0"]
    if rng.random() < 0.2:  # a while loop with a data-dependent exit instead
        lines += ["    i = 0", "    while acc < 3.0 and i < x.shape[0]:"]
        lines += ["        " + line.replace("\n", "\n    ") for line in body]
        lines += ["        acc = acc + 0.25", "        i = i + 1"]
    else:
        lines.append(f"    for i in range({start}, {stop}, {step}):")
        lines += ["        " + line.replace("\n", "\n    ") for line in body]
    lines.append("    return out, acc, u")
    return "\n".join(lines) + "\n"


def load(source, directory, name):
    path = directory / f"{name}.py"
    path.write_text("import numpy as np\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


SEED = int(os.environ.get("KILN_LOOP_FUZZ_SEED", "2026"))
NEP50 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
PROGRAMS = int(os.environ.get("KILN_LOOP_FUZZ_PROGRAMS", "40"))


@pytest.mark.parametrize("number", range(PROGRAMS))
def test_random_loop_program_matches_numpy(number, tmp_path, monkeypatch):
    # Odd programs run every branch on a traced value as two loops of 0 or 1 iterations (the
    # form big branches take), even ones as selects.
    monkeypatch.setattr(_branch_capture, "BRANCH_FORM", "loops" if number % 2 else "select")
    rng = random.Random(SEED * 1000 + number)
    source = program(rng)
    f = load(source, tmp_path, f"loop_program_{number}")
    dtype = rng.choice([np.float64, np.float32])
    data = np.random.default_rng(number)
    x = data.standard_normal(24).astype(dtype)
    u = data.standard_normal(16).astype(dtype)
    try:
        expected = f(x.copy(), u.copy())
    except (IndexError, ValueError) as error:  # the program itself is wrong: kiln must say so
        with pytest.raises(type(error)):
            kiln.compile(f)(x.copy(), u.copy())
        return
    actual = kiln.compile(f)(x.copy(), u.copy())
    tolerance = 1e-4 if dtype == np.float32 else 1e-9
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tolerance,
                                   atol=tolerance, err_msg=f"seed {SEED}, program:\n{source}")
        if NEP50:  # NumPy 1.x promotes 0-d operands by value, which kiln does not follow
            assert np.asarray(got).dtype == np.asarray(want).dtype, source  # (README, Limits)
