// THE op table: every primitive kiln knows, defined once.
//
// Elementwise ops carry their scalar semantics as one C++ expression over operands `a`, `b`,
// `c` and the helpers of scalar_math.h. The same expression is compiled into the reference
// interpreter (instantiated for each compute type) and stringised into the generated code's
// prelude, so the interpreter and every backend agree by construction on integer wrap-around,
// NaN rules, Python-style floordiv/mod, and round-half-to-even.
//
// Column meanings:
//   accepts: the dtype classes an input may have (operands of a binary op share one dtype;
//            frontends insert the casts that NumPy/PyTorch promotion asks for).
//   result:  Same (the operand dtype) or Bool.
#pragma once

// X(name, accepts, result, expression)
#define KILN_UNARY_OPS(X)                                      \
  X(neg, Numeric, Same, -a)                                    \
  X(abs, Numeric, Same, kiln_abs(a))                           \
  X(sign, Numeric, Same, kiln_sign(a))                         \
  X(exp, Float, Same, kiln_exp(a))                             \
  X(exp2, Float, Same, kiln_exp2(a))                           \
  X(expm1, Float, Same, kiln_expm1(a))                         \
  X(log, Float, Same, kiln_log(a))                             \
  X(log2, Float, Same, kiln_log2(a))                           \
  X(log10, Float, Same, kiln_log10(a))                         \
  X(log1p, Float, Same, kiln_log1p(a))                         \
  X(sqrt, Float, Same, kiln_sqrt(a))                           \
  X(rsqrt, Float, Same, 1 / kiln_sqrt(a))                      \
  X(cbrt, Float, Same, kiln_cbrt(a))                           \
  X(sin, Float, Same, kiln_sin(a))                             \
  X(cos, Float, Same, kiln_cos(a))                             \
  X(tan, Float, Same, kiln_tan(a))                             \
  X(asin, Float, Same, kiln_asin(a))                           \
  X(acos, Float, Same, kiln_acos(a))                           \
  X(atan, Float, Same, kiln_atan(a))                           \
  X(sinh, Float, Same, kiln_sinh(a))                           \
  X(cosh, Float, Same, kiln_cosh(a))                           \
  X(tanh, Float, Same, kiln_tanh(a))                           \
  X(asinh, Float, Same, kiln_asinh(a))                         \
  X(acosh, Float, Same, kiln_acosh(a))                         \
  X(atanh, Float, Same, kiln_atanh(a))                         \
  X(erf, Float, Same, kiln_erf(a))                             \
  X(erfc, Float, Same, kiln_erfc(a))                           \
  X(floor, Numeric, Same, kiln_floor(a))                       \
  X(ceil, Numeric, Same, kiln_ceil(a))                         \
  X(round, Numeric, Same, kiln_round_half_even(a))             \
  X(trunc, Numeric, Same, kiln_trunc(a))                       \
  X(isnan, Any, Bool, a != a)                                  \
  X(isinf, Any, Bool, (a == a) && (a - a != a - a))            \
  X(isfinite, Any, Bool, a - a == a - a)                       \
  X(logical_not, Any, Bool, !a)                                \
  X(bitwise_not, IntegerOrBool, Same, kiln_bitwise_not(a))     \
  X(reciprocal, Float, Same, 1 / a)

#define KILN_BINARY_OPS(X)                                     \
  X(add, Numeric, Same, a + b)                                 \
  X(sub, Numeric, Same, a - b)                                 \
  X(mul, Numeric, Same, a * b)                                 \
  X(div, Float, Same, a / b)                                   \
  X(floordiv, Numeric, Same, kiln_floordiv(a, b))              \
  X(mod, Numeric, Same, kiln_mod(a, b))                        \
  X(pow, Numeric, Same, kiln_pow(a, b))                        \
  X(maximum, Any, Same, kiln_maximum(a, b))                    \
  X(minimum, Any, Same, kiln_minimum(a, b))                    \
  X(fmax, Any, Same, kiln_fmax(a, b))                          \
  X(fmin, Any, Same, kiln_fmin(a, b))                          \
  X(atan2, Float, Same, kiln_atan2(a, b))                      \
  X(hypot, Float, Same, kiln_hypot(a, b))                      \
  X(copysign, Float, Same, kiln_copysign(a, b))                \
  X(eq, Any, Bool, a == b)                                     \
  X(ne, Any, Bool, a != b)                                     \
  X(lt, Any, Bool, a < b)                                      \
  X(le, Any, Bool, a <= b)                                     \
  X(gt, Any, Bool, a > b)                                      \
  X(ge, Any, Bool, a >= b)                                     \
  X(logical_and, Any, Bool, (a != 0) && (b != 0))              \
  X(logical_or, Any, Bool, (a != 0) || (b != 0))               \
  X(logical_xor, Any, Bool, (a != 0) != (b != 0))              \
  X(bitwise_and, IntegerOrBool, Same, a & b)                   \
  X(bitwise_or, IntegerOrBool, Same, a | b)                    \
  X(bitwise_xor, IntegerOrBool, Same, a ^ b)                   \
  X(shift_left, Integer, Same, kiln_shift_left(a, b))          \
  X(shift_right, Integer, Same, kiln_shift_right(a, b))

