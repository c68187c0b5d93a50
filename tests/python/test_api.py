"""The package, the binding contract (Trace/Tensor/compile_graph/Compiled) and kiln.compile's API,
tested with the stand-in tracer of conftest.py so they do not depend on kiln._tracer."""
import inspect
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import kiln
from kiln import _kiln

AxisError = getattr(np, "exceptions", np).AxisError  # numpy.exceptions: NumPy >= 1.25


def compile_trace(build, *arrays, **options):
    """Traces build(*input tensors) directly on the bindings and compiles it."""
    trace = _kiln.Trace()
    inputs = [trace.input(a.dtype.name, list(a.shape)) for a in arrays]
    outputs = build(*inputs)
    if not isinstance(outputs, list):
        outputs = [outputs]
    strides = [[] if a.flags.c_contiguous else [s // a.itemsize for s in a.strides]
               for a in arrays]
    return _kiln.compile_graph(trace, outputs, strides, options or None)


# ---- package ----
def test_import_from_any_directory_uses_the_installed_package(tmp_path):
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", "import kiln; print(kiln.__file__)"],
                            cwd=tmp_path, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "site-packages" in result.stdout


# ---- bindings ----
def test_tensor_attributes():
    trace = _kiln.Trace()
    x = trace.input("float32", [2, 3])
    assert (x.dtype, x.shape, x.ndim, x.size) == ("float32", (2, 3), 2, 6)
    y = _kiln.sum(x, [1], True)
    assert y.shape == (2, 1) and y.id != x.id
    assert trace.input(np.float64, [4]).dtype == "float64"
    assert x.trace is trace
    assert _kiln.transpose(x).shape == (3, 2) and x.T.shape == (3, 2)


def test_compile_graph_runs_on_numpy_arrays():
    x = np.linspace(-1, 1, 7)
    y = np.arange(7, dtype=np.float64)
    compiled = compile_trace(lambda a, b: [_kiln.add(_kiln.sin(a), _kiln.multiply(b, 2.0)),
                                           _kiln.sum(a)], x, y)
    first, total = compiled.run([x, y])
    np.testing.assert_allclose(first, np.sin(x) + 2 * y, rtol=1e-12)
    np.testing.assert_allclose(total, x.sum(), atol=1e-12)
    assert first.dtype == np.float64 and first.flags.owndata is False
    assert compiled.kernel_count == len(compiled.kernels) >= 1
    assert compiled.op_count >= 3 and compiled.compile_seconds > 0
    assert os.path.exists(compiled.source_path) and "kernel" in compiled.source
    assert "sin" in compiled.graph_text


def test_compiled_reads_strided_inputs_in_place():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base[:, ::2].T  # neither C- nor F-contiguous
    compiled = compile_trace(lambda a: _kiln.multiply(a, 3.0), view)
    np.testing.assert_array_equal(compiled.run([view])[0], view * 3)


def test_compiled_writes_into_given_outputs():
    x = np.arange(5, dtype=np.int64)
    compiled = compile_trace(lambda a: _kiln.add(a, a), x)
    out = np.empty(5, dtype=np.int64)
    (result,) = compiled.run([x], out=[out])
    assert result is out
    np.testing.assert_array_equal(out, 2 * x)


def test_slices_accept_python_slices_and_tuples():
    x = np.arange(10, dtype=np.float64)
    compiled = compile_trace(lambda a: [_kiln.slice(a, [slice(None, None, -2)]),
                                        _kiln.slice(a, [(1, 7, 3)])], x)
    reversed_, stepped = compiled.run([x])
    np.testing.assert_array_equal(reversed_, x[::-2])
    np.testing.assert_array_equal(stepped, x[1:7:3])


def test_constants_and_full():
    x = np.ones(3, dtype=np.float32)
    table = np.array([1.5, 2.5, 3.5], dtype=np.float32)

    def build(a):
        trace = a.trace
        return [_kiln.add(a, trace.constant(table)), _kiln.full(a, [2], 7, "int32")]

    with_constant, filled = compile_trace(build, x).run([x])
    np.testing.assert_array_equal(with_constant, x + table)
    assert filled.dtype == np.int32 and filled.tolist() == [7, 7]


def test_errors_map_to_numpy_exception_classes():
    trace = _kiln.Trace()
    trace.location = "model.py:12"
    a, b = trace.input("float64", [3]), trace.input("float64", [4])
    with pytest.raises(ValueError, match=r"add at model\.py:12"):
        _kiln.add(a, b)
    with pytest.raises(AxisError, match="sum"):
        _kiln.sum(a, [3])
    with pytest.raises(TypeError, match="dtype"):
        trace.input("complex-ish", [1])
    assert issubclass(kiln.Unsupported, RuntimeError)


def test_traced_errors_name_the_op_and_the_users_line():
    import os
    here = os.path.basename(__file__)

    def bad_axis(x):
        return np.sum(x, axis=3)

    def bad_reshape(x):
        return x.reshape(7)

    def bad_broadcast(x):
        return x + np.ones(4)

    def own_error(x):
        raise ValueError("the user's own message")

    # NumPy's own errors came named after the tracer's dispatchers ("forward", "method",
    # "<lambda>", "apply_function") or after nothing at all (len).
    for function, error, pattern in [
            (bad_axis, AxisError, rf"sum at {here}:\d+: axis 3 is out of bounds"),
            (bad_reshape, ValueError, rf"reshape at {here}:\d+: cannot reshape array of size 3"),
            (bad_broadcast, ValueError, rf"add at {here}:\d+: operands could not be broadcast"),
            (lambda x: (x > 0) - (x > 1), TypeError, rf"^kiln: subtract at {here}:\d+: numpy bo"),
            (lambda x: -(x > 0), TypeError, rf"^kiln: negative at {here}:\d+: The numpy bo"),
            (lambda x: x[:0].max(), ValueError, rf"^kiln: a?max at {here}:\d+: zero-size array"),
            (lambda x: np.linalg.solve(np.eye(4), x), ValueError, rf"^kiln: solve at {here}"),
            (lambda x: len(x.sum()), TypeError, rf"^kiln: len at {here}:\d+: len\(\) of unsized"),
            (own_error, ValueError, "^the user's own message$")]:
        with pytest.raises(error, match=pattern):
            kiln.compile(function)(np.ones(3))


def test_options_are_checked():
    with pytest.raises(ValueError, match="unknown option 'speed'"):
        kiln.compile(lambda x: x, options={"speed": 11})
    with pytest.raises(ValueError, match="unknown mode"):
        kiln.compile(lambda x: x, mode="fastest")


# ---- kiln.compile API ----
def test_compile_forms_keep_name_doc_and_signature(standin):
    def f(x, y=2.0):
        """Adds."""
        return x + y

    for compiled in (kiln.compile(f), kiln.compile()(f), kiln.compile(mode="max-autotune")(f)):
        assert compiled.__name__ == "f" and compiled.__doc__ == "Adds."
        assert inspect.signature(compiled) == inspect.signature(f)
        x = np.arange(4.0)
        np.testing.assert_array_equal(compiled(x), x + 2.0)

    @kiln.compile
    def g(x):
        return np.sin(x) + np.cos(x)

    x = np.linspace(0, 3, 11)
    np.testing.assert_allclose(g(x), np.sin(x) + np.cos(x), rtol=1e-14)
    assert kiln.compile(f, disable=True) is f


def test_pytrees_in_and_out(standin):
    @kiln.compile
    def f(inputs, scale):
        a, b = inputs["pair"]
        return {"sum": a + b, "both": (a * scale, [b, 3])}

    a, b = np.arange(3.0), np.ones(3)
    result = f({"pair": (a, b)}, 2.0)
    assert set(result) == {"sum", "both"}
    np.testing.assert_array_equal(result["sum"], a + b)
    np.testing.assert_array_equal(result["both"][0], a * 2)
    np.testing.assert_array_equal(result["both"][1][0], b)
    assert result["both"][1][1] == 3 and type(result["both"][1][1]) is int
    assert isinstance(result["both"], tuple) and isinstance(result["both"][1], list)


def test_static_arguments_are_guarded_by_value(standin):
    @kiln.compile
    def f(x, factor):
        return x * factor

    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x, 2), x * 2)
    np.testing.assert_array_equal(f(x, 5), x * 5)
    np.testing.assert_array_equal(f(x, 2), x * 2)
    assert len(f._kiln_function.cache) == 2


