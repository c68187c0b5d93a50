"""Tensors torch hands backend="kiln" and kiln.wrap_numpy whose memory is not their value:
torch's conjugate and negative bits (z.conj(), z.conj().imag) mark lazy views whose memory
holds the values unconjugated, un-negated. kiln reads memory: the backend must read them
resolved and update them (an in-place op on such an argument) as torch does; wrap_numpy, which
reads memory as NumPy's .numpy() does, refuses them as it does, and writes a tensor whose
elements share memory (expand) as NumPy writes its .numpy(). A wrap_numpy function called
inside torch.compile runs as outside it (its first call raised a TypeError)."""
import pytest

import kiln

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def affine(x):
    return x * 2 + 1


def test_negated_and_conjugated_views_are_read_as_their_values():
    z = torch.randn(5, dtype=torch.complex64)
    compiled = torch.compile(affine, backend="kiln")
    plain = torch.randn(5)
    torch.testing.assert_close(compiled(plain), affine(plain))
    # The imaginary part of a conjugate view carries the negative bit (read negated: wrong
    # signs, silently); a graph compiled for plain tensors first, then for these.
    for lazy in (z.conj().imag, torch._neg_view(plain), z.conj(), z.conj().imag[::2]):
        assert lazy.is_neg() or lazy.is_conj()
        torch.testing.assert_close(compiled(lazy), affine(lazy.resolve_conj().resolve_neg()))


def add_one_in_place(x):
    x.add_(1)
    return x * 2


def test_an_argument_with_the_negative_bit_updated_in_place():
    base = torch.randn(4)
    expected_base = base.clone()
    expected = add_one_in_place(torch._neg_view(expected_base))
    result = torch.compile(add_one_in_place, backend="kiln")(torch._neg_view(base))
    torch.testing.assert_close(result, expected)
    torch.testing.assert_close(base, expected_base)


def test_gradients_through_a_negated_view():
    weight = torch.randn(4, requires_grad=True)
    z = torch.randn(4, dtype=torch.complex64)

    def loss(a, w):
        return (a * w).sum()
    compiled = torch.compile(loss, backend="kiln")(z.conj().imag, weight)
    compiled.backward()
    got = weight.grad.clone()
    weight.grad = None
    eager = loss(z.conj().imag, weight)
    eager.backward()
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(got, weight.grad)


def test_wrap_numpy_refuses_lazy_views_and_differentiates_through_them():
    z = torch.randn(4, dtype=torch.complex64)
    wrapped = kiln.wrap_numpy(affine)
    for lazy, bit in ((z.conj().imag, "negative"), (z.conj(), "conjugate")):
        with pytest.raises(RuntimeError, match=f"wrap_numpy.*the {bit} bit set"):
            wrapped(lazy)
    torch.testing.assert_close(wrapped(z.conj().imag.resolve_neg()), affine(z.conj().imag))
    # With gradients the call goes through torch.compile: the view is read as its values.
    w = torch.randn(4, dtype=torch.complex64, requires_grad=True)

    def doubled_sum(x):
        return (x * 2).sum()
    result = kiln.wrap_numpy(doubled_sum)(w.conj().imag)
    torch.testing.assert_close(result, doubled_sum(w.conj().imag))
    result.backward()
    torch.testing.assert_close(w.grad, torch.full((4,), -2j))


def test_wrap_numpy_writes_an_expanded_tensor_as_numpy_writes_its_memory():
    # x.expand(5) is one element seen five times (stride 0): NumPy's `x += y` on its .numpy()
    # leaves the last write in that element and x.sum() reads it five times (20.0); the graph
    # read the five values it computed as independent elements (10.0).
    def add_then_sum(x, y):
        x += y
        return x.sum()
    y = torch.arange(5.0)
    expected, memory = torch.zeros(1), torch.zeros(1)
    result = add_then_sum(expected.expand(5).numpy(), y.numpy())
    assert kiln.wrap_numpy(add_then_sum)(memory.expand(5), y).item() == result == 20.0
    torch.testing.assert_close(memory, expected)


def test_a_wrap_numpy_call_inside_torch_compile_runs_as_it_does_outside():
    # Dynamo traced into the wrapper's own code and called a compiled function's cache method
    # without its object (TypeError) on a function's first call; it runs outside the trace.
    def shift_into(x, y):
        x += y[::-1]
        return x.sum()
    wrapped = kiln.wrap_numpy(shift_into)
    for backend in ("eager", "kiln"):
        torch._dynamo.reset()
        compiled = torch.compile(lambda x, y: wrapped(x, y) * 2, backend=backend)
        for make in (lambda: (torch.arange(6.0), torch.ones(6)),
                     lambda: (lambda t: (t[1:], t[:-1]))(torch.arange(7.0))):
            got, want = make(), make()
            expected = torch.as_tensor(shift_into(want[0].numpy(), want[1].numpy())) * 2
            torch.testing.assert_close(compiled(*got), expected)
            torch.testing.assert_close(got[0], want[0])
