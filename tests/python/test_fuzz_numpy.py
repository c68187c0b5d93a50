"""Differential fuzzing of kiln's NumPy front end.

A seeded generator writes small random NumPy programs (a few statements over 1-3 input arrays
of random dtypes, shapes and layouts), each is compiled with kiln.compile(fullgraph=True) and
its results are compared with eager NumPy: dtypes, shapes, NumPy-scalar-ness, and values (exact
for integers and bools, allclose with equal_nan for floats). The generator runs every
statement in NumPy as it writes it and keeps only programs that NumPy accepts without a
warning, whose integer arithmetic does not overflow (undefined in C) and that cast no
out-of-range float to an integer type. Programs update intermediates and inputs in place
(through views too); the inputs as the program leaves them are compared as well.

Several programs are compiled as one graph (compiles dominate the run time); a batch that
fails is rerun program by program, so the message names the failing program: its seed, its
inputs and its source. KILN_FUZZ_PROGRAMS=5000 runs more programs, KILN_FUZZ_SEED shifts the
seeds; `python tests/python/test_fuzz_numpy.py SEED...` prints and checks single programs.
"""
import os
import warnings

import numpy as np
import pytest

import kiln

PROGRAMS = int(os.environ.get("KILN_FUZZ_PROGRAMS", 300))
FIRST_SEED = int(os.environ.get("KILN_FUZZ_SEED", 0))
BATCH = 10
MAX_SIZE = 600          # elements per intermediate array
DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "bool"]
COMPLEX_DTYPES = ["complex128", "complex64"]  # test_fuzz_numpy_complex adds them
TOLERANCE = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9, "complex64": 1e-4,
             "complex128": 1e-9}
# Complex programs may use ops kiln does not lower (ordering, max, ...): kiln.Unsupported is
# its clear refusal, not a failure, there. Wrong values and other errors still fail.
SKIP_UNSUPPORTED = False


class Rejected(Exception):
    """NumPy refuses the statement, warns, overflows, or the result is out of bounds."""


# ---- inputs ----

def _values(rng, dtype, shape):
    """Small values: floats in (-2, 2) keep exp/prod/power far from chaos and overflow."""
    if dtype == "bool":
        return np.asarray(rng.random(shape) > 0.5)   # (0-d: an array, not a NumPy scalar)
    if np.dtype(dtype).kind == "f":
        return np.asarray(rng.uniform(-2, 2, shape), dtype)
    if np.dtype(dtype).kind == "c":
        return np.asarray(rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape), dtype)
    low = 0 if np.dtype(dtype).kind == "u" else -5
    return np.asarray(rng.integers(low, 6, shape), dtype)


def _random_shape(rng):
    ndim = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
    shape = [int(rng.integers(1, 6)) for _ in range(ndim)]
    if ndim and rng.random() < 0.07:
        shape[int(rng.integers(ndim))] = 0
    return tuple(shape)


def _broadcastable(rng, shape):
    """A shape that broadcasts against `shape`: a suffix of it, some axes set to 1."""
    shape = list(shape[int(rng.integers(0, len(shape) + 1)):] if rng.random() < 0.4 else shape)
    return tuple(1 if rng.random() < 0.3 else n for n in shape)


def _make_input(rng, dtype, shape):
    """(array, description): contiguous, or a strided or transposed view of a larger array."""
    layout = rng.choice(["plain", "plain", "step", "transpose"]) if shape else "plain"
    if layout == "step":
        base = _values(rng, dtype, (shape[0] * 2,) + shape[1:])
        return base[::2], f"{dtype}{list(base.shape)}[::2]"
    if layout == "transpose":
        base = _values(rng, dtype, shape[::-1])
        return base.T, f"{dtype}{list(base.shape)}.T"
    return _values(rng, dtype, shape), f"{dtype}{list(shape)}"


def _copy(array):
    """A copy with the same memory layout (NumPy's reshape copies or not depending on it)."""
    if array.ndim and array.strides[0] != 0 and not array.flags.c_contiguous and (
            not array.flags.f_contiguous):  # every other row of a larger array
        base = np.empty((array.shape[0] * 2,) + array.shape[1:], array.dtype)
        base[::2] = array
        return base[::2]
    return np.copy(array, order="K")  # keeps a transposed array transposed


# ---- the program generator ----

