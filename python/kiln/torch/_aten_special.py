"""Conversion-table entries for special functions kiln has no primitive for (see _aten_table.py):
erfinv, lgamma, digamma and polygamma of orders 0 and 1, each composed of kiln's elementwise ops.
They compute in float64 whatever the dtype (float32's results are rounded once) and follow torch's
CPU kernels (aten/src/ATen/native/Math.h) where those define the value: poles, infinities, the
sign of a zero. Their gradients reach kiln as these ops too (lgamma's is digamma, digamma's
polygamma(1, x), erfinv's an exp of erfinv squared).
"""
import math

import torch

from .. import _kiln
from ._aten_table import Unconvertible, cast, lowers, out_dtype

aten = torch.ops.aten

# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): single-precision
# polynomials in w = -log(1 - y^2), central (w < 5, shifted by 2.5) and tail (sqrt(w) - 3);
# Newton steps on erf (erfc in the tails, where 1 - |y| is exact) make them float64's.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
# Newton steps by result dtype: from Giles' guess, one reaches float32's precision, four
# float64's at 1 - |y| = 2**-53 (fewer are enough nearer the centre, but steps are not per element)
_ERFINV_NEWTON_STEPS = {torch.float64: 4}
_ERFINV_FEWEST_STEPS = 1
# Lanczos' approximation of the gamma function, g = 7, nine terms (relative error ~1e-15).
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
# digamma's asymptotic series past 10 (torch's calc_digamma, from Cephes psi), highest first.
_DIGAMMA_SERIES = (8.33333333333333333333e-2, -2.10927960927960927961e-2,
                   7.57575757575757575758e-3, -4.16666666666666666667e-3,
                   3.96825396825396825397e-3, -8.33333333333333333333e-3,
                   8.33333333333333333333e-2)
_DIGAMMA_OF_10 = 2.25175258906672110764
_DIGAMMA_SHIFTS = 10  # x in (0, 10) is pushed past 10 by psi(x) = psi(x + 1) - 1 / x
_TRIGAMMA_SHIFTS = 6  # torch's calc_trigamma: six steps of psi1(x) = psi1(x + 1) + 1 / x^2


def _polynomial(coefficients, x):
    """Horner's rule, highest power first."""
    result = None
    for coefficient in coefficients:
        result = (_kiln.full(x, [], coefficient, x.dtype) if result is None
                  else _kiln.add(_kiln.multiply(result, x), coefficient))
    return result


def _float64(x):
    return cast(x, torch.float64)


def _is_integer(x):
    return _kiln.equal(_kiln.trunc(x), x)


def erfinv(y, steps):
    """Giles' polynomials, then Newton steps: on erf(x) = y in the centre, on
    log(erfc(|x|)) = log(1 - |y|) in the tails (nearly quadratic in |x| there, so Newton
    converges from the polynomial's guess even at 1 - |y| = 2**-53, where erf has no digits
    left); +-inf at +-1, NaN past them."""
    magnitude = _kiln.abs(y)
    w = _kiln.negative(_kiln.log(_kiln.multiply(_kiln.subtract(1.0, y), _kiln.add(1.0, y))))
    central = _polynomial(_ERFINV_CENTRAL, _kiln.subtract(w, 2.5))
    tail = _polynomial(_ERFINV_TAIL, _kiln.subtract(_kiln.sqrt(w), 3.0))
    x = _kiln.multiply(_kiln.where(_kiln.less(w, 5.0), central, tail), y)
    in_tail = _kiln.greater(magnitude, 0.5)
    log_complement = _kiln.log(_kiln.subtract(1.0, magnitude))  # 1 - |y| exact past 0.5
    for _ in range(steps):
        slope = _kiln.multiply(2.0 / math.sqrt(math.pi),
                               _kiln.exp(_kiln.negative(_kiln.square(x))))
        central_step = _kiln.divide(_kiln.subtract(_kiln.erf(x), y), slope)
        complement = _kiln.erfc(_kiln.abs(x))
        tail_step = _kiln.divide(
            _kiln.multiply(_kiln.subtract(_kiln.log(complement), log_complement), complement),
            slope)  # the step of |x|, whose log-residual has slope -slope / erfc(|x|)
        x = _kiln.where(in_tail, _kiln.add(x, _kiln.multiply(_kiln.sign(y), tail_step)),
                        _kiln.subtract(x, central_step))
    infinite = _kiln.multiply(_kiln.sign(y), math.inf)
    return _kiln.where(_kiln.equal(magnitude, 1.0), infinite, x)


def _lanczos_lgamma(z):
    """lgamma(z) for z >= 0.5."""
    shifted = _kiln.subtract(z, 1.0)
    series = _kiln.full(z, [], _LANCZOS[0], "float64")
    for k, coefficient in enumerate(_LANCZOS[1:], start=1):
        series = _kiln.add(series, _kiln.divide(coefficient, _kiln.add(shifted, float(k))))
    t = _kiln.add(shifted, _LANCZOS_G + 0.5)
    return _kiln.add(_kiln.subtract(_kiln.multiply(_kiln.add(shifted, 0.5), _kiln.log(t)), t),
                     _kiln.add(_kiln.log(series), 0.5 * math.log(2 * math.pi)))


