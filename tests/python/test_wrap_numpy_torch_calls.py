"""kiln.wrap_numpy's fast path on torch tensors (kiln/_library_calls.py TorchCall: the
signature's calls again skip the general path), device-neutral, tested here on CPU tensors
(tests/python/test_cuda.py runs it on the GPU): its guard, Dynamo's C++ tensor check where torch
has it and the Python check behind it, which must accept and refuse the same arguments; and its
results placed by their return specs (kiln/_device_results.py)."""
import ctypes

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from kiln import _library_calls  # noqa: E402


class _NoOutputs:
    output_shapes = []


def _call(tensors, guarded):
    call = _library_calls.TorchCall(torch, _NoOutputs(), True, [], tensors, [])
    if not guarded:
        call.guard = None
    return call


class _Subclass(torch.Tensor):
    pass


def _others(x, y):
    """(name, arguments) that differ from (x, y) in one way the fast path must see."""
    complex_y = torch.randn(3, 4, dtype=torch.complex64)
    return [
        ("swapped", (y, x)), ("transposed", (x, y.T.contiguous())), ("strides", (x, y.T.contiguous().T)),
        ("dtype", (x, y.double())), ("shape", (x, y[:2])), ("requires grad", (x, y.clone().requires_grad_())),
        ("parameter", (x, torch.nn.Parameter(y.clone()))), ("negative bit", (x, y._neg_view())),
        ("conjugate bit", (x, complex_y.conj())), ("subclass", (x, y.as_subclass(_Subclass))),
        ("not a tensor", (x, y.numpy())), ("one argument", (x,)), ("0-d", (x, y[0, 0])),
    ]


@pytest.mark.parametrize("guarded", [True, False], ids=["c++ check", "python check"])
def test_the_fast_path_takes_only_arguments_of_its_signature(guarded):
    x, y = torch.randn(()), torch.randn(3, 4)
    call = _call([x, y], guarded)
    assert (call.guard is not None) == guarded or not hasattr(torch._C, "_dynamo")
    assert call.matches((x, y), [])
    assert call.matches((torch.randn(()), torch.randn(3, 4)), [])  # other values, same signature
    assert call.matches((x, y[:, :]), [])  # a view of the same layout
    for name, arguments in _others(x, y):
        assert not call.matches(arguments, []), name
    complex_call = _call([torch.randn(3, dtype=torch.complex64)], guarded)
    assert not complex_call.matches((torch.randn(3, dtype=torch.complex64).conj(),), [])
    with torch.no_grad():  # still a tensor that requires grad: not this signature's
        assert not call.matches((x, y.clone().requires_grad_()), [])


def test_a_signature_traced_with_a_tensor_that_requires_grad_never_passes_one():
    """Traced under no_grad with such a tensor: the C++ check would take one with grad mode
    on, whose call needs the differentiable path; the Python check refuses them all."""
    weights = torch.randn(5, requires_grad=True)
    with torch.no_grad():
        call = _call([weights], True)
    assert call.guard is None
    assert not call.matches((torch.randn(5, requires_grad=True),), [])
    assert call.matches((torch.randn(5),), [])


class _Doubles:
    """A compiled graph of one output, 2 * its input, written at the address it is given (as
    kiln's run_tensors writes the pooled result tensors)."""
    output_shapes = [[3, 4]]

    def run_tensors(self, tensors, addresses, stream):
        doubled = np.ascontiguousarray(tensors[0].numpy() * 2)
        ctypes.memmove(addresses[0], doubled.ctypes.data, doubled.nbytes)


def test_the_fast_path_returns_arguments_and_views_by_their_specs():
    """`return x, x.T, y, y[1:, ::2], y` with y = 2 * x: the argument itself and a view of it,
    the graph output, a view of it, and the output again as the same tensor."""
    layout = (0, (4, 3), (1, 4), False)  # x.T
    returns = [("argument", 0, None), ("argument", 0, layout), 0,
               ("output", 0, (4, (2, 2), (4, 2), False)), ("result", 2, None)]
    call = _library_calls.TorchCall(torch, _Doubles(), False, [torch.float32],
                                    [torch.randn(3, 4)], [], returns=returns)
    call.stream = lambda: 0  # (no CUDA stream on the CPU)
    for _ in range(3):
        x = torch.randn(3, 4)
        same, transposed, doubled, corner, again = call([x])
        assert same is x and again is doubled
        assert transposed.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert torch.equal(transposed, x.T) and torch.equal(doubled, 2 * x)
        assert torch.equal(corner, doubled[1:, ::2]) and corner.stride() == (4, 2)
        assert corner.untyped_storage().data_ptr() == doubled.untyped_storage().data_ptr()


def _pair(x, y):
    return {"sum": x + y, "x": x}, np.sin(x).sum()


def test_calls_on_cpu_tensors_again_take_the_fast_path_with_the_same_results():
    """kiln.wrap_numpy on torch CPU tensors: a call of the signature again skips the general
    path (HostTorchCall), and gives what it gives: tensors over kiln's arrays, an argument as
    the caller's tensor itself, containers as returned; other arguments take the general path
    (a dtype, a tensor that requires grad: its gradient flows)."""
    import kiln
    function = kiln.wrap_numpy(_pair)
    general = []
    original = function._call_on_host
    function._call_on_host = lambda *arguments: general.append(1) or original(*arguments)
    x, y = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    for _ in range(3):
        got, total = function(x, y)
        assert got["x"] is x and torch.equal(got["sum"], x + y)
        assert isinstance(total, torch.Tensor) and total.ndim == 0
        np.testing.assert_allclose(total.item(), np.sin(x.numpy()).sum(), rtol=1e-12)
    assert len(general) == 1  # the first call; the others took the fast path
    got, _ = function(x.float(), y.float())  # another signature: the general path
    assert got["sum"].dtype == torch.float32 and len(general) == 2
    weights = x.clone().requires_grad_()
    got, total = function(weights, y)
    total.backward()
    np.testing.assert_allclose(weights.grad.numpy(), np.cos(x.numpy()), rtol=1e-12)
    with pytest.raises(RuntimeError, match="negative bit"):
        function(x._neg_view(), y)
