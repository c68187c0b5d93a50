// kiln scalar semantics: the helpers named by the expressions of include/kiln/op_list.h.
//
// Target-neutral: this text is compiled into the reference interpreter AND pasted into every
// generated translation unit, after the target's prelude (C++: src/codegen/cpp/cpp_prelude.h),
// which supplies the fixed-width integer types and the primitives used here: kiln_bit_cast,
// kiln_infinity, kiln_quiet_nan, kiln_math_{fabs,floor,ceil,trunc,rint}, and the libm-backed
// kiln_exp, kiln_sin, kiln_sqrt, ... Hence:
// - no include directive, no compiler builtin, no pragma: those belong to a target's prelude;
// - everything global and prefixed kiln_;
// - an include guard, not "pragma once" (which warns in a main file);
// - no control flow where a value is picked (kiln_select): GCC 12 will not vectorise a loop
//   that holds both a branch and a call, and most kernels call libmvec.
// Semantics follow NumPy: Python-style floordiv/mod, NaN-propagating maximum/minimum,
// round-half-to-even, shifts past the bit width. Integer division by zero gives 0 and never traps.
#ifndef KILN_SCALAR_MATH_H
#define KILN_SCALAR_MATH_H

// ---- type facts ---------------------------------------------------------------------------
template <class T> inline constexpr bool kiln_is_float = false;
template <> inline constexpr bool kiln_is_float<float> = true;
template <> inline constexpr bool kiln_is_float<double> = true;

template <class T> inline constexpr bool kiln_is_bool = false;
template <> inline constexpr bool kiln_is_bool<bool> = true;

template <class T> inline constexpr bool kiln_is_signed = T(-1) < T(0);

// The unsigned type of the same width: wrapping arithmetic without relying on -fwrapv.
template <class T> struct kiln_unsigned_of { typedef T type; };
template <> struct kiln_unsigned_of<signed char> { typedef unsigned char type; };
template <> struct kiln_unsigned_of<char> { typedef unsigned char type; };
template <> struct kiln_unsigned_of<short> { typedef unsigned short type; };
template <> struct kiln_unsigned_of<int> { typedef unsigned int type; };
template <> struct kiln_unsigned_of<long> { typedef unsigned long type; };
template <> struct kiln_unsigned_of<long long> { typedef unsigned long long type; };

template <class T> KILN_FN constexpr T kiln_zero() { return T(0); }
template <class T> KILN_FN constexpr T kiln_one() { return T(1); }

// +inf for floats (the identity of min), the maximum for integers, true for bool.
template <class T>
KILN_FN constexpr T kiln_highest() {
  if constexpr (kiln_is_float<T>) {
    return T(kiln_infinity());
  } else if constexpr (kiln_is_bool<T>) {
    return true;
  } else if constexpr (kiln_is_signed<T>) {
    typedef typename kiln_unsigned_of<T>::type U;
    return T(U(~U(0)) >> 1);
  } else {
    return T(~T(0));
  }
}

// -inf for floats (the identity of max), the minimum for integers, false for bool.
template <class T>
KILN_FN constexpr T kiln_lowest() {
  if constexpr (kiln_is_float<T>) {
    return T(-kiln_infinity());
  } else if constexpr (kiln_is_bool<T>) {
    return false;
  } else if constexpr (kiln_is_signed<T>) {
    return T(-kiln_highest<T>() - 1);
  } else {
    return T(0);
  }
}

// ---- wrapping arithmetic ------------------------------------------------------------------
// + - * and negation wrap for signed integers, as NumPy's and torch's do. C++ leaves signed
// overflow undefined: the C++ target compiles with -fwrapv, but NVRTC has no such option and
// folds `x + 1 > x` to true, so the int and wider types compute in their unsigned type. Every
// other type (floats, bool, the 8- and 16-bit types, which promote to int) keeps the plain
// operator and its result type.
template <class T> inline constexpr bool kiln_wraps = false;
template <> inline constexpr bool kiln_wraps<int> = true;
template <> inline constexpr bool kiln_wraps<long> = true;
template <> inline constexpr bool kiln_wraps<long long> = true;