// where(condition, a, b): condition is bool, a and b share a dtype.
#define KILN_TERNARY_OPS(X) X(where, Any, Same, kiln_select(a, b, c))

// Reductions over a set of axes (attrs.axes, attrs.keepdims).
// X(name, accepts, result, accumulator, identity, combine)  -- `acc` combined with element `x`.
// Accumulator Plain: one value of the result dtype. ArgIndex: (value, int64 index), first
// occurrence wins. Welford: (count, mean, m2), result m2 / (count - ddof).
#define KILN_REDUCE_OPS(X)                                                      \
  X(sum, Numeric, Same, Plain, kiln_zero<T>(), acc + x)                         \
  X(prod, Numeric, Same, Plain, kiln_one<T>(), acc * x)                         \
  X(max, Any, Same, Plain, kiln_lowest<T>(), kiln_maximum(acc, x))              \
  X(min, Any, Same, Plain, kiln_highest<T>(), kiln_minimum(acc, x))             \
  X(any, Any, Bool, Plain, false, acc || (x != 0))                              \
  X(all, Any, Bool, Plain, true, acc && (x != 0))                               \
  X(argmax, Any, Int64, ArgIndex, kiln_lowest<T>(), kiln_argmax_better(x, acc)) \
  X(argmin, Any, Int64, ArgIndex, kiln_highest<T>(), kiln_argmin_better(x, acc)) \
  X(var, Float, Same, Welford, kiln_zero<T>(), 0)

// Inclusive scans along attrs.axis.  X(name, accepts, identity, combine)
#define KILN_SCAN_OPS(X)                           \
  X(cumsum, Numeric, kiln_zero<T>(), acc + x)      \
  X(cumprod, Numeric, kiln_one<T>(), acc * x)

// Everything that is not a scalar expression. X(name, arity)  (-1: variadic)
#define KILN_STRUCTURAL_OPS(X)                                                          \
  X(parameter, 0)      /* graph input number attrs.index */                             \
  X(constant, 0)       /* scalar attrs.scalar broadcast to the shape */                 \
  X(constant_array, 0) /* attrs.data, row-major */                                      \
  X(iota, 0)           /* index along attrs.axis */                                     \
  X(random_uniform, 0) /* philox(attrs.seed) in [0, 1) */                               \
  X(random_normal, 0)  /* philox(attrs.seed), Box-Muller */                             \
  X(cast, 1)           /* to the node's dtype, NumPy's C-cast semantics */              \
  X(reshape, 1)        /* row-major reinterpretation */                                 \
  X(permute, 1)        /* attrs.permutation */                                          \
  X(broadcast, 1)      /* to the node's shape, NumPy rules */                           \
  X(slice, 1)          /* attrs.starts/steps per dim (output shape gives count) */      \
  X(pad, 1)            /* attrs.pad_low/pad_high, attrs.pad_mode, attrs.scalar */       \
  X(concat, -1)        /* along attrs.axis */                                           \
  X(flip, 1)           /* along attrs.axes */                                           \
  X(gather, 2)         /* out[..i..] = in[.. index[..i..] ..] along attrs.axis */        \
  X(scatter, 3)        /* functional a[index] = values along attrs.axis (attrs.mode) */ \
  X(matmul, 2)         /* extern: batched, broadcast batch dims */