class Generator:
    """Writes one program: each statement is checked in NumPy before it is kept."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        count = int(self.rng.integers(1, 4))
        first = _random_shape(self.rng)
        self.inputs, self.descriptions = [], []
        for index in range(count):
            shape = first if index == 0 or self.rng.random() < 0.3 else (
                _broadcastable(self.rng, first) if self.rng.random() < 0.7
                else _random_shape(self.rng))
            array, description = _make_input(self.rng, str(self.rng.choice(DTYPES)), shape)
            self.inputs.append(array)
            self.descriptions.append(description)
        self.names = [f"a{i}" for i in range(count)]
        self.lines = []
        self.env = self._replay(self.lines)
        self.counter = 0
        self.frozen = set()   # never written in place (see op_shape)
        self.precisions = {np.dtype(a.dtype) for a in self.inputs if a.dtype.kind in "fc"}

    # -- running statements in NumPy --

    def _replay(self, lines):
        env = {"np": np}
        env.update(zip(self.names, [_copy(a) for a in self.inputs]))
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            try:
                exec("\n".join(lines), env)
            except Exception as error:
                raise Rejected(repr(error)) from None
        return env

    def variables(self, env=None):
        return [n for n in (self.env if env is None else env) if n[0] in "av" and n[1:].isdigit()]

    def value(self, name):
        return self.env[name]

    def try_add(self, statement, check=None):
        """Keeps `statement` (lines) if NumPy runs it cleanly; `check` is an expression for the
        values it writes, checked for integer overflow."""
        lines = self.lines + statement
        env = self._replay(lines)
        for name in self.variables(env):
            value = env[name]
            if not isinstance(value, (np.ndarray, np.generic)):
                raise Rejected(f"{name} is a {type(value).__name__}")
            if value.dtype.name not in DTYPES + ["float16"] or value.size > MAX_SIZE:
                raise Rejected(f"{name}: {value.dtype} {value.shape}")
        if check is not None:  # the values the last line writes, before it runs
            _check_overflow(check, self._replay(lines[:-1]))
        self.lines, self.env = lines, env
        self.precisions.update(v.dtype for v in env.values() if isinstance(
            v, (np.ndarray, np.generic)) and v.dtype.kind in "fc")

    def fresh(self):
        self.counter += 1
        return f"v{self.counter}"

    # -- choices --

    def pick(self, predicate=lambda v: True):
        names = [n for n in self.variables() if predicate(self.value(n))]
        if not names:
            raise Rejected("no variable fits")
        # Recent values are used more often, so that operations chain.
        weights = np.arange(1, len(names) + 1, dtype=float) ** 2
        return names[int(self.rng.choice(len(names), p=weights / weights.sum()))]

    def choice(self, options):
        return options[int(self.rng.integers(len(options)))]

    def scalar(self, kind="any"):
        ints, floats = ["1", "2", "3", "-1", "-2"], ["0.5", "1.5", "-0.25", "2.0"]
        if kind == "int":
            return self.choice(ints)
        if kind == "float":
            return self.choice(floats)
        return self.choice(ints + floats)

    def axis(self, ndim, allow_none=True, allow_tuple=True):
        options = (["None"] if allow_none else []) + [str(d) for d in range(-ndim, ndim)]
        if allow_tuple and ndim >= 2:
            axes = sorted(self.rng.choice(ndim, size=2, replace=False).tolist())
            options.append(f"({axes[0]}, {axes[1]})")
        return self.choice(options) if options else "None"

    def generate(self, steps):
        for _ in range(steps):
            for _attempt in range(30):
                operation, counter = self.choice(OPERATIONS), self.counter
                try:
                    statement = operation(self)
                    if isinstance(statement, str):
                        statement = ([statement], None)
                    if statement is not True:  # (True: the operation added it itself)
                        self.try_add(*statement)
                    break
                except (Rejected, ValueError, IndexError):  # (a choice that does not fit)
                    self.counter = counter
        names = [n for n in self.variables() if n[0] == "v"]
        if not names:
            raise Rejected("no statement kept")
        # Every value is an output (nothing is dead code), the last one first.
        outputs = names[::-1]
        body = "".join(f"    {line}\n" for line in self.lines)
        return (f"def program({', '.join(self.names)}):\n{body}"
                f"    return ({', '.join(outputs)},)\n")


def _check_overflow(expression, env):
    """Signed integer overflow is undefined in C: compare an integer result with the same
    expression computed on float64 copies of the integer arrays (exact for these magnitudes);
    a difference means a wrap (checked for every integer type, to be safe)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = eval(expression, dict(env))
        except Exception:
            return
        if not isinstance(value, (np.ndarray, np.generic)) or value.dtype.kind not in "iu":
            return
        wide = {name: (v.astype(np.float64) if isinstance(v, (np.ndarray, np.generic))
                       and v.dtype.kind in "iu" else v) for name, v in env.items()}
        try:
            exact = np.asarray(eval(expression, wide), np.float64)
        except Exception:
            return
    if exact.shape != value.shape or not np.array_equal(exact, value.astype(np.float64)):
        raise Rejected(f"integer overflow in {expression}")