template <class A, class B>
KILN_FN auto kiln_add(A a, B b) {
  typedef decltype(a + b) R;
  if constexpr (kiln_wraps<R>) {
    typedef typename kiln_unsigned_of<R>::type U;
    return R(U(R(a)) + U(R(b)));
  } else {
    return a + b;
  }
}
template <class A, class B>
KILN_FN auto kiln_sub(A a, B b) {
  typedef decltype(a - b) R;
  if constexpr (kiln_wraps<R>) {
    typedef typename kiln_unsigned_of<R>::type U;
    return R(U(R(a)) - U(R(b)));
  } else {
    return a - b;
  }
}
template <class A, class B>
KILN_FN auto kiln_mul(A a, B b) {
  typedef decltype(a * b) R;
  if constexpr (kiln_wraps<R>) {
    typedef typename kiln_unsigned_of<R>::type U;
    return R(U(R(a)) * U(R(b)));
  } else {
    return a * b;
  }
}
template <class A>
KILN_FN auto kiln_neg(A a) {
  typedef decltype(-a) R;
  if constexpr (kiln_wraps<R>) {
    typedef typename kiln_unsigned_of<R>::type U;
    return R(U(0) - U(R(a)));
  } else {
    return -a;
  }
}

// ---- branch-free select ----------------------------------------------------------------------
// `condition ? x : y` through bit masks. GCC 12 refuses to if-convert (and so to vectorise) any
// loop that also calls a function, libmvec's vector math included: a plain ?: next to a kiln_exp
// keeps the whole loop scalar. Mask arithmetic has no control flow to convert. Every helper
// below that picks between values uses this; generated code should too.
template <class T>
KILN_FN T kiln_select(bool condition, T x, T y) {
  if constexpr (kiln_is_bool<T>) {
    return (condition & x) | (!condition & y);
  } else if constexpr (kiln_is_float<T>) {
    if constexpr (sizeof(T) == 4) {
      uint32_t mask = 0u - uint32_t(condition);
      return kiln_bit_cast(T, (kiln_bit_cast(uint32_t, x) & mask) |
                                       (kiln_bit_cast(uint32_t, y) & ~mask));
    } else {
      uint64_t mask = uint64_t(0) - uint64_t(condition);
      return kiln_bit_cast(T, (kiln_bit_cast(uint64_t, x) & mask) |
                                       (kiln_bit_cast(uint64_t, y) & ~mask));
    }
  } else {
    typedef typename kiln_unsigned_of<T>::type U;
    U mask = U(U(0) - U(condition));
    // y ^ ((x ^ y) & mask) rather than (x & mask) | (y & ~mask): when x is y ^ c (crc32's
    // `crc >> 1 ^ poly` against `crc >> 1`) g++ folds x ^ y to c, one operation less on the
    // loop-carried chain.
    return T(U(y) ^ (U(U(x) ^ U(y)) & mask));
  }
}

// ---- unary helpers --------------------------------------------------------------------------
template <class T>
KILN_FN T kiln_abs(T a) {
  if constexpr (kiln_is_float<T>) {
    return kiln_math_fabs(a);
  } else if constexpr (kiln_is_signed<T>) {
    // Wraps like NumPy: abs(INT_MIN) == INT_MIN.
    typedef typename kiln_unsigned_of<T>::type U;
    return kiln_select(a < 0, T(U(0) - U(a)), a);
  } else {
    return a;
  }
}
KILN_FN float kiln_abs(float a) { return kiln_math_fabs(a); }

// -1, 0 or 1; NaN stays NaN and both zeros give +0 (NumPy).
template <class T>
KILN_FN T kiln_sign(T a) {
  if constexpr (kiln_is_float<T>) {
    // `a + 0` keeps NaN and turns -0 into +0, as NumPy does.
    return kiln_select(a > 0, T(1), kiln_select(a < 0, T(-1), a + T(0)));
  } else if constexpr (kiln_is_signed<T>) {
    return T((a > T(0)) - (a < T(0)));
  } else {
    return T(a > T(0));
  }
}

