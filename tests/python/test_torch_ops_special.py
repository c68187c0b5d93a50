"""Special functions that ran in eager PyTorch between kiln's parts (not in the conversion
table): erfinv, lgamma, digamma, polygamma(0 and 1, the gradient of digamma), compiled whole
against eager on float32 and float64, at the poles, zeros of either sign, infinities, NaN and the
ends of erfinv's domain; and their gradients in training graphs. Also the elementwise ops kiln
had builders for but no entries (fmax, fmin, gcd, lcm, ldexp, signbit)."""
import math

import pytest
import torch

import kiln.torch  # noqa: F401
from torch_fixtures import fresh_dynamo  # noqa: F401 (autouse)

WHOLE = {"options": {"unsupported_ops": "error"}}
TOLERANCES = {torch.float32: {"rtol": 2e-6, "atol": 1e-6},
              torch.float64: {"rtol": 1e-11, "atol": 1e-12}}
_EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -3.5, 0.5, -0.5, 1e-300, 1e-30, 9.999, 10.0, 10.0001,
          1e20, math.inf, -math.inf, math.nan]


def _gamma_arguments(dtype):
    return torch.cat([torch.linspace(-7.9, 30, 997, dtype=torch.float64),
                      torch.tensor(_EDGES, dtype=torch.float64)]).to(dtype)


def _erfinv_arguments(dtype):
    return torch.cat([torch.linspace(-1, 1, 1001, dtype=torch.float64), torch.tensor(
        [1 - 2 ** -53, -1 + 2 ** -53, 1e-300, 0.49999, 0.5, -0.50001, 0.9999999, 1.5, -2.0,
         math.nan], dtype=torch.float64)]).to(dtype)


def _check(function, x, dtype, tolerances=None):
    want = function(x)
    got = torch.compile(function, backend="kiln", **WHOLE)(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True, **(tolerances or TOLERANCES[dtype]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("function", [torch.lgamma, torch.digamma], ids=["lgamma", "digamma"])
def test_gamma_functions_match_eager_at_poles_zeros_and_infinities(function, dtype):
    _check(function, _gamma_arguments(dtype), dtype)


def test_trigamma_matches_eager_in_float64_and_away_from_poles_in_float32():
    # float32's eager trigamma takes sin(pi x) in float32: near a pole its relative error grows
    # past float32's (kiln computes in float64), so float32 is compared away from them, to 1e-5.
    x = _gamma_arguments(torch.float64)
    _check(lambda t: torch.polygamma(1, t), x, torch.float64)
    x32 = x[(x > 0) | ((x - x.round()).abs() > 0.2)].float()
    torch._dynamo.reset()
    _check(lambda t: torch.special.polygamma(1, t), x32, torch.float32,
           {"rtol": 1e-5, "atol": 1e-6})


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_erfinv_matches_eager_to_the_ends_of_its_domain(dtype):
    _check(torch.erfinv, _erfinv_arguments(dtype), dtype)


def test_erfinv_of_integers_and_booleans_is_float32():
    x = torch.tensor([[-1, 0, 1], [0, 1, 1]])
    _check(lambda t: torch.erfinv(t) + torch.erfinv(t > 0), x, torch.float32)


def test_polygamma_of_order_two_runs_in_eager_pytorch():
    with pytest.raises(Exception, match="polygamma of order 2"):
        torch.compile(lambda t: torch.polygamma(2, t), backend="kiln", **WHOLE)(torch.rand(4))


def _special_chain(x, y):
    return torch.lgamma(x * 3 + 0.1).sum(-1) + torch.digamma(x + 0.5).mean(-1) + torch.erfinv(
        torch.tanh(y)).pow(2).sum(-1)


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 4)])
def test_gradients_of_lgamma_digamma_and_erfinv_compile_whole(shape):
    generator = torch.Generator().manual_seed(len(shape))
    x = torch.rand(*shape, dtype=torch.float64, generator=generator) * 4
    y = torch.randn(*shape, dtype=torch.float64, generator=generator)
    results = []
    for run in (_special_chain, torch.compile(_special_chain, backend="kiln", **WHOLE)):
        a, b = x.clone().requires_grad_(), y.clone().requires_grad_()
        out = run(a, b)
        results.append([out.detach(), *torch.autograd.grad(out.sum(), (a, b))])
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def _pairs(x, y, n, m):
    return (torch.fmax(x, y), torch.fmin(x, y), torch.gcd(n, m), torch.lcm(n, m),
            torch.ldexp(x, m[:1].float()), torch.ldexp(x, y), torch.signbit(x), torch.signbit(n))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fmax_fmin_gcd_lcm_ldexp_signbit_compile_whole(dtype):
    x = torch.tensor([1.5, math.nan, -2.0, 0.0, -0.0, 3.0, math.inf, -math.inf], dtype=dtype)
    y = torch.tensor([math.nan, math.nan, 1.0, -0.0, 0.0, 2.0, -1.0, 0.5], dtype=dtype)
    n = torch.tensor([0, 4, -6, 12, 0, 7, -9, 1])
    m = torch.tensor([0, 6, 9, -8, 5, 7, 3, -1])
    want = _pairs(x, y, n, m)
    got = torch.compile(_pairs, backend="kiln", **WHOLE)(x, y, n, m)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)


def _real_functions(x, n, b):
    return (torch.angle(x), torch.angle(n), torch.round(x * 1e3, decimals=2),
            torch.round(x * 1e4, decimals=-2), torch.round(x, decimals=0), torch.sign(b),
            torch.sgn(b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_angle_round_with_decimals_and_sign_of_booleans_compile_whole(dtype):
    x = torch.tensor([1.5, -2.25, 0.0, -0.0, 0.125, -0.5, 2.5, math.inf, -math.inf, math.nan],
                     dtype=dtype)
    x = torch.cat([x, torch.randn(50, generator=torch.Generator().manual_seed(0)).to(dtype)])
    n, b = torch.tensor([-3, 0, 4]), torch.tensor([True, False])
    want = _real_functions(x, n, b)
    got = torch.compile(_real_functions, backend="kiln", **WHOLE)(x, n, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True, rtol=0, atol=0)


def _reductions_of_a_scalar(x):
    return (x.sum(0), x.mean(-1, keepdim=True), torch.amax(x, 0), torch.amin(x, -1),
            torch.argmax(x, 0), torch.argmin(x, 0, keepdim=True), x.any(0), (x > 0).all(-1),
            torch.logsumexp(x, 0), x.prod(0), torch.max(x, 0), x.var(0, correction=0),
            torch.index_select(x, 0, torch.tensor([0])))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reductions_of_a_0d_tensor_along_dim_0_compile_whole(dtype):
    # torch lets a 0-d tensor be reduced along dim 0 or -1 (as one element): kiln refused it
    # ("axis 0 is out of bounds") and ran each in eager PyTorch
    x = torch.tensor(2.5, dtype=dtype)
    want = _reductions_of_a_scalar(x)
    got = torch.compile(_reductions_of_a_scalar, backend="kiln", **WHOLE)(x)
    got, want = (torch.utils._pytree.tree_leaves(v) for v in (got, want))
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        torch.testing.assert_close(g, w)