def test_mutation_of_inputs_is_written_back(standin):
    @kiln.compile
    def f(x, y):
        x += y
        return y * 2

    x, y = np.zeros(4), np.arange(4.0)
    for _ in range(2):  # the second call is a cache hit
        out = f(x, y)
    np.testing.assert_array_equal(x, 2 * y)
    np.testing.assert_array_equal(out, y * 2)


def test_mutation_of_strided_input(standin):
    @kiln.compile
    def f(x):
        x += 1.0

    base = np.zeros((3, 4))
    f(base[:, 1::2])
    expected = np.zeros((3, 4))
    expected[:, 1::2] = 1
    np.testing.assert_array_equal(base, expected)


OFFSET = np.array([10.0, 20.0, 30.0])


def test_globals_and_closures_are_read_at_call_time(standin):
    global OFFSET
    scale = np.full(3, 2.0)

    @kiln.compile
    def f(x):
        return x * scale + OFFSET

    x = np.ones(3)
    np.testing.assert_array_equal(f(x), [12.0, 22.0, 32.0])
    OFFSET = np.array([1.0, 2.0, 3.0])  # rebound global: same guards, new values
    np.testing.assert_array_equal(f(x), [3.0, 4.0, 5.0])
    OFFSET[:] = 0  # changed in place
    np.testing.assert_array_equal(f(x), [2.0, 2.0, 2.0])
    scale = np.full(3, 5.0)  # noqa: F841 (closure cell rebound)
    np.testing.assert_array_equal(f(x), [5.0, 5.0, 5.0])
    assert len(f._kiln_function.cache) == 1