// Rounding is the identity on integers.
template <class T>
KILN_FN T kiln_floor(T a) {
  if constexpr (kiln_is_float<T>) return kiln_math_floor(a);
  else return a;
}
KILN_FN float kiln_floor(float a) { return kiln_math_floor(a); }
template <class T>
KILN_FN T kiln_ceil(T a) {
  if constexpr (kiln_is_float<T>) return kiln_math_ceil(a);
  else return a;
}
KILN_FN float kiln_ceil(float a) { return kiln_math_ceil(a); }
template <class T>
KILN_FN T kiln_trunc(T a) {
  if constexpr (kiln_is_float<T>) return kiln_math_trunc(a);
  else return a;
}
KILN_FN float kiln_trunc(float a) { return kiln_math_trunc(a); }
// rint rounds half to even in the default rounding mode, which kiln never changes.
template <class T>
KILN_FN T kiln_round_half_even(T a) {
  if constexpr (kiln_is_float<T>) return kiln_math_rint(a);
  else return a;
}
KILN_FN float kiln_round_half_even(float a) { return kiln_math_rint(a); }

template <class T>
KILN_FN T kiln_bitwise_not(T a) {
  if constexpr (kiln_is_bool<T>) return !a;
  else return T(~a);
}

// sin(pi x) / (pi x), 1 at 0 (NumPy's normalised sinc).
template <class T>
KILN_FN T kiln_sinc(T a) {
  T y = T(3.14159265358979323846) * a;
  return kiln_select(a == T(0), T(1), kiln_sin(y) / kiln_select(a == T(0), T(1), y));
}

// ---- loops -----------------------------------------------------------------------------------
// Python's len(range(start, stop, step)) without overflow (ir::loop_trip_count): the generated
// loops of a graph loop (codegen/cpp/loop_driver.h, codegen/cuda/device_loops.cpp).
KILN_FN int64_t kiln_trip_count(int64_t start, int64_t stop, int64_t step) {
  typedef unsigned long long u64;
  if (step > 0 && start < stop) return (int64_t)(((u64)stop - (u64)start - 1) / (u64)step) + 1;
  if (step < 0 && start > stop)
    return (int64_t)(((u64)start - (u64)stop - 1) / (0 - (u64)step)) + 1;
  return 0;
}

// ---- division ------------------------------------------------------------------------------
// Floats follow NumPy's npy_divmod exactly: the quotient is floor((a - fmod(a, b)) / b) with
// NumPy's correction; b == 0 gives a / b (inf or NaN). Integers follow Python: the quotient is
// rounded toward -inf; division by zero gives 0; INT_MIN // -1 wraps to INT_MIN.
template <class T>
KILN_FN T kiln_floordiv(T a, T b) {
  if constexpr (kiln_is_float<T>) {
    if (b == 0) return a / b;
    T mod = kiln_fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) div -= T(1);
    }
    if (div != 0) {
      T floor_div = kiln_floor(div);
      if (div - floor_div > T(0.5)) floor_div += T(1);
      return floor_div;
    }
    return kiln_copysign(T(0), a / b);
  } else if constexpr (kiln_is_signed<T>) {
    typedef typename kiln_unsigned_of<T>::type U;
    if (b == 0) return T(0);
    if (b == T(-1)) return T(U(0) - U(a));  // INT_MIN / -1 would trap
    T quotient = T(a / b);
    if (T(a % b) != 0 && ((a < 0) != (b < 0))) quotient = T(quotient - 1);
    return quotient;
  } else {
    return b == 0 ? T(0) : T(a / b);
  }
}

// The remainder with the sign of the divisor (Python/NumPy). Floats: b == 0 gives fmod(a, 0)
// (NaN); a zero remainder is copysign(0, b). Integers: modulo by zero gives 0.
template <class T>
KILN_FN T kiln_mod(T a, T b) {
  if constexpr (kiln_is_float<T>) {
    T mod = kiln_fmod(a, b);
    if (b == 0) return mod;
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) mod += b;
      return mod;
    }
    return kiln_copysign(T(0), b);
  } else if constexpr (kiln_is_signed<T>) {
    if (b == 0 || b == T(-1)) return T(0);  // INT_MIN % -1 would trap
    T remainder = T(a % b);
    if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder = T(remainder + b);
    return remainder;
  } else {
    return b == 0 ? T(0) : T(a % b);
  }
}