# ---- operations: each returns a statement (a line, or (lines, overflow check)) ----

def _numeric(v):
    return v.dtype.kind in "iuf"


def _nonempty(v):
    return v.size > 0


def _expression(g, name, text):
    return [f"{name} = {text}"], text


FLOAT_UNARY = ["negative", "absolute", "sin", "cos", "tanh", "arctan", "exp", "expm1",
               "floor", "ceil", "trunc", "rint", "square", "sign", "cbrt", "isnan", "isfinite",
               "positive", "reciprocal"]
INT_UNARY = ["negative", "absolute", "square", "sign", "invert", "positive", "sin", "exp"]


def op_unary(g):
    x = g.pick()
    kind = g.value(x).dtype.kind
    name = g.fresh()
    if kind == "b":
        text = g.choice([f"np.logical_not({x})", f"~{x}", f"np.invert({x})"])
    elif kind == "f" and g.rng.random() < 0.2:
        text = g.choice([f"np.sqrt(np.abs({x}))", f"np.log1p(np.abs({x}))",
                         f"np.log(np.abs({x}) + 1)"])
    else:
        function = g.choice(FLOAT_UNARY if kind == "f" else INT_UNARY)
        text = g.choice([f"np.{function}({x})", f"-{x}", f"abs({x})"]) if function in (
            "negative", "absolute") else f"np.{function}({x})"
    return _expression(g, name, text)


BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "maximum",
          "minimum", "fmax", "fmin", "power", "arctan2", "hypot", "logical_and", "logical_or",
          "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
          "right_shift"]
OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
             "floor_divide": "//", "remainder": "%", "power": "**", "bitwise_and": "&",
             "bitwise_or": "|", "bitwise_xor": "^", "left_shift": "<<", "right_shift": ">>"}
COMPARISONS = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
               "equal": "==", "not_equal": "!="}


def _operands(g, function):
    """Two operands: variables, or a variable and a Python scalar on either side."""
    x = g.pick()
    kind = g.value(x).dtype.kind
    if function in ("left_shift", "right_shift"):
        return x, g.choice(["0", "1", "2"])
    if function == "power" and kind in "iu":
        return x, g.choice(["0", "1", "2", "3"])
    if function == "power":
        return f"np.abs({x})", g.scalar()
    roll = g.rng.random()
    if roll < 0.35:
        scalar = g.scalar("int" if kind in "biu" and g.rng.random() < 0.7 else "any")
        if kind == "b" and g.rng.random() < 0.5:
            scalar = g.choice(["True", "False"])
        return (x, scalar) if roll < 0.2 else (scalar, x)
    return x, g.pick()


def op_binary(g):
    function = g.choice(BINARY)
    left, right = _operands(g, function)
    name = g.fresh()
    if function in OPERATORS and g.rng.random() < 0.5:
        text = f"{left} {OPERATORS[function]} {right}"
        if left[0] == "-":
            text = f"({left}) {OPERATORS[function]} {right}"
    else:
        text = f"np.{function}({left}, {right})"
    return _expression(g, name, text)


def op_compare(g):
    function = g.choice(list(COMPARISONS))
    left, right = _operands(g, function)
    # Left out: float64 against float32 (x >= x.astype(np.float32)): GCC 12.2 with AVX-512VL
    # folds the vectorised double -> float -> double round trip away (reported bug).
    kinds = {g.value(n).dtype for n in (left, right) if n in g.env}
    if len(kinds) == 2 and all(d.kind == "f" for d in kinds):
        raise Rejected("floats of two precisions compared")
    if g.rng.random() < 0.5:
        return f"{g.fresh()} = {left} {COMPARISONS[function]} {right}"
    return f"{g.fresh()} = np.{function}({left}, {right})"


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "std",
              "var"]


