// THE op table: every primitive kiln knows, defined once. It generates the Op enum and OpInfo
// (ops.h), the interpreter's dispatch, the emitters' op wrappers, the public C++ functions
// (include/kiln/tensor.h declares one per elementwise entry, named by its `public` column) and
// the Python bindings; the fuzzer and the hoisting cost model read their columns from it.
//
// Elementwise ops carry their scalar semantics as one C++ expression over operands `a`, `b`,
// `c` and the helpers of scalar_math.h. The same expression is compiled into the reference
// interpreter (instantiated for each compute type) and stringised into the generated code's
// prelude, so the interpreter and every backend agree by construction on integer wrap-around,
// NaN rules, Python-style floordiv/mod, and round-half-to-even.
//
// Column meanings:
//   accepts:   the dtype classes an input may have (operands of a binary op share one dtype;
//              frontends insert the casts that NumPy/PyTorch promotion asks for). The sets
//              "...OrComplex" take complex64/complex128 too: ir/complex_lowering.cpp has the
//              op's rule on (real, imaginary) pairs, so the expression never sees complex.
//   result:    Same (the operand dtype), Bool, Int64 or Magnitude (Same, but the parts' dtype
//              for complex operands: abs).
//   public:    the NumPy name of the public function (tensor.h, Python bindings).
//   promotion: what the public function does to operands that are not float (NumPy's loop
//              selection): Keep; MathFloat (integers and bool to the smallest float that
//              holds them); Float64 (integers to float64: true division); BoolToFloat (only
//              bool goes to float16: rounding keeps integers).
//   cost:      Cheap (about one instruction), Costly (division, roots: a slow instruction or a
//              few) or Call (transcendental functions, powers: a vector math library call,
//              tens of instructions): what hoisting loop-invariant work weighs, and what
//              decides a loop's threads (sched/cpu/mark_parallel.h).
//   domain:    where the differential fuzzer draws float inputs of a unary op so the result
//              stays finite and well conditioned: Real, Moderate (|x| <= 6), Positive
//              (x >= 0.5), NonNegative, AboveOne (x >= 1.5), NonZero (|x| >= 0.5), Unit
//              (|x| <= 0.9). Binary ops: Real, or the divisor's/exponent's rule.
//   derivative: the slot for the op's reverse-mode rule (the autodiff work fills it; none yet).
#pragma once