// x ** 3 of floats, as the emitters print a pow by the constant 3 (CLikePrinter::
// elementwise_text), rounded once as pow rounds it. float: in double, where x * x is exact and
// the cube rounds to float almost always as the exact value does. double: the rounding errors
// of x * x and of its product with x, taken by fma, added back before the last rounding; an
// infinite, NaN or zero cube is the product itself (its sign).
KILN_FN float kiln_cube(float x) {
  const double d = x;
  return (float)(d * d * d);
}
KILN_FN double kiln_cube(double x) {
  const double square = x * x, square_error = kiln_fma(x, x, -square);
  const double cube = square * x;
  const double error = kiln_fma(square_error, x, kiln_fma(square, x, -cube));
  return cube - cube == 0 && cube != 0 ? cube + error : cube;
}

// Floats: pow. Integers: exponentiation by squaring, wrapping; a negative exponent gives 0
// except for the bases 1 and -1 (whose powers are exact).
template <class T>
KILN_FN T kiln_pow(T a, T b) {
  if constexpr (kiln_is_float<T>) {
    return kiln_pow_float(a, b);
  } else if constexpr (kiln_is_bool<T>) {
    return a || !b;
  } else {
    typedef typename kiln_unsigned_of<T>::type U;
    if constexpr (kiln_is_signed<T>) {
      if (b < 0) {
        if (a == 1) return T(1);
        if (a == -1) return (b & 1) ? T(-1) : T(1);
        return T(0);
      }
    }
    U base = U(a);
    U exponent = U(b);
    U result = U(1);
    while (exponent != 0) {
      if (exponent & 1) result = U(result * base);
      base = U(base * base);
      exponent = U(exponent >> 1);
    }
    return T(result);
  }
}

// ---- comparisons ---------------------------------------------------------------------------
// maximum/minimum propagate NaN (the first NaN operand is returned); fmax/fmin ignore it, and
// of equal operands return the first, as NumPy's (fmax(-0.0, 0.0) is -0.0; maximum's is 0.0).
template <class T>
KILN_FN T kiln_maximum(T a, T b) {
  if constexpr (kiln_is_float<T>) return kiln_select((a > b) | (a != a), a, b);
  else return kiln_select(a > b, a, b);
}
template <class T>
KILN_FN T kiln_minimum(T a, T b) {
  if constexpr (kiln_is_float<T>) return kiln_select((a < b) | (a != a), a, b);
  else return kiln_select(a < b, a, b);
}
// A scan's running maximum/minimum (cummax, cummin): kiln_maximum's choice made by ?:. In a
// scan's serial chain it compiles to a compare and a blend in vector registers, where
// kiln_select's masks moved the running value to integer registers and back at every step
// (a running maximum of 10M float64s on one core: 66 ms, now 20; NumPy's 55).
template <class T>
KILN_FN T kiln_running_maximum(T acc, T x) {
  if constexpr (kiln_is_float<T>) return (acc > x) | (acc != acc) ? acc : x;
  else return acc > x ? acc : x;
}
template <class T>
KILN_FN T kiln_running_minimum(T acc, T x) {
  if constexpr (kiln_is_float<T>) return (acc < x) | (acc != acc) ? acc : x;
  else return acc < x ? acc : x;
}
template <class T>
KILN_FN T kiln_fmax(T a, T b) {
  if constexpr (kiln_is_float<T>) return kiln_select((a >= b) | (b != b), a, b);
  else return kiln_select(a > b, a, b);
}
template <class T>
KILN_FN T kiln_fmin(T a, T b) {
  if constexpr (kiln_is_float<T>) return kiln_select((a <= b) | (b != b), a, b);
  else return kiln_select(a < b, a, b);
}

