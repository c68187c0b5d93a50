// NumPy ufuncs that are not one primitive, as decompositions shared by every front end (the
// C++ Tensor API, the NumPy tracer, the torch front end). Operands already have the dtype of
// the ufunc's loop (the caller promotes); results follow NumPy's special cases (signed zeros,
// infinities, NaN) exactly where the notes say so.
#pragma once
#include <utility>

#include "ir/builder.h"

namespace kiln::decompose {

using ir::Builder;
using ir::ValueId;

// C's fmod: the remainder with the dividend's sign (Python's mod takes the divisor's).
ValueId fmod(Builder& b, ValueId a, ValueId divisor);
// log(exp(a) + exp(b)) (base_two: log2(2**a + 2**b)) without overflow; equal operands,
// infinities included, give a + log(2) (a + 1).
ValueId logaddexp(Builder& b, ValueId a, ValueId c, bool base_two);
// 0 below zero, 1 above, at_zero at zero, NaN for NaN.
ValueId heaviside(Builder& b, ValueId x, ValueId at_zero);
// Integers: Euclid's algorithm unrolled to the dtype's worst case (Fibonacci bound).
ValueId gcd(Builder& b, ValueId a, ValueId c);
ValueId lcm(Builder& b, ValueId a, ValueId c);
// x * 2**exponent; `exponent` of any integer dtype.
ValueId ldexp(Builder& b, ValueId x, ValueId exponent);
// The sign bit: true for -0.0 and negative NaN too.
ValueId signbit(Builder& b, ValueId x);
// (fraction, whole): whole = trunc(x); the fraction has x's sign (+-0 for +-inf).
std::pair<ValueId, ValueId> modf(Builder& b, ValueId x);
// (mantissa in [0.5, 1) with x's sign, exponent as int32); 0, inf and NaN keep x and give 0.
std::pair<ValueId, ValueId> frexp(Builder& b, ValueId x);

}  // namespace kiln::decompose
