"""Shared fixtures: a fresh kernel cache per test, a clean kiln state, and a small stand-in
tracer (a few ops over kiln._kiln) so the driver is tested independently of kiln._tracer."""
import os
import sys
import types

import numpy as np
import pytest

import kiln
from kiln import _compile, _graph_breaks, _kiln


# The tests check the graphs kiln builds around graph breaks on tiny arrays, which NumPy runs in
# microseconds: kiln would time them eagerly and never compile them (kiln._retrace
# COMPILE_EAGER_CALLS). They compile what they meet; test_retrace_first_calls.py turns the bound
# on (the `eager_time_bounds` fixture).
COMPILE_EAGER_CALLS = getattr(kiln._retrace, "COMPILE_EAGER_CALLS", None)


@pytest.fixture(autouse=True)
def fresh_kiln(tmp_path, monkeypatch):
    cache_dir = tmp_path / "kiln-cache"
    monkeypatch.setenv("KILN_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(kiln._retrace, "COMPILE_EAGER_CALLS", None, raising=False)
    kiln.reset()
    kiln.set_logs("")
    with kiln.config.patch(cache_dir=str(cache_dir)):
        yield cache_dir
    kiln.set_logs("")
    _compile.set_tracer(None)


@pytest.fixture
def traces(monkeypatch):
    """A list that gets an item for every call kiln traces (CompiledFunction.trace_and_compile)."""
    counted = []
    original = _compile.CompiledFunction.trace_and_compile

    def counting(self, *args, **kwargs):
        counted.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(_compile.CompiledFunction, "trace_and_compile", counting)
    return counted


@pytest.fixture
def eager_time_bounds(monkeypatch):
    """kiln's own bound on the compiles of retraced calls by their eager time."""
    monkeypatch.setattr(kiln._retrace, "COMPILE_EAGER_CALLS", COMPILE_EAGER_CALLS or 50,
                        raising=False)


@pytest.fixture
def cuda_sources(monkeypatch):
    """The CUDA source kiln would compile for every graph compiled from now on (an H100's: sm_90,
    132 multiprocessors), on any device: a list that fills as the test compiles."""
    sources = []
    real = kiln._compile._kiln.compile_graph

    def with_source(trace, outputs, strides, options, **kwargs):
        sources.append(kiln._kiln.cuda_source(trace, outputs, strides))
        return real(trace, outputs, strides, options, **kwargs)

    monkeypatch.setattr(kiln._compile._kiln, "compile_graph", with_source)
    return sources


@pytest.fixture
def compile_logged(capfd):
    """compile_logged(f, args, channels): kiln.compile(f)(*args) with those KILN_LOGS channels
    on; returns what they logged and the result."""
    def run(f, args, channels):
        capfd.readouterr()
        kiln.set_logs(channels)
        try:
            result = kiln.compile(f)(*args)
        finally:
            kiln.set_logs("")
        return capfd.readouterr().err, result
    return run


def _user_location():
    """file:line of the first frame outside this file and kiln (what a real tracer reports)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.endswith("conftest.py") and f"{os.sep}kiln{os.sep}" not in filename:
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


_UFUNCS = {"sin": "sin", "cos": "cos", "exp": "exp", "add": "add", "subtract": "subtract",
           "multiply": "multiply", "negative": "negative", "sqrt": "sqrt", "greater": "greater"}


class StandIn:
    """A deliberately small tracer: arithmetic, a few ufuncs, sum, in-place add, bool() through
    the attached driver's graph_break and item() through GraphBreakSignal."""
    __array_priority__ = 1000
    traces = 0  # incremented per wrap of a first input: counts traces in tests

    def __init__(self, tensor):
        self.tensor = tensor

    @property
    def shape(self):
        return self.tensor.shape

    @property
    def dtype(self):
        return np.dtype(self.tensor.dtype)

    def _trace(self):
        return self.tensor

    @staticmethod
    def _operand(value, like):
        if isinstance(value, StandIn):
            return value.tensor
        if isinstance(value, np.ndarray):
            raise NotImplementedError("stand-in: array constants")
        return float(value)

    def _binary(self, name, other, reflected=False):
        kiln_trace_location(self)
        a, b = self.tensor, self._operand(other, self.tensor)
        if reflected:
            a, b = b, a
        return StandIn(getattr(_kiln, name)(a, b))

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, True)
    def __sub__(self, other): return self._binary("subtract", other)
    def __rsub__(self, other): return self._binary("subtract", other, True)
    def __mul__(self, other): return self._binary("multiply", other)
    def __rmul__(self, other): return self._binary("multiply", other, True)
    def __gt__(self, other): return self._binary("greater", other)

    def __iadd__(self, other):
        self.tensor = self._binary("add", other).tensor  # functionalised: rebinds
        return self

    def sum(self, axis=None):
        kiln_trace_location(self)
        axes = [] if axis is None else [axis]
        return StandIn(_kiln.sum(self.tensor, axes))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs or ufunc.__name__ not in _UFUNCS:
            return NotImplemented
        operands = [self._operand(value, self.tensor) for value in inputs]
        kiln_trace_location(self)
        return StandIn(getattr(_kiln, _UFUNCS[ufunc.__name__])(*operands))

    def __bool__(self):
        driver = _drivers[id(self.tensor.trace)]
        value = driver.graph_break(self.tensor, "bool() of a traced array", _user_location())
        return bool(value)

    def item(self):
        raise _graph_breaks.GraphBreakSignal("item() of a traced array", _user_location())


def kiln_trace_location(tracer):
    tracer.tensor.trace.location = _user_location()


_drivers = {}  # id(trace) -> the driver tracing it (attach_driver)


def _attach_driver(trace, driver):
    _drivers[id(trace)] = driver
    return None  # no creation functions to capture


def _wrap(tensor, trace=None):
    StandIn.traces += 1
    return StandIn(tensor)


def _unwrap(value):
    return value.tensor if isinstance(value, StandIn) else None


@pytest.fixture
def standin():
    """Installs the stand-in tracer; returns its module-like object (wrap, unwrap, StandIn)."""
    module = types.SimpleNamespace(wrap=_wrap, unwrap=_unwrap, StandIn=StandIn,
                                   is_scalar_result=lambda value: False,
                                   attach_driver=_attach_driver)
    StandIn.traces = 0
    _compile.set_tracer(module)
    yield module
    _compile.set_tracer(None)


class _HostCompiled:
    """A graph compiled for the CPU, run on the host memory of device-array stand-ins (their
    `host` NumPy arrays; NumPy arrays as they are)."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run(self, inputs, stream=0):
        return self.real.run([getattr(a, "host", a) for a in inputs], stream=stream)


class _CpuCompiler:
    """kiln._kiln as kiln.wrap_numpy sees it, with the CPU compiler standing in for the GPU's:
    wrap_numpy's trace, signature, caching and result logic run here without a GPU."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def cuda_unavailable_reason(self):
        return None

    def compile_graph(self, trace, outputs, strides=None, options=None, segment=False):
        return _HostCompiled(self.real.compile_graph(
            trace, outputs, strides, {**(options or {}), "device": "cpu"}, segment=segment))


@pytest.fixture
def cpu_stand_in(monkeypatch):
    """wrap_numpy's graphs compiled for and run on the CPU (NumPy arguments take its general
    path; so do tests/python/test_wrap_numpy_returned_views.py's stand-in CuPy arrays)."""
    from kiln import _retrace, _wrap_numpy
    compiler = _CpuCompiler(kiln._kiln)
    monkeypatch.setattr(_wrap_numpy, "_kiln", compiler)
    monkeypatch.setattr(_retrace, "_kiln", compiler)