// argmax/argmin: true when x replaces the current best acc. Strictly better keeps the first
// occurrence; NaN beats any number (and a later NaN does not replace an earlier one).
template <class T>
KILN_FN bool kiln_argmax_better(T x, T acc) {
  if constexpr (kiln_is_float<T>) return (x > acc) | ((x != x) & (acc == acc));
  else return x > acc;
}
template <class T>
KILN_FN bool kiln_argmin_better(T x, T acc) {
  if constexpr (kiln_is_float<T>) return (x < acc) | ((x != x) & (acc == acc));
  else return x < acc;
}

// ---- shifts (NumPy) ------------------------------------------------------------------------
// A shift count outside [0, bit width) gives 0, except a right shift of a negative value,
// which gives -1 (the sign fill). As in NumPy, a negative count counts as out of range.
// The 8- and 16-bit types shift in int after promotion; T(...) truncates back, as NumPy does.
template <class T>
KILN_FN bool kiln_shift_in_range(T b) {
  if constexpr (kiln_is_signed<T>) {
    if (b < 0) return false;
  }
  return b < T(sizeof(T) * 8);
}
template <class T>
KILN_FN T kiln_shift_left(T a, T b) {
  typedef typename kiln_unsigned_of<T>::type U;
  return kiln_shift_in_range(b) ? T(U(a) << b) : T(0);
}
template <class T>
KILN_FN T kiln_shift_right(T a, T b) {
  if (kiln_shift_in_range(b)) return T(a >> b);
  if constexpr (kiln_is_signed<T>) {
    if (a < 0) return T(-1);
  }
  return T(0);
}