def op_reduce(g):
    x = g.pick()
    v = g.value(x)
    function = g.choice(REDUCTIONS)
    if function in ("argmax", "argmin"):
        axis = g.axis(v.ndim, allow_tuple=False)
    else:
        axis = g.axis(v.ndim)
    arguments = [] if axis == "None" and g.rng.random() < 0.5 else [f"axis={axis}"]
    if function not in ("argmax", "argmin") or axis != "None":
        if g.rng.random() < 0.4:
            arguments.append("keepdims=True")
    if function in ("std", "var") and g.rng.random() < 0.3:
        arguments.append("ddof=1")
    if function == "prod" and v.dtype.kind == "f":
        x = f"np.clip({x}, -1.5, 1.5)"
    text = (f"{x}.{function}({', '.join(arguments)})" if g.rng.random() < 0.4 and x[0] != "n"
            else f"np.{function}({', '.join([x] + arguments)})")
    return _expression(g, g.fresh(), text)


def op_cumsum(g):
    x = g.pick(_numeric)
    axis = g.axis(g.value(x).ndim, allow_tuple=False)
    function = g.choice(["cumsum", "cumsum", "cumprod"])
    if function == "cumprod" and g.value(x).dtype.kind == "f":
        x = f"np.clip({x}, -1.2, 1.2)"
    text = f"np.{function}({x})" if axis == "None" else f"np.{function}({x}, axis={axis})"
    return _expression(g, g.fresh(), text)


def _factor_shape(rng, size):
    """A random shape with `size` elements, one entry possibly -1."""
    if size == 0:
        return [0, int(rng.integers(1, 4))]
    shape, left = [], size
    for p in (2, 3, 5):
        while left % p == 0:
            left //= p
            shape.append(p) if rng.random() < 0.5 or not shape else shape.__setitem__(
                -1, shape[-1] * p)
    shape = [n for n in shape if n] or [1]
    shape[-1] *= left
    if rng.random() < 0.3:
        shape.insert(int(rng.integers(0, len(shape) + 1)), 1)
    if rng.random() < 0.4:
        shape[int(rng.integers(len(shape)))] = -1
    return shape


def op_shape(g):
    x = g.pick()
    v = g.value(x)
    name = g.fresh()
    roll = g.rng.random()
    if roll < 0.4:
        shape = _factor_shape(g.rng, v.size)
        text = g.choice([f"{x}.reshape({tuple(shape)})", f"np.reshape({x}, {tuple(shape)})",
                         f"{x}.ravel()"])
        # NumPy's reshape is a view or a copy depending on the memory layout, kiln's always a
        # view (it has no layouts): writing to either side afterwards differs, so where NumPy
        # copies, neither side is written in place later.
        g.try_add([f"{name} = {text}"])
        if isinstance(g.value(name), np.ndarray) and not np.shares_memory(g.value(name), v):
            g.frozen.update([name, x])
        return True
    elif roll < 0.45:
        text = g.choice([f"{x}.T", f"np.transpose({x})"])
    elif roll < 0.55 and v.ndim >= 2:
        axes = tuple(g.rng.permutation(v.ndim).tolist())
        text = f"np.transpose({x}, {axes})"
    elif roll < 0.7 and v.ndim >= 2:
        a, b = g.rng.integers(-v.ndim, v.ndim, 2)
        text = f"np.swapaxes({x}, {a}, {b})"
    elif roll < 0.85:
        text = f"np.expand_dims({x}, {int(g.rng.integers(-v.ndim - 1, v.ndim + 1))})"
    else:
        ones = [d for d, n in enumerate(v.shape) if n == 1]
        text = (f"np.squeeze({x}, axis={g.choice(ones)})" if ones and g.rng.random() < 0.5
                else f"np.squeeze({x})")
    return _expression(g, name, text)


def _slice_text(g, n):
    kind = g.rng.random()
    i, j = (int(v) for v in g.rng.integers(-n - 1, n + 2, 2))
    step = int(g.rng.integers(1, 4)) * (-1 if g.rng.random() < 0.3 else 1)
    if kind < 0.25:
        return ":"
    if kind < 0.4 and n:
        return str(int(g.rng.integers(-n, n)))
    if kind < 0.55:
        return f"::{step}"
    if kind < 0.75:
        return f"{i}:{j}"
    return f"{i}:{j}:{step}"


def op_slice(g):
    x = g.pick(lambda v: v.ndim > 0)
    v = g.value(x)
    parts = [_slice_text(g, n) for n in v.shape[:int(g.rng.integers(1, v.ndim + 1))]]
    if g.rng.random() < 0.15:
        parts.insert(int(g.rng.integers(len(parts) + 1)), "None")
    if g.rng.random() < 0.15:
        parts.insert(0, "...") if len(parts) < v.ndim else None
    return f"{g.fresh()} = {x}[{', '.join(parts)}]"


