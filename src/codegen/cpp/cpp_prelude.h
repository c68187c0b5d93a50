// The C++ target's prelude: what generated C++ (and the interpreter, built by the same kind of
// compiler) needs before the target-neutral semantics of src/ir/scalar_math.h. Hence:
// - no #include at all: generated code must need nothing but the compiler, and compile fast;
// - the standard fixed-width integer names, as dtype_storage_ctype() spells them (redeclaring
//   a typedef to the same type is legal C++, so this also compiles after <cstdint>);
// - the glibc math functions declared under `omp declare simd`, so that with -fopenmp-simd and
//   -lmvec vectorised loops call libmvec's variants (_ZGVeN16v_sinf ...); code built without
//   OpenMP (the interpreter) defines KILN_SCALAR_MATH_NO_SIMD and gets plain declarations that
//   match glibc's;
// - compiler builtins that vectorise to single instructions, behind kiln_ names.
#ifndef KILN_CPP_PRELUDE_H
#define KILN_CPP_PRELUDE_H

typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;

#define KILN_RESTRICT __restrict__
// The qualifiers of every function in scalar_math.h and the op table (CUDA adds __device__).
#define KILN_FN inline

// ---- glibc math, vectorisable through libmvec ----------------------------------------------
// Without -fopenmp(-simd) the pragmas are ignored (with a -Wunknown-pragmas warning, which GCC
// will not let a diagnostic pragma silence): code built without OpenMP, like the interpreter,
// defines KILN_SCALAR_MATH_NO_SIMD to leave them out.
#ifdef KILN_SCALAR_MATH_NO_SIMD
#define KILN_DECLARE_SIMD
#else
#define KILN_DECLARE_SIMD _Pragma("omp declare simd notinbranch")
#endif
#define KILN_DECLARE_UNARY_MATH(name)                        \
  KILN_DECLARE_SIMD                                          \
  extern "C" double name(double) noexcept;                   \
  KILN_DECLARE_SIMD                                          \
  extern "C" float name##f(float) noexcept;                  \
  inline double kiln_##name(double a) { return name(a); }    \
  inline float kiln_##name(float a) { return name##f(a); }

#define KILN_DECLARE_BINARY_MATH(name)                                          \
  KILN_DECLARE_SIMD                                                             \
  extern "C" double name(double, double) noexcept;                              \
  KILN_DECLARE_SIMD                                                             \
  extern "C" float name##f(float, float) noexcept;                              \
  inline double kiln_##name##_float(double a, double b) { return name(a, b); }  \
  inline float kiln_##name##_float(float a, float b) { return name##f(a, b); }

// float32 exp is kiln's own (below): libmvec's takes a scalar slow path for every lane out of
// its range, and masked softmaxes are full of such lanes (-inf, or finfo.min: 6.5x and 18x
// slower than in range, 1M floats).
KILN_DECLARE_SIMD
extern "C" double exp(double) noexcept;
inline double kiln_exp(double a) { return exp(a); }
// exp(x) = 2^k exp(r), k = rint(x / ln 2) (by the 1.5 * 2^23 shifter, whose low bits then hold
// k), |r| <= ln 2 / 2 (Cody and Waite's two-part ln 2), exp(r) by its degree-7 Taylor polynomial
// (truncation 5e-9), 2^k as 2^(k/2) 2^(k - k/2) so that a subnormal result is rounded once.
// Branch-free: it vectorises in any SIMD loop, 1.2x libmvec's time in range and 6-17x faster
// with masked lanes. Within 1 ulp of the correctly rounded exp on every float tried
// (tests/cpp/test_scalar_math.cpp); below -104 it is 0 without computing a subnormal, NaN
// flows through the arithmetic, and the exponent bits are unsigned arithmetic (no overflow).
inline float kiln_exp(float x) {
  const bool zero = x < -104.0f;
  const float low = zero ? 0.0f : x;
  const float clamped = low > 89.0f ? 89.0f : low;  // overflows to inf all the same
  const float shifted = __builtin_fmaf(clamped, 1.44269504088896341f, 12582912.0f);
  const float k = shifted - 12582912.0f;
  float r = __builtin_fmaf(k, -0.693145751953125f, clamped);
  r = __builtin_fmaf(k, -1.428606765330187045e-6f, r);
  float p = 1.0f / 5040;
  p = __builtin_fmaf(p, r, 1.0f / 720);
  p = __builtin_fmaf(p, r, 1.0f / 120);
  p = __builtin_fmaf(p, r, 1.0f / 24);
  p = __builtin_fmaf(p, r, 1.0f / 6);
  p = __builtin_fmaf(p, r, 0.5f);
  p = __builtin_fmaf(p, r, 1.0f);
  p = __builtin_fmaf(p, r, 1.0f);
  const uint32_t n = __builtin_bit_cast(uint32_t, shifted) - 0x4B400000u;  // k
  const uint32_t half = static_cast<uint32_t>(static_cast<int32_t>(n) >> 1);
  const float scaled = p * __builtin_bit_cast(float, (half + 127u) << 23) *
                       __builtin_bit_cast(float, (n - half + 127u) << 23);
  return zero ? 0.0f : scaled;
}
KILN_DECLARE_UNARY_MATH(exp2)
KILN_DECLARE_UNARY_MATH(expm1)
// Declared only: their kiln_ functions are below.
#define KILN_DECLARE_GLIBC_MATH(name)       \
  KILN_DECLARE_SIMD                         \
  extern "C" double name(double) noexcept;  \
  KILN_DECLARE_SIMD                         \
  extern "C" float name##f(float) noexcept;
