#include "decompose/ufuncs.h"

#include <cmath>

#include "decompose/helpers.h"

namespace kiln::decompose {
namespace {

using detail::constant;
using ir::Op;

DType dtype_of(const Builder& b, ValueId x) { return b.node(x).dtype; }

ValueId where(Builder& b, ValueId condition, ValueId yes, ValueId no) {
  return b.where(condition, yes, no);
}

// Euclid takes at most as many steps as there are Fibonacci numbers below the type's range.
int gcd_steps(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1:
      return 12;
    case 2:
      return 24;
    case 4:
      return 47;
    default:
      return 93;
  }
}

// The unsigned integer type of a signed one's width (others as they are).
DType unsigned_of(DType dtype) {
  switch (dtype) {
    case DType::Int8:
      return DType::UInt8;
    case DType::Int16:
      return DType::UInt16;
    case DType::Int32:
      return DType::UInt32;
    case DType::Int64:
      return DType::UInt64;
    default:
      return dtype;
  }
}

}  // namespace

ValueId fmod(Builder& b, ValueId a, ValueId divisor) {
  DType t = dtype_of(b, a);
  if (is_float(t)) {
    // Python's remainder of magnitudes is C's fmod (both positive: no sign fix-up), so it is
    // exact; going through a signed remainder and subtracting the divisor back rounds
    // (fmod(-1e-20, 1.0) gave -0.0) and makes infinite divisors NaN. The result takes the
    // dividend's sign, zeros included (fmod(-0.0, 1) is -0.0).
    ValueId magnitude = b.binary(Op::mod, b.unary(Op::abs, a), b.unary(Op::abs, divisor));
    return b.binary(Op::copysign, magnitude, a);
  }
  ValueId remainder = b.binary(Op::mod, a, divisor);
  ValueId zero = constant(b, 0, t);
  ValueId wrong_sign =
      b.binary(Op::logical_and, b.binary(Op::ne, remainder, zero),
               b.binary(Op::ne, b.binary(Op::lt, remainder, zero), b.binary(Op::lt, a, zero)));
  return where(b, wrong_sign, b.binary(Op::sub, remainder, divisor), remainder);
}

ValueId logaddexp(Builder& b, ValueId a, ValueId c, bool base_two) {
  DType t = dtype_of(b, a);
  ValueId larger = b.binary(Op::maximum, a, c);
  ValueId distance = b.unary(Op::neg, b.unary(Op::abs, b.binary(Op::sub, a, c)));
  ValueId tail, same;
  if (base_two) {
    tail = b.binary(Op::mul, b.unary(Op::log1p, b.unary(Op::exp2, distance)),
                    constant(b, 1 / std::log(2.0), t));
    same = b.binary(Op::add, a, constant(b, 1, t));
  } else {
    tail = b.unary(Op::log1p, b.unary(Op::exp, distance));
    same = b.binary(Op::add, a, constant(b, std::log(2.0), t));
  }
  return where(b, b.binary(Op::eq, a, c), same, b.binary(Op::add, larger, tail));
}

ValueId heaviside(Builder& b, ValueId x, ValueId at_zero) {
  DType t = dtype_of(b, x);
  ValueId zero = constant(b, 0, t);
  ValueId steps = where(b, b.binary(Op::lt, x, zero), zero,
                        where(b, b.binary(Op::gt, x, zero), constant(b, 1, t), at_zero));
  return where(b, b.unary(Op::isnan, x), x, steps);
}

ValueId gcd(Builder& b, ValueId a, ValueId c) {
  const DType t = dtype_of(b, a);
  // NumPy runs Euclid on |a| and |c| in the unsigned type of the same width: |int8 -128| is
  // 128 there (the signed abs stays -128: gcd(-127, -128) came out -1), cast back at the end.
  const DType u = unsigned_of(t);
  a = detail::cast_to(b, b.unary(Op::abs, a), u);
  c = detail::cast_to(b, b.unary(Op::abs, c), u);
  ValueId zero = constant(b, 0, u), one = constant(b, 1, u);
  for (int step = 0; step < gcd_steps(u); ++step) {
    ValueId nonzero = b.binary(Op::ne, c, zero);
    ValueId remainder = b.binary(Op::mod, a, where(b, nonzero, c, one));
    a = where(b, nonzero, c, a);
    c = where(b, nonzero, remainder, zero);
  }
  return detail::cast_to(b, a, t);
}