def _sin_pi(x):
    """sin(pi x), x reduced to (-2, 2) first (exactly: less an even integer of its magnitude's,
    its own self below 2), so that pi x loses nothing."""
    reduced = _kiln.subtract(x, _kiln.multiply(_kiln.trunc(_kiln.multiply(x, 0.5)), 2.0))
    return _kiln.sin(_kiln.multiply(reduced, math.pi))


def lgamma(x):
    """Lanczos for x >= 0.5, the reflection lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    below; +inf at the poles (0 and the negative integers) and at both infinities."""
    reflected = _kiln.less(x, 0.5)
    z = _kiln.where(reflected, _kiln.subtract(1.0, x), x)
    direct = _lanczos_lgamma(z)
    reflection = _kiln.subtract(
        _kiln.subtract(math.log(math.pi), _kiln.log(_kiln.abs(_sin_pi(x)))), direct)
    result = _kiln.where(reflected, reflection, direct)
    pole = _kiln.logical_and(_kiln.less_equal(x, 0.0), _is_integer(x))
    return _kiln.where(_kiln.logical_or(pole, _kiln.isinf(x)), math.inf, result)


def digamma(x):
    """torch's calc_digamma: -inf at +0, +inf at -0, NaN at the negative integers; below 0 the
    reflection psi(x) = psi(1 - x) - pi / tan(pi frac(x)); below 10 the shifts, then Cephes'
    asymptotic series."""
    negative = _kiln.less(x, 0.0)
    z = _kiln.where(negative, _kiln.subtract(1.0, x), x)
    shift = _kiln.full(x, [], 0.0, "float64")
    for _ in range(_DIGAMMA_SHIFTS):
        below = _kiln.less(z, 10.0)
        shift = _kiln.subtract(shift, _kiln.where(below, _kiln.reciprocal(z), 0.0))
        z = _kiln.where(below, _kiln.add(z, 1.0), z)
    inverse_square = _kiln.reciprocal(_kiln.square(z))
    series = _kiln.multiply(inverse_square, _polynomial(_DIGAMMA_SERIES, inverse_square))
    series = _kiln.where(_kiln.less(z, 1.0e17), series, 0.0)
    asymptotic = _kiln.subtract(_kiln.subtract(_kiln.log(z), _kiln.divide(0.5, z)), series)
    positive = _kiln.add(shift, _kiln.where(_kiln.equal(z, 10.0), _DIGAMMA_OF_10, asymptotic))
    fraction = _kiln.subtract(x, _kiln.trunc(x))
    reflection = _kiln.subtract(
        positive, _kiln.divide(math.pi, _kiln.tan(_kiln.multiply(fraction, math.pi))))
    result = _kiln.where(negative, _kiln.where(_is_integer(x), math.nan, reflection), positive)
    zero = _kiln.multiply(_kiln.copysign(_kiln.full(x, [], 1.0, "float64"), x), -math.inf)
    return _kiln.where(_kiln.equal(x, 0.0), zero, result)


def trigamma(x):
    """torch's calc_trigamma: the reflection below 0.5 (sin(pi x) unreduced, as torch's), six
    shifts, then the asymptotic series."""
    reflected = _kiln.less(x, 0.5)
    sign = _kiln.where(reflected, -1.0, _kiln.full(x, [], 1.0, "float64"))
    reflection = _kiln.divide(math.pi ** 2, _kiln.square(_kiln.sin(_kiln.multiply(x, math.pi))))
    result = _kiln.where(reflected, _kiln.negative(reflection), 0.0)
    z = _kiln.where(reflected, _kiln.subtract(1.0, x), x)
    for _ in range(_TRIGAMMA_SHIFTS):
        result = _kiln.add(result, _kiln.reciprocal(_kiln.square(z)))
        z = _kiln.add(z, 1.0)
    inverse_square = _kiln.reciprocal(_kiln.square(z))
    tail = _kiln.multiply(inverse_square, _kiln.subtract(
        1.0 / 6, _kiln.multiply(inverse_square, _kiln.subtract(
            1.0 / 30, _kiln.multiply(inverse_square, 1.0 / 42)))))
    series = _kiln.divide(_kiln.add(_kiln.add(1.0, _kiln.divide(0.5, z)), tail), z)
    return _kiln.multiply(sign, _kiln.add(result, series))


def _in_float64(function):
    def lower(context, node, x):
        dtype = out_dtype(node)
        if not dtype.is_floating_point:
            raise Unconvertible(f"{node.target} of {dtype}")
        return cast(function(_float64(x)), dtype)
    return lower


@lowers(aten.erfinv.default)
def _erfinv(context, node, y):
    steps = _ERFINV_NEWTON_STEPS.get(out_dtype(node), _ERFINV_FEWEST_STEPS)
    return _in_float64(lambda value: erfinv(value, steps))(context, node, y)
lowers(aten.lgamma.default)(_in_float64(lgamma))
lowers(aten.digamma.default)(_in_float64(digamma))


@lowers(aten.polygamma.default)
def _polygamma(context, node, n, x):
    orders = {0: digamma, 1: trigamma}
    if n not in orders:
        raise Unconvertible(f"polygamma of order {n} (kiln has orders 0 and 1)")
    return _in_float64(orders[n])(context, node, x)