KILN_DECLARE_GLIBC_MATH(log)
KILN_DECLARE_GLIBC_MATH(log2)
KILN_DECLARE_GLIBC_MATH(log10)
KILN_DECLARE_GLIBC_MATH(log1p)
#undef KILN_DECLARE_GLIBC_MATH
// libmvec takes a scalar slow path for every lane outside the range its polynomials cover:
// with half the lanes 0 (a masked entropy's log), a logarithm of 64K floats took 6.7x its time
// in range, float64s 4.8x. Such lanes' values need no computation: the logarithm runs on a
// stand-in there (1, or -1 + ulp) and their values are set after; the other lanes' results are
// the function's own (in the interpreter too). The stand-ins are chosen with integer max/min
// and masks on the bits: given a `?:` or a float max, GCC calls the function on x itself where
// the result is not used, or calls it once per branch. Cost in range: +26-29% of the call
// cache-resident, 0-30% on 4M elements.
template <class Float, class Int>
inline Float kiln_positive_or_one_bits(Float x) {  // x > 0 (and +inf, +NaN) as is, else 1
  const Int bits = __builtin_bit_cast(Int, x);
  const Int held = bits > 0 ? bits : 0;  // negatives (sign bit set) and -0: +0
  const Int zero = (held - 1) >> (8 * sizeof(Int) - 1);  // all ones where held is +0
  return __builtin_bit_cast(Float, Int(held | (zero & __builtin_bit_cast(Int, Float(1)))));
}
template <class Float, class Unsigned>
inline Float kiln_above_minus_one_bits(Float x) {  // x > -1 (and +inf, +NaN) as is, else -1 + ulp
  const Unsigned bits = __builtin_bit_cast(Unsigned, x);
  const Unsigned edge = __builtin_bit_cast(Unsigned, Float(-1)) - 1;
  return __builtin_bit_cast(Float, bits < edge ? bits : edge);  // negatives count up from -0
}
inline double kiln_positive_or_one(double x) { return kiln_positive_or_one_bits<double, int64_t>(x); }
inline float kiln_positive_or_one(float x) { return kiln_positive_or_one_bits<float, int32_t>(x); }
inline double kiln_above_minus_one(double x) { return kiln_above_minus_one_bits<double, uint64_t>(x); }
inline float kiln_above_minus_one(float x) { return kiln_above_minus_one_bits<float, uint32_t>(x); }
// A logarithm of a domain (low, inf): -inf at low, NaN below it and at NaN (x - x is NaN
// there, times inf: a negative's default NaN, as glibc returns, a NaN's own).
#define KILN_LOGARITHM(name, low, stand_in)                                           \
  inline double kiln_##name(double x) {                                               \
    const double y = name(stand_in(x));                                               \
    return x > low ? y : x == low ? -__builtin_inf() : (x - x) * __builtin_inf();     \
  }                                                                                   \
  inline float kiln_##name(float x) {                                                 \
    const float y = name##f(stand_in(x));                                             \
    return x > low ? y : x == low ? -__builtin_inff() : (x - x) * __builtin_inff();   \
  }