def op_take(g):
    """Integer-array indexing: concrete index lists, 2-d index arrays, several arrays, slices
    beside them, and traced indices computed from the program's values."""
    x = g.pick(lambda v: v.ndim > 0)
    v = g.value(x)
    axis = int(g.rng.integers(v.ndim))
    n = v.shape[axis]
    if n == 0:
        raise Rejected("empty axis")

    def index_list(length):
        return [int(i) for i in g.rng.integers(-n, n, length)]
    roll = g.rng.random()
    lead = ":, " * axis
    if roll < 0.35:
        key = f"{lead}{index_list(int(g.rng.integers(1, 5)))}"
    elif roll < 0.5:
        key = f"{lead}np.array({np.array(index_list(4)).reshape(2, 2).tolist()})"
    elif roll < 0.65 and v.ndim >= 2:
        m = v.shape[1]
        if m == 0:
            raise Rejected("empty axis")
        rows = [int(i) for i in g.rng.integers(-v.shape[0], v.shape[0], 3)]
        columns = [int(i) for i in g.rng.integers(-m, m, 3)]
        key = g.choice([f"{rows}, {columns}", f"{rows}, 1:", f"1:, {columns}",
                        f"{rows[:1]}, ..., {columns[:1]}" if v.ndim > 2 else f"{rows}, -1"])
    else:
        ints = g.pick(lambda w: w.dtype.kind in "iu" and w.ndim <= 2)
        key = f"{lead}np.abs({ints}) % {n}"
    return f"{g.fresh()} = {x}[{key}]"


def op_where(g):
    x = g.pick()
    name = g.fresh()
    if g.rng.random() < 0.3:
        low, high = sorted(g.rng.integers(-3, 4, 2).tolist())
        bounds = g.choice([f"{low}, {high}", f"{low}, None", f"None, {high}",
                           f"{low - 0.5}, {high + 0.5}"])
        return _expression(g, name, f"np.clip({x}, {bounds})")
    condition = g.pick(lambda v: v.dtype == np.bool_) if g.rng.random() < 0.5 else (
        f"{x} > {g.scalar()}")
    other = g.pick() if g.rng.random() < 0.5 else g.scalar()
    first, second = (x, other) if g.rng.random() < 0.5 else (other, x)
    return _expression(g, name, f"np.where({condition}, {first}, {second})")


def op_join(g):
    x = g.pick(lambda v: v.ndim > 0)
    v = g.value(x)
    same = [n for n in g.variables() if g.value(n).shape == v.shape]
    y = g.choice(same)
    function = g.choice(["concatenate", "stack"])
    arrays = g.choice([f"({x}, {y})", f"[{x}, {y}, {x}]", f"({x},)"])
    axis = int(g.rng.integers(-v.ndim - (function == "stack"), v.ndim + (function == "stack")))
    if function == "concatenate" and g.rng.random() < 0.2:
        axis = None
    return f"{g.fresh()} = np.{function}({arrays}, axis={axis})"


def op_matmul(g):
    x = g.pick(lambda v: v.dtype.kind == "f" and v.ndim >= 1)
    v = g.value(x)
    name = g.fresh()
    if v.ndim == 1:
        return f"{name} = " + g.choice([f"np.dot({x}, {x})", f"{x} @ {x}",
                                        f"np.dot({x}, {x}[::-1])"])
    partners = [n for n in g.variables() if g.value(n).dtype.kind == "f" and g.value(n).ndim
                and g.value(n).shape[0 if g.value(n).ndim == 1 else -2] == v.shape[-1]]
    if partners and g.rng.random() < 0.5:
        y = g.choice(partners)
        return f"{name} = " + g.choice([f"{x} @ {y}", f"np.matmul({x}, {y})"] + (
            [f"np.dot({x}, {y})"] if v.ndim == 2 and g.value(y).ndim <= 2 else []))
    return f"{name} = " + g.choice([f"{x} @ np.swapaxes({x}, -1, -2)",
                                    f"np.matmul(np.swapaxes({x}, -1, -2), {x})"] + (
        [f"np.dot({x}, {x}.T)"] if v.ndim == 2 else []))


def op_astype(g):
    x = g.pick()
    v = g.value(x)
    target = np.dtype(g.choice(DTYPES))
    if v.dtype.kind == "f" and target.kind in "iu" and v.size:
        info = np.iinfo(target)
        # Out-of-range float -> int conversions are undefined in C: avoided.
        values = v.astype(np.float64)
        if not (np.isfinite(values).all() and values.min() > float(info.min) - 1
                and values.max() < float(info.max) + 1):
            raise Rejected("float to int out of range")
    return _expression(g, g.fresh(), f"{x}.astype(np.{target.type.__name__})")


