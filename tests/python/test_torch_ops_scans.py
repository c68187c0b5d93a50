"""Ops that ran in eager PyTorch between kiln's parts (not in the conversion table):
logcumsumexp (a Hillis-Steele scan of kiln's ops), median and nanmedian (one sort), and integer mm/bmm/addmm (kiln's wrapping integer matmul). Compiled whole against
eager on several dtypes, shapes and dims, with NaNs, ties and signed zeros, and with gradients
in training graphs."""
import math

import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}


def _floats(*shape, dtype=torch.float32, seed=0):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
    flat = x.view(-1)
    flat[1::7] = math.nan
    flat[3::11] = flat[2::11][:len(flat[3::11])]  # ties
    flat[5::13] = 0.0
    flat[6::13] = -0.0
    return x


def _integers(*shape, seed=0):
    return torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(seed))


def _samples():
    return [_floats(4, 9, 5), _floats(4, 9, 5, dtype=torch.float64, seed=1), _integers(6, 8),
            _integers(3, 5, 2) > 0, torch.tensor(1.5), _floats(17)]


def _check(function, x, zero_signs=True):
    want = torch.utils._pytree.tree_leaves(function(x))
    got = torch.utils._pytree.tree_leaves(
        torch.compile(function, backend="kiln", **WHOLE)(x))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-6, atol=1e-6)
        if zero_signs and g.is_floating_point():  # (the element at eager's index: its sign)
            assert torch.equal(torch.signbit(g), torch.signbit(w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_matches_eager_across_magnitudes(dtype, dim):
    x = _floats(5, 6, 7, dtype=dtype) * 30  # terms that differ by e^60: no overflow, no loss
    x[0, 0, :3] = -math.inf
    x[1, 1, 2] = math.inf
    _check(lambda t: torch.logcumsumexp(t, dim), x, zero_signs=False)  # (rounding's, near 0)


@pytest.mark.parametrize("x", _samples()[:3] + _samples()[4:],
                         ids=lambda x: f"{x.dtype}{list(x.shape)}")
@pytest.mark.parametrize("op", [torch.median, torch.nanmedian], ids=["median", "nanmedian"])
def test_median_of_all_and_its_values_along_dims_match_eager(op, x):
    # (eager leaves the index among equal elements to its algorithm: the values are compared,
    # and the indices point at them; -0.0 or 0.0 alike)
    _check(op, x, zero_signs=False)
    for dim in range(max(x.ndim, 1)):
        for keepdim in (False, True):
            want = op(x, dim, keepdim)
            got = torch.compile(lambda t: op(t, dim, keepdim), backend="kiln", **WHOLE)(x)
            torch.testing.assert_close(got.values, want.values, equal_nan=True)
            assert got.indices.shape == want.indices.shape
            chosen = x.unsqueeze(dim).gather(dim, got.indices.unsqueeze(dim)) if x.ndim == 0 else \
                x.gather(dim, got.indices if keepdim else got.indices.unsqueeze(dim))
            torch.testing.assert_close(chosen.reshape(got.values.shape), got.values,
                                       equal_nan=True)
            torch._dynamo.reset()


def test_median_and_kthvalue_of_distinct_values_have_eagers_indices():
    x = torch.randn(6, 9, generator=torch.Generator().manual_seed(3))
    x[2, 4] = math.nan  # median: the row's NaN and its position; kthvalue: NaN the largest
    for function in (lambda t: torch.median(t, 1), lambda t: torch.nanmedian(t, 1),
                     lambda t: torch.kthvalue(t, 1, 1), lambda t: torch.kthvalue(t, 9, 1, True),
                     lambda t: torch.kthvalue(t, 4, 0), lambda t: torch.kthvalue(t[0, 0], 1)):
        _check(function, x)
        torch._dynamo.reset()


@pytest.mark.parametrize("length", [1, 2, 3, 64, 1000])
def test_scans_of_lengths_around_powers_of_two_match_eager(length):
    _check(lambda t: torch.logcumsumexp(t, 1), _floats(3, length), zero_signs=False)


def _scan_losses(x):
    return (torch.logcumsumexp(x, -1).sum() + torch.median(x, 1).values.sum()
            + torch.nanmedian(x))


@pytest.mark.parametrize("shape", [(4, 7), (3, 5, 6)])
def test_gradients_of_scans_and_medians_compile_whole(shape):
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    grads = []
    for run in (_scan_losses, torch.compile(_scan_losses, backend="kiln", **WHOLE)):
        leaf = x.clone().requires_grad_()
        out = run(leaf)
        grads.append((out.detach(), torch.autograd.grad(out, leaf)[0]))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.uint8])
def test_integer_matmuls_wrap_like_eager(dtype):
    generator = torch.Generator().manual_seed(0)
    high = 200 if dtype == torch.uint8 else 2 ** 20  # products and sums that overflow
    a, b = (torch.randint(0, high, shape, generator=generator).to(dtype)
            for shape in ((3, 5, 40), (3, 40, 6)))
    bias = torch.randint(0, high, (6,), generator=generator).to(dtype)

    def products(a, b, bias):
        return a @ b, a[0] @ b[1], torch.addmm(bias, a[1], b[2], alpha=3), torch.baddbmm(
            bias, a, b, beta=2)
    want = products(a, b, bias)
    got = torch.compile(products, backend="kiln", **WHOLE)(a, b, bias)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)