// ---- float16 / bfloat16 (stored as uint16_t, computed in float) ----------------------------
// float16 <-> float32 by integer arithmetic (F. Giesen's branch-free conversions), not by the
// compiler's half-float conversions: without AVX512-FP16, GCC 12 leaves each one scalar, which
// would keep whole float16 loops from vectorising. Results are bit-identical to the hardware
// conversion (round to nearest even), except that a NaN becomes the canonical quiet NaN.
KILN_FN float kiln_f16_to_f32(uint16_t bits) {
  const uint32_t shifted_exponent = 0x7C00u << 13;
  uint32_t magnitude = uint32_t(bits & 0x7FFFu) << 13;
  uint32_t exponent = magnitude & shifted_exponent;
  magnitude += uint32_t(127 - 15) << 23;
  // Inf/NaN: move the exponent up to 255. Zero/subnormal: renormalise through one subtraction.
  float subnormal = kiln_bit_cast(float, magnitude + (1u << 23)) -
                    kiln_bit_cast(float, uint32_t(113) << 23);
  uint32_t result = kiln_select(exponent == shifted_exponent,
                                magnitude + (uint32_t(128 - 16) << 23),
                                kiln_select(exponent == 0u, kiln_bit_cast(uint32_t, subnormal),
                                            magnitude));
  return kiln_bit_cast(float, result | (uint32_t(bits & 0x8000u) << 16));
}
KILN_FN uint16_t kiln_f32_to_f16(float value) {
  const uint32_t float_infinity = 255u << 23;
  const uint32_t half_overflow = uint32_t(127 + 16) << 23;
  const uint32_t denormal_magic = uint32_t((127 - 15) + (23 - 10) + 1) << 23;
  uint32_t bits = kiln_bit_cast(uint32_t, value);
  uint32_t sign = bits & 0x80000000u;
  uint32_t magnitude = bits ^ sign;
  // Subnormal results: adding the magic float lets the FPU round the mantissa (to even).
  uint32_t subnormal =
      kiln_bit_cast(uint32_t, kiln_bit_cast(float, magnitude) +
                                       kiln_bit_cast(float, denormal_magic)) -
      denormal_magic;
  uint32_t mantissa_odd = (magnitude >> 13) & 1u;
  uint32_t normal = (magnitude + (uint32_t(15 - 127) << 23) + 0xFFFu + mantissa_odd) >> 13;
  uint32_t result =
      kiln_select(magnitude >= half_overflow,
                  kiln_select(magnitude > float_infinity, 0x7E00u, 0x7C00u),
                  kiln_select(magnitude < (113u << 23), subnormal, normal));
  return uint16_t(result | (sign >> 16));
}
// Rounds once, straight from double (going through float could round twice).
KILN_FN uint16_t kiln_f64_to_f16(double value) {
  return kiln_math_f64_to_f16_bits(value);
}
KILN_FN float kiln_bf16_to_f32(uint16_t bits) {
  return kiln_bit_cast(float, uint32_t(bits) << 16);
}
// Round to nearest even; NaN stays a (quiet) NaN instead of rounding into infinity.
KILN_FN uint16_t kiln_f32_to_bf16(float value) {
  uint32_t bits = kiln_bit_cast(uint32_t, value);
  uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t(kiln_select(value != value, (bits >> 16) | 0x0040u, (bits + rounding) >> 16));
}
// A float rounded to the nearest float16 / bfloat16, as a float: the conversions' results (all
// 2**32 inputs checked), in 32-bit lanes only (a round trip through uint16_t made fused float16
// loops 10x slower).
KILN_FN float kiln_round_f16(float value) {
  uint32_t bits = kiln_bit_cast(uint32_t, value);
  uint32_t magnitude = bits & 0x7FFFFFFFu;
  // float16's normal range: 10 mantissa bits, to nearest even; below 2**-14: multiples of 2**-24
  float normal = kiln_bit_cast(float, (bits + 0xFFFu + ((bits >> 13) & 1u)) & ~0x1FFFu);
  float subnormal = kiln_math_rint(value * 0x1p24f) * 0x1p-24f;
  float infinity = kiln_bit_cast(float, (bits & 0x80000000u) | 0x7F800000u);  // from 65520 up
  return kiln_select(value != value, value,
                     kiln_select(magnitude >= 0x477FF000u, infinity,
                                 kiln_select(magnitude < 0x38800000u, subnormal, normal)));
}
KILN_FN float kiln_round_bf16(float value) {
  uint32_t bits = kiln_bit_cast(uint32_t, value);
  float rounded = kiln_bit_cast(float, (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u);
  return kiln_select(value != value, value, rounded);
}

// ---- casts ----------------------------------------------------------------------------------
// Float to integer as NumPy gives it on x86-64 (C leaves NaN, inf and out-of-range values
// undefined): int32/int64 conversion yields INT_MIN where the value does not fit, narrower
// types truncate the int32 (300.7 -> int8 44), unsigned 32/64-bit ones subtract 2**31 / 2**63
// first at or above it. Selects, never an out-of-range C conversion. To bool: `value != 0`.
template <int Bytes> struct kiln_signed_of;
template <> struct kiln_signed_of<4> { using type = int32_t; };
template <> struct kiln_signed_of<8> { using type = int64_t; };
// cvttsd2si to Int (int32_t or int64_t): INT_MIN ("integer indefinite") when it does not fit.
template <class Int, class From>
KILN_FN Int kiln_truncate(From value) {
  const From limit = From(sizeof(Int) == 4 ? 2147483648.0 : 9223372036854775808.0);
  bool fits = value >= -limit && value < limit;
  return kiln_select(fits, Int(kiln_select(fits, value, From(0))), Int(Int(1) << (8 * sizeof(Int) - 1)));
}
template <class To, class From>
KILN_FN To kiln_float_to_int(From value) {
  if constexpr (kiln_is_bool<To>) {
    return value != 0;
  } else if constexpr (sizeof(To) < 4) {  // the int32 result, truncated (modular since C++20)
    return To(kiln_truncate<int32_t>(value));
  } else if constexpr (To(-1) < To(0)) {  // int32, int64
    return kiln_truncate<To>(value);
  } else {  // uint32, uint64: values at or above 2**(bits-1) are shifted down first
    using Signed = typename kiln_signed_of<sizeof(To)>::type;
    const From half = From(sizeof(To) == 4 ? 2147483648.0 : 9223372036854775808.0);
    To low = To(kiln_truncate<Signed>(value));
    To high = To(kiln_truncate<Signed>(From(value - half))) ^ (To(1) << (8 * sizeof(To) - 1));
    return kiln_select(value >= half, high, low);
  }
}
// NumPy converts float16 to uint32 in its scalar loop, through int64 (float32 and float64 go
// through its vector loops, as kiln_float_to_int does).
KILN_FN uint32_t kiln_half_to_uint32(float value) { return uint32_t(kiln_truncate<int64_t>(value)); }

// ---- blocked summation (codegen/cpp/reduce_emitter.cpp) --------------------------------------
// A binary counter of partials: level k combines 2**k blocks, so a value takes part in at most
// log2(blocks) combinations (pairwise). Sums add; Welford states merge (see kiln_welford).
template <class T>
KILN_FN T kiln_cascade_combine(T a, T b) {
  return T(kiln_add(a, b));
}
template <class T>
KILN_FN void kiln_cascade_push(T* levels, uint64_t& count, T value) {
  int level = 0;
  for (uint64_t carry = count; carry & 1; carry >>= 1, ++level) {
    value = kiln_cascade_combine(levels[level], value);
    levels[level] = T{};
  }
  levels[level] = value;
  ++count;
}
template <class T>
KILN_FN T kiln_cascade_total(const T* levels) {
  T total{};
  for (int level = 0; level < 64; ++level) total = kiln_cascade_combine(total, levels[level]);
  return total;
}
// The combination of `count` (a power of two) SIMD lanes, pairwise; the lanes are overwritten.
template <class T>
KILN_FN T kiln_lanes_total(T* lanes, int count) {
  for (int width = count / 2; width > 0; width /= 2)
    for (int lane = 0; lane < width; ++lane)
      lanes[lane] = kiln_cascade_combine(lanes[lane], lanes[lane + width]);
  return lanes[0];
}

// ---- Welford (var) -------------------------------------------------------------------------
// Running (count, mean, m2); each function returns the new state so that reductions can be
// written as `w = kiln_welford_add(w, x)` in vectorised loops.
template <class T>
struct kiln_welford {
  T count;
  T mean;
  T m2;
};
template <class T, class X>
KILN_FN kiln_welford<T> kiln_welford_add(kiln_welford<T> w, X x) {
  T value = T(x);
  w.count += T(1);
  T delta = value - w.mean;
  w.mean += delta / w.count;
  w.m2 += delta * (value - w.mean);
  return w;
}
// Chan et al.'s pairwise combination of two partial results, with one division (a GPU's last
// block merges a split reduction's parts in a chain of these, each division tens of cycles).
template <class T>
KILN_FN kiln_welford<T> kiln_welford_merge(kiln_welford<T> a, kiln_welford<T> b) {
  if (b.count == 0) return a;
  if (a.count == 0) return b;
  T count = a.count + b.count;
  T delta = b.mean - a.mean;
  T share = b.count / count;
  kiln_welford<T> result;
  result.count = count;
  result.mean = a.mean + delta * share;
  result.m2 = a.m2 + b.m2 + delta * delta * (a.count * share);
  return result;
}
template <class T>
KILN_FN kiln_welford<T> kiln_cascade_combine(kiln_welford<T> a, kiln_welford<T> b) {
  return kiln_welford_merge(a, b);
}
// A state of another float type merged in: a double total takes float SIMD lanes' states (the
// C++ emitter keeps a reduction's running states in double, its pairwise-merged lanes in float).
template <class T, class U>
KILN_FN kiln_welford<T> kiln_welford_merge(kiln_welford<T> a, kiln_welford<U> b) {
  return kiln_welford_merge(a, kiln_welford<T>{T(b.count), T(b.mean), T(b.m2)});
}
template <class T, class U>
KILN_FN kiln_welford<T> kiln_cascade_combine(kiln_welford<T> a, kiln_welford<U> b) {
  return kiln_welford_merge(a, b);
}
// m2 / max(count - ddof, 0), as NumPy and torch divide: with no degrees of freedom left, inf
// where the values differ and NaN where they are all equal (0 / 0), never NaN for both.
template <class T>
KILN_FN T kiln_welford_variance(kiln_welford<T> w, long long ddof) {
  T divisor = w.count - T(ddof);
  return w.m2 / kiln_select(divisor < 0, T(0), divisor);
}

#endif  // KILN_SCALAR_MATH_H