def _mutable(g):
    """A variable that may be written in place: an array of the program's own (never one
    that shares memory with an input) and writable (not a broadcast or diagonal view)."""
    protected = sorted(g.frozen) + (g.names if g.rng.random() < 0.7 else [])

    def fits(v):  # (kiln writes updated inputs back to the caller's arrays)
        return (isinstance(v, np.ndarray) and v.flags.writeable and v.size > 0 and not any(
            np.shares_memory(v, g.value(a)) for a in protected))
    if g.rng.random() < 0.5:
        x = g.pick()
        name = g.fresh()
        text = g.choice([f"{x} + 1", f"{x}.copy()", f"{x} * 2"])
        return name, [f"{name} = {text}"], _fresh_value(g, text)
    return g.pick(fits), [], None


def _fresh_value(g, text):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = eval(text, dict(g.env))
    if not isinstance(value, np.ndarray) or value.size == 0:
        raise Rejected("nothing to write to")
    return value


def op_inplace(g):
    target, lines, value = _mutable(g)
    value = g.value(target) if value is None else value
    kind = value.dtype.kind
    scalar = g.choice(["True", "False"]) if kind == "b" else g.scalar(
        "int" if kind in "iu" else "any")
    update = g.choice(["+", "-", "*"]) if kind != "b" else g.choice(["&", "|", "^"])
    roll = g.rng.random()
    if roll < 0.25:
        key = g.choice(["...", ":", "::2", "-1", "1:", "::-2"] if value.ndim else ["..."])
        lines.append(f"{target}[{key}] {update}= {scalar}")
        check = f"{target}[{key}] {update} {scalar}"
    elif roll < 0.45:
        mask = g.choice([f"{target} > 0", f"{target} != 1", f"~({target} < 1)"]) if (
            kind != "b") else target
        lines.append(g.choice([f"{target}[{mask}] = {scalar}",
                               f"{target}[{mask}] {update}= {scalar}"]))
        check = f"{target} {update} {scalar}"
    elif roll < 0.6 and value.ndim:
        n = value.shape[0]
        index = sorted(set(int(i) for i in g.rng.integers(-n, n, 3)))
        lines.append(f"{target}[{index}] = {scalar}")
        check = None
    elif roll < 0.8:
        other = g.pick(lambda v: np.can_cast(v.dtype, value.dtype, "same_kind"))
        lines.append(g.choice([f"{target} {update}= {other}",
                               f"np.{_UPDATE[update]}({target}, {other}, out={target})"]))
        check = f"{target} {update} {other}"
    else:
        other = g.pick(lambda v: np.can_cast(v.dtype, value.dtype, "same_kind"))
        lines.append(f"{target}[...] = {other}")
        check = None
    return lines, check


def op_alias(g):
    """`y = x; x += 1`: an array changes for both names, a NumPy scalar is rebound."""
    x = g.pick(lambda v: isinstance(v, np.generic) or v.flags.writeable and v.size > 0 and not any(
        np.shares_memory(v, g.value(a)) for a in sorted(g.frozen)))
    v = g.value(x)
    update = g.choice(["+", "-", "*"]) if v.dtype.kind != "b" else g.choice(["&", "|"])
    scalar = g.choice(["True", "False"]) if v.dtype.kind == "b" else g.scalar(
        "int" if v.dtype.kind in "iu" else "any")
    return [f"{g.fresh()} = {x}", f"{x} {update}= {scalar}"], f"{x} {update} {scalar}"


_UPDATE = {"+": "add", "-": "subtract", "*": "multiply", "&": "bitwise_and", "|": "bitwise_or",
           "^": "bitwise_xor"}


def op_create(g):
    x = g.pick()
    v = g.value(x)
    last = f"{x}.shape[-1]" if v.ndim else "3"
    dtype = g.choice(["", ", dtype=np.int32", ", dtype=np.float32", ", dtype=bool"])
    made = g.choice([
        f"np.zeros({x}.shape{dtype})", f"np.ones({x}.shape{dtype})",
        f"np.full({x}.shape, {g.scalar()})", f"np.arange({last})",
        f"np.arange(1, {last} + 1) * 0.5", f"np.linspace(-1, 1, {last})",
        f"np.linspace(0, {last}, {last}, endpoint=False)", f"np.eye({last}{dtype})",
        f"np.eye({last}, k=1)", f"np.zeros_like({x})", f"np.ones_like({x}, dtype=np.int8)",
        f"np.full_like({x}, 2)"])
    if g.rng.random() < 0.6:
        made = f"{x} {g.choice(['+', '*', '-'])} {made}"
    return _expression(g, g.fresh(), made)