def _gram(A):
    return np.exp(-(A.T @ A))


FACTOR = 2.0


def _nested_factor(x):
    return sum(x * FACTOR for _ in range(1))  # FACTOR: a global of the generator's code


def test_globals_named_like_attributes_the_code_reads_are_not_guarded():
    """`np.exp` and `A.T` name no globals `exp` and `T` (co_names holds attribute names too):
    a script variable of that name, defined or changed, recompiled twice. Globals the code
    loads, nested code's included, are still read at each call."""
    global T, exp, FACTOR
    f, nested = kiln.compile(_gram), kiln.compile(_nested_factor)
    A, x = np.arange(6.0).reshape(2, 3) / 10, np.ones(3)
    f(A)
    try:
        for value in (0.5, 1.0, 2.0):
            T = exp = FACTOR = value  # noqa: F841
            np.testing.assert_allclose(f(A), _gram(A))
            np.testing.assert_allclose(nested(x), _nested_factor(x))
    finally:
        del T, exp
        FACTOR = 2.0
    assert len(f._kiln_function.cache) == 1


WEIGHTS = np.array([1.0, 2.0, 3.0])


def _weighted(x):
    return x * WEIGHTS


def _weighted_twice(x):
    return _weighted(x) + sum(x * WEIGHTS for _ in range(1))  # a generator: nested code


class Model:
    def __init__(self):
        self.shift = np.array([0.5, 0.5, 0.5])
        self.gain = 2.0

    def forward(self, x):
        return self.scaled(x) + self.shift

    def scaled(self, x):
        return _weighted(x) * self.gain