// X(name, accepts, result, expression, public, promotion, cost, domain, derivative)
#define KILN_UNARY_OPS(X)                                                                       \
  X(neg, NumericOrComplex, Same, kiln_neg(a), negative, Keep, Cheap, Real, none)                                  \
  X(abs, NumericOrComplex, Magnitude, kiln_abs(a), abs, Keep, Cheap, Real, none)                              \
  X(sign, Numeric, Same, kiln_sign(a), sign, Keep, Cheap, Real, none)                           \
  X(exp, FloatOrComplex, Same, kiln_exp(a), exp, MathFloat, Call, Moderate, none)                        \
  X(exp2, Float, Same, kiln_exp2(a), exp2, MathFloat, Call, Moderate, none)                     \
  X(expm1, Float, Same, kiln_expm1(a), expm1, MathFloat, Call, Moderate, none)                  \
  X(log, FloatOrComplex, Same, kiln_log(a), log, MathFloat, Call, Positive, none)                        \
  X(log2, FloatOrComplex, Same, kiln_log2(a), log2, MathFloat, Call, Positive, none)                     \
  X(log10, FloatOrComplex, Same, kiln_log10(a), log10, MathFloat, Call, Positive, none)                  \
  X(log1p, Float, Same, kiln_log1p(a), log1p, MathFloat, Call, NonNegative, none)               \
  X(sqrt, FloatOrComplex, Same, kiln_sqrt(a), sqrt, MathFloat, Costly, Positive, none)                   \
  X(rsqrt, Float, Same, 1 / kiln_sqrt(a), rsqrt, MathFloat, Costly, Positive, none)             \
  X(cbrt, Float, Same, kiln_cbrt(a), cbrt, MathFloat, Call, Positive, none)                     \
  X(sin, FloatOrComplex, Same, kiln_sin(a), sin, MathFloat, Call, Real, none)                            \
  X(cos, FloatOrComplex, Same, kiln_cos(a), cos, MathFloat, Call, Real, none)                            \
  X(tan, Float, Same, kiln_tan(a), tan, MathFloat, Call, Unit, none)                            \
  X(asin, Float, Same, kiln_asin(a), arcsin, MathFloat, Call, Unit, none)                       \
  X(acos, Float, Same, kiln_acos(a), arccos, MathFloat, Call, Unit, none)                       \
  X(atan, Float, Same, kiln_atan(a), arctan, MathFloat, Call, Real, none)                       \
  X(sinh, FloatOrComplex, Same, kiln_sinh(a), sinh, MathFloat, Call, Moderate, none)                     \
  X(cosh, FloatOrComplex, Same, kiln_cosh(a), cosh, MathFloat, Call, Moderate, none)                     \
  X(tanh, Float, Same, kiln_tanh(a), tanh, MathFloat, Call, Real, none)                         \
  X(asinh, Float, Same, kiln_asinh(a), arcsinh, MathFloat, Call, Real, none)                    \
  X(acosh, Float, Same, kiln_acosh(a), arccosh, MathFloat, Call, AboveOne, none)                \
  X(atanh, Float, Same, kiln_atanh(a), arctanh, MathFloat, Call, Unit, none)                    \
  X(erf, Float, Same, kiln_erf(a), erf, MathFloat, Call, Real, none)                            \
  X(erfc, Float, Same, kiln_erfc(a), erfc, MathFloat, Call, Real, none)                         \
  X(floor, Numeric, Same, kiln_floor(a), floor, BoolToFloat, Cheap, Real, none)                 \
  X(ceil, Numeric, Same, kiln_ceil(a), ceil, BoolToFloat, Cheap, Real, none)                    \
  X(round, Numeric, Same, kiln_round_half_even(a), round, BoolToFloat, Cheap, Real, none)       \
  X(trunc, Numeric, Same, kiln_trunc(a), trunc, BoolToFloat, Cheap, Real, none)                 \
  X(isnan, AnyOrComplex, Bool, a != a, isnan, Keep, Cheap, Real, none)                                   \
  X(isinf, AnyOrComplex, Bool, (a == a) && (a - a != a - a), isinf, Keep, Cheap, Real, none)             \
  X(isfinite, AnyOrComplex, Bool, a - a == a - a, isfinite, Keep, Cheap, Real, none)                     \
  X(logical_not, AnyOrComplex, Bool, !a, logical_not, Keep, Cheap, Real, none)                           \
  X(bitwise_not, IntegerOrBool, Same, kiln_bitwise_not(a), bitwise_not, Keep, Cheap, Real, none) \
  X(reciprocal, FloatOrComplex, Same, 1 / a, reciprocal, MathFloat, Costly, NonZero, none)                \
  X(sinc, Float, Same, kiln_sinc(a), sinc, MathFloat, Call, Real, none)