ValueId lcm(Builder& b, ValueId a, ValueId c) {
  DType t = dtype_of(b, a);
  ValueId divisor = gcd(b, a, c);
  ValueId safe = where(b, b.binary(Op::eq, divisor, constant(b, 0, t)), constant(b, 1, t), divisor);
  // NumPy takes |a| / gcd * |c| in the unsigned type: an overflowing product wraps to the
  // same bits (lcm(int8 127, 4) is -4), where the absolute value of the wrapped product is not.
  return b.binary(Op::mul, b.binary(Op::floordiv, b.unary(Op::abs, a), safe), b.unary(Op::abs, c));
}

ValueId ldexp(Builder& b, ValueId x, ValueId exponent) {
  // x * 2**e in three factors 2**(e/3): 2**e alone overflows or underflows where x * 2**e does
  // not (ldexp(0, 2000) was 0 * inf = NaN, ldexp(1e-300, 1100) inf, ldexp(1e300, -1100) 0).
  // Past +-bound the result is 0 or inf (or x's 0, inf, NaN) anyway; each factor stays finite.
  DType t = dtype_of(b, x);
  const double bound = t == DType::Float64 ? 2100 : t == DType::Float16 ? 41 : 300;
  ValueId e = b.binary(Op::maximum, detail::cast_to(b, exponent, t), constant(b, -bound, t));
  e = b.binary(Op::minimum, e, constant(b, bound, t));
  ValueId third = b.unary(Op::trunc, b.binary(Op::div, e, constant(b, 3, t)));
  ValueId rest = b.binary(Op::sub, e, b.binary(Op::mul, third, constant(b, 2, t)));
  ValueId scale = b.unary(Op::exp2, third);
  return b.binary(Op::mul, b.binary(Op::mul, b.binary(Op::mul, x, scale), scale),
                  b.unary(Op::exp2, rest));
}

ValueId signbit(Builder& b, ValueId x) {
  DType t = dtype_of(b, x);
  if (!is_float(t)) return b.binary(Op::lt, x, constant(b, 0, t));
  ValueId sign = b.binary(Op::copysign, b.broadcast(constant(b, 1, t), b.node(x).shape), x);
  return b.binary(Op::lt, sign, constant(b, 0, t));
}

std::pair<ValueId, ValueId> modf(Builder& b, ValueId x) {
  DType t = dtype_of(b, x);
  ValueId whole = b.unary(Op::trunc, x);
  // The fraction carries x's sign even when it is zero (modf(-3.0) = (-0.0, -3.0)).
  ValueId difference =
      where(b, b.unary(Op::isinf, x), constant(b, 0, t), b.binary(Op::sub, x, whole));
  return {b.binary(Op::copysign, difference, x), whole};
}

std::pair<ValueId, ValueId> frexp(Builder& b, ValueId x) {
  DType t = dtype_of(b, x);
  ValueId exponent = b.binary(Op::add, b.unary(Op::floor, b.unary(Op::log2, b.unary(Op::abs, x))),
                              constant(b, 1, t));
  // x * 2**-exponent in two factors: for subnormal x, 2**-exponent alone overflows.
  ValueId negated = b.unary(Op::neg, exponent);
  ValueId half = b.unary(Op::floor, b.binary(Op::mul, negated, constant(b, 0.5, t)));
  ValueId mantissa = b.binary(Op::mul, b.binary(Op::mul, x, b.unary(Op::exp2, half)),
                              b.unary(Op::exp2, b.binary(Op::sub, negated, half)));
  // log2 can be off by one ulp at powers of two: bring |mantissa| into [0.5, 1).
  ValueId too_big = b.binary(Op::ge, b.unary(Op::abs, mantissa), constant(b, 1, t));
  mantissa = where(b, too_big, b.binary(Op::mul, mantissa, constant(b, 0.5, t)), mantissa);
  exponent = where(b, too_big, b.binary(Op::add, exponent, constant(b, 1, t)), exponent);
  ValueId special = b.binary(Op::logical_or, b.binary(Op::eq, x, constant(b, 0, t)),
                             b.unary(Op::logical_not, b.unary(Op::isfinite, x)));
  mantissa = where(b, special, x, mantissa);
  exponent = where(b, special, b.broadcast(constant(b, 0, t), b.node(x).shape), exponent);
  return {mantissa, b.cast(exponent, DType::Int32)};
}

}  // namespace kiln::decompose