def test_arrays_of_helpers_and_of_self_are_read_at_call_time():
    global WEIGHTS
    original = WEIGHTS
    x = np.ones(3)
    f = kiln.compile(lambda x: _weighted_twice(x) + 1, fullgraph=True)
    model = Model()
    method = kiln.compile(model.forward, fullgraph=True)
    try:
        for change in range(4):
            if change == 1:
                WEIGHTS[0] = 10.0                    # a helper's global, changed in place
            elif change == 2:
                WEIGHTS = np.array([4.0, 5.0, 6.0])  # ... and rebound
            elif change == 3:
                model.shift = np.zeros(3)            # an attribute of self, rebound
                model.gain = 3.0                     # a static attribute: a guard
            np.testing.assert_array_equal(f(x), 2 * x * WEIGHTS + 1)
            np.testing.assert_array_equal(method(x), x * WEIGHTS * model.gain + model.shift)
    finally:
        WEIGHTS = original
    assert len(f._kiln_function.cache) == 1
    assert len(method._kiln_function.cache) == 2  # gain 2.0, then 3.0


class Scaler:
    def __init__(self):
        self.k, self.w = 1.0, np.ones(3)

    def __call__(self, x):
        return x * self.k + self.w


CONFIG = types.SimpleNamespace(scale=2.0, offset=np.ones(3))


def _configured(x):
    return x * CONFIG.scale + CONFIG.offset


def test_callable_objects_and_attributes_of_global_objects_are_read_at_call_time():
    """kiln.compile(obj) reads obj's attributes as a method's self; cfg.scale and cfg.offset of
    a global object are read like globals (they were baked in at the first trace)."""
    x, scaler = np.ones(3), Scaler()
    compiled_object, configured = kiln.compile(scaler), kiln.compile(_configured)
    for change in range(3):
        if change == 1:
            scaler.w[:] = 5.0
            CONFIG.offset[:] = 4.0
        elif change == 2:
            scaler.k = 3.0
            CONFIG.scale, CONFIG.offset = 4.0, np.zeros(3)
        np.testing.assert_array_equal(compiled_object(x), scaler(x))
        np.testing.assert_array_equal(configured(x), _configured(x))


class Activations:
    slope = 0.1

    @classmethod
    def leaky(cls, x):
        return np.where(x > 0, x, cls.slope * x)

    @staticmethod
    def relu(x):
        return np.maximum(x, 0)


def test_classmethods_and_staticmethods_compile():
    """A classmethod is a method bound to its class, whose __dict__ is a mappingproxy, not the
    dict the guards read self's attributes from (a TypeError from kiln.compile itself)."""
    x = np.linspace(-1.0, 1.0, 5)
    for method in (Activations.leaky, Activations.relu, Activations().leaky):
        np.testing.assert_array_equal(kiln.compile(method)(x), method(x))


def test_config_list_functions_and_logs(standin, capfd):
    assert kiln.config.recompile_limit == 8 and kiln.config.numpy_default_float == "float64"
    with pytest.raises(AttributeError, match="no setting"):
        kiln.config.nonsense = 1
    with pytest.raises(AttributeError):
        kiln.config.nonsense
    assert "reduce-overhead" in kiln.list_mode_options()
    assert "num_threads" in kiln.list_options()
    kiln.set_logs("graph,output_code")
    f = kiln.compile(lambda x: x * 3.0)
    f(np.ones(2))
    err = capfd.readouterr().err
    assert "[kiln:graph]" in err and "[kiln:output_code]" in err
    kiln.set_logs("")
    f(np.ones(5))
    assert "[kiln:" not in capfd.readouterr().err