#define KILN_BINARY_OPS(X)                                                                      \
  X(add, NumericOrComplex, Same, kiln_add(a, b), add, Keep, Cheap, Real, none)                                    \
  X(sub, NumericOrComplex, Same, kiln_sub(a, b), subtract, Keep, Cheap, Real, none)                               \
  X(mul, NumericOrComplex, Same, kiln_mul(a, b), multiply, Keep, Cheap, Real, none)                               \
  X(div, FloatOrComplex, Same, a / b, divide, Float64, Costly, NonZero, none)                            \
  X(floordiv, Numeric, Same, kiln_floordiv(a, b), floor_divide, Keep, Costly, NonZero, none)    \
  X(mod, Numeric, Same, kiln_mod(a, b), mod, Keep, Costly, NonZero, none)                       \
  X(pow, NumericOrComplex, Same, kiln_pow(a, b), power, Keep, Call, Moderate, none)                      \
  X(maximum, Any, Same, kiln_maximum(a, b), maximum, Keep, Cheap, Real, none)                   \
  X(minimum, Any, Same, kiln_minimum(a, b), minimum, Keep, Cheap, Real, none)                   \
  X(fmax, Any, Same, kiln_fmax(a, b), fmax, Keep, Cheap, Real, none)                            \
  X(fmin, Any, Same, kiln_fmin(a, b), fmin, Keep, Cheap, Real, none)                            \
  X(atan2, Float, Same, kiln_atan2(a, b), arctan2, MathFloat, Call, Real, none)                 \
  X(hypot, Float, Same, kiln_hypot(a, b), hypot, MathFloat, Call, Real, none)                   \
  X(copysign, Float, Same, kiln_copysign(a, b), copysign, MathFloat, Cheap, Real, none)         \
  X(eq, AnyOrComplex, Bool, a == b, equal, Keep, Cheap, Real, none)                                      \
  X(ne, AnyOrComplex, Bool, a != b, not_equal, Keep, Cheap, Real, none)                                  \
  X(lt, Any, Bool, a < b, less, Keep, Cheap, Real, none)                                        \
  X(le, Any, Bool, a <= b, less_equal, Keep, Cheap, Real, none)                                 \
  X(gt, Any, Bool, a > b, greater, Keep, Cheap, Real, none)                                     \
  X(ge, Any, Bool, a >= b, greater_equal, Keep, Cheap, Real, none)                              \
  X(logical_and, AnyOrComplex, Bool, (a != 0) && (b != 0), logical_and, Keep, Cheap, Real, none)         \
  X(logical_or, AnyOrComplex, Bool, (a != 0) || (b != 0), logical_or, Keep, Cheap, Real, none)          \
  X(logical_xor, AnyOrComplex, Bool, (a != 0) != (b != 0), logical_xor, Keep, Cheap, Real, none)         \
  X(bitwise_and, IntegerOrBool, Same, a & b, bitwise_and, Keep, Cheap, Real, none)              \
  X(bitwise_or, IntegerOrBool, Same, a | b, bitwise_or, Keep, Cheap, Real, none)                \
  X(bitwise_xor, IntegerOrBool, Same, a ^ b, bitwise_xor, Keep, Cheap, Real, none)              \
  X(shift_left, Integer, Same, kiln_shift_left(a, b), left_shift, Keep, Cheap, Real, none)      \
  X(shift_right, Integer, Same, kiln_shift_right(a, b), right_shift, Keep, Cheap, Real, none)

// where(condition, a, b): condition is bool, a and b share a dtype.
#define KILN_TERNARY_OPS(X) X(where, AnyOrComplex, Same, kiln_select(a, b, c), where, Keep, Cheap, Real, none)

// Reductions over a set of axes (attrs.axes, attrs.keepdims).
// X(name, accepts, result, accumulator, identity, combine, derivative): `acc` combined with `x`.
// Accumulator Plain: one value of the result dtype. ArgIndex: (value, int64 index), first
// occurrence wins. Welford: (count, mean, m2), result m2 / (count - ddof).
#define KILN_REDUCE_OPS(X)                                                               \
  X(sum, NumericOrComplex, Same, Plain, kiln_zero<T>(), kiln_add(acc, x), none)                            \
  X(prod, Numeric, Same, Plain, kiln_one<T>(), kiln_mul(acc, x), none)                            \
  X(max, Any, Same, Plain, kiln_lowest<T>(), kiln_maximum(acc, x), none)                 \
  X(min, Any, Same, Plain, kiln_highest<T>(), kiln_minimum(acc, x), none)                \
  X(any, AnyOrComplex, Bool, Plain, false, acc || (x != 0), none)                                 \
  X(all, AnyOrComplex, Bool, Plain, true, acc && (x != 0), none)                                  \
  X(argmax, Any, Int64, ArgIndex, kiln_lowest<T>(), kiln_argmax_better(x, acc), none)    \
  X(argmin, Any, Int64, ArgIndex, kiln_highest<T>(), kiln_argmin_better(x, acc), none)   \
  X(var, Float, Same, Welford, kiln_zero<T>(), 0, none)