def op_new(g):
    """np.diff, roll, tile, repeat, pad, nansum, round, diagonal."""
    x = g.pick()
    v = g.value(x)
    ndim = v.ndim
    function = g.choice(["diff", "roll", "tile", "repeat", "pad", "nansum", "round",
                         "diagonal"])
    if function == "diff":
        options = [f"n={g.choice([1, 1, 2])}", f"axis={g.axis(ndim, False, False)}"]
        if g.rng.random() < 0.2:
            options.append(g.choice(["prepend=0", "append=1"]))
        text = f"np.diff({x}, {', '.join(options)})"
    elif function == "roll":
        shift = int(g.rng.integers(-5, 6))
        axis = g.axis(ndim, allow_tuple=False)
        text = f"np.roll({x}, {shift})" if axis == "None" else f"np.roll({x}, {shift}, axis={axis})"
        if ndim >= 2 and g.rng.random() < 0.3:
            text = f"np.roll({x}, (1, -2), axis=(0, 1))"
    elif function == "tile":
        reps = g.choice(["2", "(2, 1)", "(1, 2)", "(2, 1, 2)", "3"])
        text = f"np.tile({x}, {reps})"
    elif function == "repeat":
        axis = g.axis(ndim, allow_tuple=False)
        if axis != "None" and g.rng.random() < 0.4:
            counts = [int(c) for c in g.rng.integers(0, 3, v.shape[int(axis)])]
            text = f"np.repeat({x}, {counts}, axis={axis})"
        else:
            text = f"np.repeat({x}, {g.choice([1, 2, 3])}, axis={axis})"
    elif function == "pad":
        width = g.choice(["1", "(1, 2)", "((0, 1),) * " + str(ndim), "2"])
        mode = g.choice(["constant", "edge", "reflect", "symmetric", "wrap"])
        extra = ", constant_values=3" if mode == "constant" and g.rng.random() < 0.5 else ""
        text = f"np.pad({x}, {width}, mode='{mode}'{extra})"
    elif function == "nansum":
        axis = g.axis(ndim)
        source = (f"np.where({x} > 1, np.nan, {x})" if v.dtype.kind == "f" and g.rng.random()
                  < 0.6 else x)
        text = f"np.nansum({source}, axis={axis})"
    elif function == "round":
        text = f"np.round({x}, {g.choice([0, 1, 2, -1])})"
    else:
        offset = int(g.rng.integers(-2, 3))
        if ndim > 2 and g.rng.random() < 0.5:
            axis1, axis2 = g.rng.choice(ndim, 2, replace=False).tolist()
            text = f"np.diagonal({x}, {offset}, {axis1}, {axis2})"
        else:
            text = g.choice([f"np.diagonal({x}, {offset})", f"{x}.diagonal()"])
    return _expression(g, g.fresh(), text)


OPERATIONS = ([op_unary] * 3 + [op_binary] * 5 + [op_compare] * 2 + [op_reduce] * 3 +
              [op_cumsum] + [op_shape] * 2 + [op_slice] * 2 + [op_take] * 2 + [op_where] * 2 +
              [op_join] + [op_matmul] + [op_astype] + [op_inplace] * 3 + [op_alias] +
              [op_create] * 2 + [op_new] * 4)


# ---- programs, running and comparing ----

class Program:
    def __init__(self, seed):
        for attempt in range(100):
            try:
                generator = Generator(seed * 1000 + attempt)
                self.source = generator.generate(int(generator.rng.integers(2, 9)))
                self.inputs, self.descriptions = generator.inputs, generator.descriptions
                # A float64 result computed from float32 or float16 values carries their error.
                self.tolerance = max([TOLERANCE[d.name] for d in generator.precisions] + [0])
                namespace = {"np": np}
                exec(compile(self.source, f"<fuzz program {seed}>", "exec"), namespace)
                self.function = namespace["program"]
                self.expected, self.expected_inputs = self.run_numpy()
                break
            except Rejected:
                continue
        else:
            raise AssertionError(f"seed {seed}: no program NumPy accepts")
        self.seed = seed

    def run_numpy(self):
        """The results, then the inputs as the program leaves them."""
        inputs = [_copy(a) for a in self.inputs]
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            try:
                return self.function(*inputs), inputs
            except Exception as error:
                raise Rejected(repr(error)) from None

    def describe(self):
        inputs = ", ".join(f"a{i} = {d}" for i, d in enumerate(self.descriptions))
        return f"seed {self.seed} (inputs: {inputs}):\n{self.source}"