def test_reset_forgets_compiled_graphs(standin):
    f = kiln.compile(lambda x: x + 1.0)
    f(np.ones(2))
    assert len(f._kiln_function.cache) == 1
    kiln.reset()
    assert len(f._kiln_function.cache) == 0
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_explain_reports_graphs_ops_and_kernels(standin):
    def f(x):
        return np.sin(x) * 2.0 + 1.0

    report = kiln.explain(f)(np.ones(3))
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.ops_per_graph[0] >= 3 and len(report.kernels) >= 1
    assert report.compile_time > 0
    np.testing.assert_allclose(report.result, np.sin(1) * 2 + 1)
    text = str(report)
    assert "Graph Count: 1" in text and "Graph Break Count: 0" in text


def test_with_the_real_tracer_end_to_end():
    @kiln.compile
    def f(x, params):
        y = x * params["scale"]
        if y.sum() > 0:  # graph break, continued
            return {"out": np.exp(y), "shape": y.shape}
        return {"out": -y, "shape": 0}

    x = np.ones(3)
    result = f(x, {"scale": 2.0})
    np.testing.assert_allclose(result["out"], np.exp(2 * x), rtol=1e-14)
    assert result["shape"] == (3,)
    np.testing.assert_array_equal(f(-x, {"scale": 2.0})["out"], 2 * x)

    zero_d = kiln.compile(lambda v: np.sin(v) + np.cos(v))(np.array(0.5))
    assert type(zero_d) is np.float64
    np.testing.assert_allclose(zero_d, np.sin(0.5) + np.cos(0.5), rtol=1e-15)


def test_the_compiled_function_is_a_callable_that_binds_like_a_function():
    """kiln.compile returns a C++ callable (src/python/compiled_call.cpp): it binds as a method,
    keeps the wrapped function's attributes, raises the user's errors, and is collected."""
    import gc
    import weakref

    class Model:
        scale = 3.0

        @kiln.compile
        def forward(self, x):
            return x * self.scale

    model = Model()
    np.testing.assert_array_equal(model.forward(np.ones(2)), [3.0, 3.0])
    assert Model.forward.__wrapped__.__name__ == "forward" and "forward" in repr(Model.forward)
    assert Model.forward.__get__(None, Model) is Model.forward

    def total(x, *, axis=0):
        return np.sum(x, axis=axis), x.sum()  # an array, and a 0-d value returned as a scalar

    compiled = kiln.compile(total)
    for kwargs in ({}, {"axis": 1}):
        got, want = compiled(np.ones((2, 3)), **kwargs), total(np.ones((2, 3)), **kwargs)
        np.testing.assert_array_equal(got[0], want[0])
        assert type(got[1]) is type(want[1]) and got[1] == want[1]
    with pytest.raises(TypeError):
        compiled()  # Python's own error for the call
    with pytest.raises(ValueError):
        compiled(np.ones((2, 3)), axis=5)  # NumPy's error, named by the tracer
    reference = weakref.ref(compiled)
    del compiled
    gc.collect()
    assert reference() is None


def test_size_symbols_from_python():
    trace = _kiln.Trace()
    rows = trace.size_symbol(8)
    assert repr(rows) == "s0" and repr(rows * 2 + 1) == "2*s0 + 1" and rows * 3 // 3 == rows
    assert hash(rows + 0) == hash(rows) and rows != 8
    with pytest.raises(TypeError):
        int(rows)
    x = trace.input("float64", [rows, 3])
    assert x.shape == (rows, 3)
    flat = _kiln.reshape(x, [rows * 3])
    compiled = _kiln.compile_graph(trace, [_kiln.exp(flat)])
    for n in (2, 5, 8):
        value = np.arange(n * 3.0).reshape(n, 3) / 10
        np.testing.assert_allclose(compiled.run([value])[0], np.exp(value.ravel()))
    with pytest.raises(ValueError, match="stands for sizes >= 2"):
        compiled.run([np.zeros((1, 3))])
    with pytest.raises(ValueError, match="hint"):
        trace.size_symbol(1)