// Inclusive scans along attrs.axis.  X(name, accepts, identity, combine, derivative)
#define KILN_SCAN_OPS(X)                                                                 \
  X(cumsum, NumericOrComplex, kiln_zero<T>(), kiln_add(acc, x), none)                                      \
  X(cumprod, Numeric, kiln_one<T>(), kiln_mul(acc, x), none)                                     \
  /* NaN sticks (maximum's NaN first); of equal values the later, as torch.cummax keeps */      \
  X(cummax, Any, kiln_lowest<T>(), kiln_running_maximum(acc, x), none)                          \
  X(cummin, Any, kiln_highest<T>(), kiln_running_minimum(acc, x), none)

// Everything that is not a scalar expression. X(name, arity)  (-1: variadic)
#define KILN_STRUCTURAL_OPS(X)                                                          \
  X(parameter, 0)      /* graph input number attrs.index */                             \
  X(constant, 0)       /* scalar attrs.scalar broadcast to the shape */                 \
  X(constant_array, 0) /* attrs.data, row-major */                                      \
  X(iota, 0)           /* index along attrs.axis */                                     \
  X(random_uniform, 1) /* philox(attrs.seed + inputs[0], a 0-d int64 key) in [0, 1) */   \
  X(random_normal, 1)  /* philox(attrs.seed + inputs[0]), Box-Muller */                 \
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
  X(matmul, -1)        /* extern: batched, broadcast batch dims[; bias, attrs.relu] */  \
  X(convolution, -1)   /* extern: input, weight[, bias]; attrs.strides etc. (N-d) */        \
  X(complex, 2)        /* real + imaginary part -> complex (ir/complex_lowering.h) */   \
  X(real, 1)           /* the real part of a complex value */                           \
  X(imag, 1)           /* the imaginary part of a complex value */                      \
  X(loop, -1)          /* ir/loop.h: start, stop, carried, invariants; axis 1: while */ \
  X(cond, -1)          /* ir/cond.h: predicate, carried, then and else invariants */    \
  X(loop_result, 1)    /* carried value attrs.index of a loop (or cond) after it runs */ \
  /* extern: a convolution's gradients (ir/convolution_shape.h). Operands grad_output and */ \
  /* the weight (input gradient) or the input (weight gradient); the forward's attrs; the  */ \
  /* node's shape is the forward input's or weight's. Listed last (but placeholder) so    */ \
  /* that the serialised numbers of the ops above stay what they were.                    */ \
  X(convolution_backward_input, 2)                                                      \
  X(convolution_backward_weight, 2)                                                     \
  /* the value of attrs.extent, a size that may hold size symbols, as a 0-d integer; */ \
  /* ir::specialize turns it into a constant, so later stages never see one.         */ \
  X(size, 0)                                                                            \
  /* extern: the int64 positions along attrs.axis that sort the operand, stable, NaN after */ \
  /* every number (NumPy's and torch's order; attrs.descending puts NaN first); the node's */ \
  /* extent along the axis, k <= n, keeps the first k (top-k). Values: gather at them.     */ \
  X(argsort, 1)                                                                         \
  /* extern: the operand's values in argsort's order (the same attrs and extent); where   */ \
  /* the graph also computes that argsort, they are read through it (passes/share_sorts). */ \
  X(sort, 1)                                                                            \
  /* extern: softmax(q kᵀ + bias) v over (batch, heads, length, features), the scale in q, */ \
  /* k and v with heads dividing q's (grouped queries); operands q, k, v[, bias: float or */ \
  /* bool keep-mask, (batch, heads, L, S)]; attrs.causal: key j only for query i >= j. A  */ \
  /* row that sees no key is 0 (torch's "safe softmax"). */                                 \
  X(attention, -1)                                                                      \
  /* extern: x with a x = b, a (.., n, n), b (.., n, k) of one float dtype and batch shape  */ \
  /* (LAPACK's gesv: LU with partial pivoting); an exact zero pivot raises kiln's LinAlg   */ \
  /* error "Singular matrix" when the graph runs (NumPy's numpy.linalg.LinAlgError).       */ \
  X(solve, 2)                                                                           \
  X(placeholder, 0)    /* a loop body's input while it is traced; never in a graph */