def _compare(got, expected, tolerance):
    """None, or what differs between one kiln result and NumPy's."""
    if isinstance(expected, np.generic) != isinstance(got, np.generic):
        return f"type {type(got).__name__}, NumPy gives {type(expected).__name__}"
    got, expected = np.asarray(got), np.asarray(expected)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, NumPy gives {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, NumPy gives {expected.shape}"
    if expected.dtype.kind not in "fc":
        return None if np.array_equal(got, expected) else f"values\n{got}\nNumPy gives\n{expected}"
    tolerance = max(tolerance, TOLERANCE[expected.dtype.name])
    finite = np.abs(expected[np.isfinite(expected)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    if np.allclose(got, expected, rtol=tolerance, atol=tolerance * scale, equal_nan=True):
        return None
    return f"values\n{got}\nNumPy gives\n{expected}"


def run_batch(programs):
    """Compiles the programs as one graph; returns the failures as (program, message)."""
    sizes = [len(p.inputs) for p in programs]

    def batched(*arrays):
        results, position = [], 0
        for program, size in zip(programs, sizes):
            results.append(program.function(*arrays[position:position + size]))
            position += size
        return tuple(results)
    arrays = [_copy(a) for p in programs for a in p.inputs]
    try:
        with np.errstate(all="ignore"):
            results = kiln.compile(batched, fullgraph=True)(*arrays)
    except Exception as error:
        if len(programs) > 1:
            return [f for p in programs for f in run_batch([p])]
        if SKIP_UNSUPPORTED and isinstance(error, kiln.Unsupported):
            return []
        if not isinstance(error, kiln.GraphBreak):
            return [(programs[0], f"{type(error).__name__}: {error}")]
        # A break kiln takes on purpose (NumPy's float16 sum rounding each step, say): the
        # program runs around it, and its results must still be NumPy's.
        arrays = [_copy(a) for a in programs[0].inputs]
        try:
            with np.errstate(all="ignore"):
                results = kiln.compile(batched)(*arrays)
        except Exception as error:
            return [(programs[0], f"{type(error).__name__} around a graph break: {error}")]
    failures, position = [], 0
    for program, got in zip(programs, results):
        inputs = arrays[position:position + len(program.inputs)]
        position += len(program.inputs)
        problems = [f"output {i}: {problem}" for i, (g, e) in enumerate(zip(got, program.expected))
                    if (problem := _compare(g, e, program.tolerance)) is not None]
        problems += [f"input a{i} after the call: {problem}" for i, (g, e) in enumerate(
            zip(inputs, program.expected_inputs))
            if (problem := _compare(g, e, program.tolerance)) is not None]
        if len(got) != len(program.expected):
            problems.append(f"{len(got)} outputs, NumPy gives {len(program.expected)}")
        failures.extend((program, problem) for problem in problems)
    if failures and len(programs) > 1:
        return [f for p in programs for f in run_batch([p])]
    return failures


def _report(failures):
    return "\n\n".join(f"{message}\nin program {program.describe()}"
                       for program, message in failures)


@pytest.mark.parametrize("first", range(FIRST_SEED, FIRST_SEED + PROGRAMS // 3, BATCH))
def test_fuzz_numpy_complex(first, monkeypatch):
    """The same programs with complex inputs among the real ones (a third as many)."""
    monkeypatch.setattr(__import__(__name__), "DTYPES", DTYPES + COMPLEX_DTYPES)
    monkeypatch.setattr(__import__(__name__), "SKIP_UNSUPPORTED", True)
    programs = [Program(seed) for seed in range(first, min(first + BATCH,
                                                          FIRST_SEED + PROGRAMS // 3))]
    failures = run_batch(programs)
    if failures:
        pytest.fail(_report(failures), pytrace=False)


@pytest.mark.parametrize("first", range(FIRST_SEED, FIRST_SEED + PROGRAMS, BATCH))
def test_fuzz_numpy(first):
    programs = [Program(seed) for seed in range(first, min(first + BATCH,
                                                          FIRST_SEED + PROGRAMS))]
    failures = run_batch(programs)
    if failures:
        pytest.fail(_report(failures), pytrace=False)


if __name__ == "__main__":
    import sys
    for seed in map(int, sys.argv[1:]):
        program = Program(seed)
        print(program.describe())
        print(_report(run_batch([program])) or "ok")
