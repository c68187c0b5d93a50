"""Gradients through kiln.wrap_numpy on torch tensors (here on the CPU; tests/python/test_cuda.py
runs the CUDA case on the GPU machine): the NumPy code is traced by Dynamo, AOTAutograd derives
its backward, and kiln compiles both graphs. The reference is eager autograd through the same
NumPy calls (torch.compile with the "eager" backend runs torch's own ops, without kiln), and, for
float64, central differences of the NumPy function itself."""
import collections

import numpy as np
import pytest
import torch
from torch._dynamo.external_utils import wrap_numpy as torch_wrap_numpy

import kiln
import kiln.torch._backend as torch_backend


def softmax_rows(x, w):
    z = x @ w
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def broadcast_mix(x, w):
    return np.sin(x) * w[0] + np.exp(-x * x).sum(axis=0) / (1.0 + w[1] ** 2)


def clipped_norms(x, w):
    norms = np.sqrt((x * x).sum(axis=1) + 1e-3)
    return np.where(norms > 1.0, norms, 0.5 * x[:, 0] * w[0, 1]) + np.tanh(x[::2].mean())


def gathers(x, w):
    rows = np.array([2, 0, 3, 3])
    return (x[rows] * w[rows % 3]).cumsum(axis=0) + np.abs(x).max()


FUNCTIONS = [softmax_rows, broadcast_mix, clipped_norms, gathers]


def _inputs(dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 3, generator=generator, dtype=dtype)
    w = torch.randn(3, 3, generator=generator, dtype=dtype)
    return x, w


def _gradients(function, x, w):
    x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
    out = function(x, w)
    (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out.detach(), x.grad, w.grad


@pytest.fixture
def compiled_graphs(monkeypatch):
    """The names of the graphs kiln's torch backend compiles."""
    names = []
    original = torch_backend.compile_graph_module

    def recording(graph, inputs, options, unsupported_ops, name, **kwargs):
        names.append(name)
        return original(graph, inputs, options, unsupported_ops, name, **kwargs)
    monkeypatch.setattr(torch_backend, "compile_graph_module", recording)
    return names


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradients_through_numpy_code_match_eager_autograd(function, dtype, compiled_graphs):
    x, w = _inputs(dtype, seed=len(function.__name__))
    got = _gradients(kiln.wrap_numpy(function), x, w)
    torch._dynamo.reset()
    expected = _gradients(torch.compile(torch_wrap_numpy(function), backend="eager",
                                        fullgraph=True), x, w)
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-11)
    for value, reference in zip(got, expected):
        assert value.dtype == reference.dtype
        torch.testing.assert_close(value, reference, **tolerance)
    assert any(name.startswith("forward") for name in compiled_graphs)
    assert any(name.startswith("backward") for name in compiled_graphs)


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradients_agree_with_differences_of_the_numpy_function(function):
    x, w = _inputs(torch.float64, seed=7)
    weights = np.linspace(-1, 1, np.size(function(x.numpy(), w.numpy())))
    _, grad_x, grad_w = _gradients(kiln.wrap_numpy(function), x, w)

    def loss(a, b):
        return float((np.asarray(function(a, b)).ravel() * weights).sum())
    step = 1e-6
    for k, (array, gradient) in enumerate(((x.numpy(), grad_x), (w.numpy(), grad_w))):
        for index in np.ndindex(array.shape):
            shifted = [x.numpy().copy(), w.numpy().copy()]
            shifted[k][index] += step
            above = loss(*shifted)
            shifted[k][index] -= 2 * step
            below = loss(*shifted)
            assert (above - below) / (2 * step) == pytest.approx(float(gradient[index]),
                                                                 rel=1e-5, abs=1e-6)


def test_every_wrapped_function_has_its_own_dynamo_frame():
    """Dynamo counts recompiles per code object: wrapped functions must not share one (a
    shared frame failed past Dynamo's limit of 8, with fullgraph=True)."""
    x = torch.randn(6, requires_grad=True)
    for scale in range(12):
        result = kiln.wrap_numpy(lambda a, scale=scale: (np.sin(a) * scale).sum())(x)
        result.backward()
        torch.testing.assert_close(x.grad, torch.cos(x.detach()) * scale)
        x.grad = None


def test_a_graph_break_under_gradients_is_an_error_naming_it():
    def branches(x):
        if x.sum() > 0:
            return np.tanh(x)
        return x * 2
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"wrap_numpy\(.*branches\).*test_torch_wrap_numpy_gradients"
                                           r"\.py:\d+.*torch.no_grad"):
        kiln.wrap_numpy(branches)(x)
    with torch.no_grad():  # without gradients the break is kiln's own: the function runs
        expected = torch.from_numpy(branches(x.detach().numpy()))
        torch.testing.assert_close(kiln.wrap_numpy(branches)(x), expected)


def test_cpu_tensors_without_gradients_run_compiled_for_the_cpu():
    x, w = _inputs(torch.float64, seed=3)
    wrapped = kiln.wrap_numpy(softmax_rows)
    got = wrapped(x, w)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), softmax_rows(x.numpy(), w.numpy()), rtol=1e-12)
    x.requires_grad_()
    with torch.no_grad():
        assert wrapped(x, w).grad_fn is None
    assert wrapped(x, w).grad_fn is not None


def split_stats(pair, table, scale=2.0):
    x, w = pair
    rows = x * table["gain"] * scale
    return {"sum": rows.sum(axis=1), "parts": [rows.max(), (w.mean(), w.dtype.itemsize)]}


def test_cpu_tensors_in_containers_come_back_as_tensors_where_numpy_gave_arrays():
    """The host path maps tensors to arrays and results back through tuples, lists and dicts
    (namedtuples through torch's pytree); NumPy scalars come back as 0-d tensors, Python
    numbers as they are."""
    x, w = _inputs(torch.float64, seed=4)
    gain = torch.tensor(0.5, dtype=torch.float64)
    with torch.no_grad():
        got = kiln.wrap_numpy(split_stats)((x, w), {"gain": gain}, scale=3.0)
    expected = split_stats((x.numpy(), w.numpy()), {"gain": gain.numpy()}, scale=3.0)
    assert isinstance(got["sum"], torch.Tensor) and isinstance(got["parts"], list)
    np.testing.assert_allclose(got["sum"].numpy(), expected["sum"], rtol=1e-12)
    top, (mean, size) = got["parts"]
    assert isinstance(top, torch.Tensor) and top.dim() == 0 and isinstance(mean, torch.Tensor)
    assert float(top) == expected["parts"][0] and size == 8 and type(size) is int
    np.testing.assert_allclose(float(mean), expected["parts"][1][0], rtol=1e-12)
    Pair = collections.namedtuple("Pair", "x w")
    with torch.no_grad():
        named = kiln.wrap_numpy(lambda p: Pair(p.x * 2, p.w))(Pair(x, w))
    assert type(named) is Pair and torch.equal(named.x, x * 2) and torch.equal(named.w, w)


def test_an_in_place_update_of_a_saved_value_is_an_error_saying_what_to_write():
    """exp's result is what its gradient reads: `y += 1` overwrites it, which torch's autograd
    refuses (torch.compile raises the same); kiln says so, and how to write it instead."""
    def exp_plus_one(x):
        y = np.exp(x)
        y += 1
        return y
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"wrap_numpy\(.*exp_plus_one\).*in-place update.*"
                                           r"out of place"):
        kiln.wrap_numpy(exp_plus_one)(x)
    with torch.no_grad():
        torch.testing.assert_close(kiln.wrap_numpy(exp_plus_one)(x), torch.exp(x) + 1)