KILN_LOGARITHM(log, 0, kiln_positive_or_one)
KILN_LOGARITHM(log2, 0, kiln_positive_or_one)
KILN_LOGARITHM(log10, 0, kiln_positive_or_one)
KILN_LOGARITHM(log1p, -1, kiln_above_minus_one)
#undef KILN_LOGARITHM
KILN_DECLARE_UNARY_MATH(cbrt)
KILN_DECLARE_UNARY_MATH(sin)
KILN_DECLARE_UNARY_MATH(cos)
KILN_DECLARE_UNARY_MATH(tan)
KILN_DECLARE_UNARY_MATH(asin)
KILN_DECLARE_UNARY_MATH(acos)
KILN_DECLARE_UNARY_MATH(atan)
KILN_DECLARE_UNARY_MATH(sinh)
KILN_DECLARE_UNARY_MATH(cosh)
KILN_DECLARE_UNARY_MATH(tanh)
KILN_DECLARE_UNARY_MATH(asinh)
KILN_DECLARE_UNARY_MATH(acosh)
KILN_DECLARE_UNARY_MATH(atanh)
KILN_DECLARE_UNARY_MATH(erf)
KILN_DECLARE_UNARY_MATH(erfc)
KILN_DECLARE_BINARY_MATH(pow)
KILN_DECLARE_BINARY_MATH(atan2)
KILN_DECLARE_BINARY_MATH(hypot)

#undef KILN_DECLARE_UNARY_MATH
#undef KILN_DECLARE_BINARY_MATH
#undef KILN_DECLARE_SIMD

// The compiler builtins below need no header and vectorise to single instructions.
inline double kiln_fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
inline double kiln_sqrt(double a) { return __builtin_sqrt(a); }
inline float kiln_sqrt(float a) { return __builtin_sqrtf(a); }
inline double kiln_atan2(double a, double b) { return kiln_atan2_float(a, b); }
inline float kiln_atan2(float a, float b) { return kiln_atan2_float(a, b); }
inline double kiln_hypot(double a, double b) { return kiln_hypot_float(a, b); }
inline float kiln_hypot(float a, float b) { return kiln_hypot_float(a, b); }
inline double kiln_copysign(double a, double b) { return __builtin_copysign(a, b); }
inline float kiln_copysign(float a, float b) { return __builtin_copysignf(a, b); }
inline double kiln_fmod(double a, double b) { return __builtin_fmod(a, b); }
inline float kiln_fmod(float a, float b) { return __builtin_fmodf(a, b); }

// A constant array as a pointer the compiler cannot see through: kernels read their constant
// arrays by it (codegen/cpp/kernel_emitter.h, KernelEmitter::constant_name).
template <class T>
inline const T* kiln_opaque(const T* p) {
  __asm__("" : "+r"(p));
  return p;
}

// ---- primitives the semantics are written with ------------------------------------------
#define kiln_bit_cast(To, value) __builtin_bit_cast(To, value)
constexpr double kiln_infinity() { return __builtin_inf(); }
constexpr double kiln_quiet_nan() { return __builtin_nan(""); }
inline double kiln_math_fabs(double a) { return __builtin_fabs(a); }
inline float kiln_math_fabs(float a) { return __builtin_fabsf(a); }
inline double kiln_math_floor(double a) { return __builtin_floor(a); }
inline float kiln_math_floor(float a) { return __builtin_floorf(a); }
inline double kiln_math_ceil(double a) { return __builtin_ceil(a); }
inline float kiln_math_ceil(float a) { return __builtin_ceilf(a); }
inline double kiln_math_trunc(double a) { return __builtin_trunc(a); }
inline float kiln_math_trunc(float a) { return __builtin_truncf(a); }
// rint rounds half to even in the default rounding mode, which kiln never changes.
inline double kiln_math_rint(double a) { return __builtin_rint(a); }
inline float kiln_math_rint(float a) { return __builtin_rintf(a); }
// float64 -> float16 bits, rounded once (the hardware conversion).
inline uint16_t kiln_math_f64_to_f16_bits(double value) {
  return __builtin_bit_cast(uint16_t, static_cast<_Float16>(value));
}

#endif  // KILN_CPP_PRELUDE_H
