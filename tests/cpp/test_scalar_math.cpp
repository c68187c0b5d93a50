// The scalar semantics shared by the interpreter and generated code (src/ir/scalar_math.h),
// checked against values worked out by hand from Python/NumPy's definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#define KILN_SCALAR_MATH_NO_SIMD
// The host C++ compiler builds this: the C++ prelude supplies the semantics' primitives.
#include "codegen/cpp/cpp_prelude.h"
#include "ir/scalar_math.h"
#include "ir/scalar_random.h"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ScalarMath, IntegerFloordivRoundsTowardMinusInfinity) {
  EXPECT_EQ(kiln_floordiv<int32_t>(-7, 2), -4);
  EXPECT_EQ(kiln_floordiv<int32_t>(7, -2), -4);
  EXPECT_EQ(kiln_floordiv<int32_t>(-7, -2), 3);
  EXPECT_EQ(kiln_floordiv<int32_t>(7, 2), 3);
  EXPECT_EQ(kiln_floordiv<int32_t>(-6, 2), -3);
  EXPECT_EQ(kiln_floordiv<uint32_t>(7u, 2u), 3u);
}

TEST(ScalarMath, IntegerModTakesTheDivisorsSign) {
  EXPECT_EQ(kiln_mod<int32_t>(-7, 2), 1);
  EXPECT_EQ(kiln_mod<int32_t>(7, -2), -1);
  EXPECT_EQ(kiln_mod<int32_t>(-7, -2), -1);
  EXPECT_EQ(kiln_mod<int32_t>(7, 2), 1);
  EXPECT_EQ(kiln_mod<int8_t>(-128, 3), 1);  // -128 = 3 * -43 + 1
  EXPECT_EQ(kiln_mod<uint8_t>(200, 7), 4);
}

TEST(ScalarMath, IntegerDivisionByZeroAndOverflowNeverTrap) {
  EXPECT_EQ(kiln_floordiv<int32_t>(7, 0), 0);
  EXPECT_EQ(kiln_mod<int32_t>(7, 0), 0);
  EXPECT_EQ(kiln_floordiv<uint64_t>(7, 0), 0u);
  EXPECT_EQ(kiln_mod<uint64_t>(7, 0), 0u);
  const int32_t int_min = std::numeric_limits<int32_t>::min();
  const int64_t long_min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(kiln_floordiv<int32_t>(int_min, -1), int_min);  // wraps
  EXPECT_EQ(kiln_mod<int32_t>(int_min, -1), 0);
  EXPECT_EQ(kiln_floordiv<int64_t>(long_min, -1), long_min);
  EXPECT_EQ(kiln_floordiv<int8_t>(-128, -1), -128);
}

TEST(ScalarMath, FloatFloordivAndModFollowNumpy) {
  EXPECT_EQ(kiln_mod(-7.5, 2.0), 0.5);
  EXPECT_EQ(kiln_mod(7.5, -2.0), -0.5);
  EXPECT_EQ(kiln_floordiv(-7.5, 2.0), -4.0);
  EXPECT_EQ(kiln_floordiv(7.5, -2.0), -4.0);
  EXPECT_EQ(kiln_mod(-7.5f, 2.0f), 0.5f);
  // The classic: 1 // 0.1 is 9 and 1 % 0.1 is 0.1 - 5.55e-17 (0.1 is slightly above 1/10).
  EXPECT_EQ(kiln_floordiv(1.0, 0.1), 9.0);
  EXPECT_DOUBLE_EQ(kiln_mod(1.0, 0.1), 0.09999999999999995);
  // A zero remainder takes the divisor's sign.
  EXPECT_EQ(kiln_mod(6.0, 3.0), 0.0);
  EXPECT_FALSE(std::signbit(kiln_mod(-6.0, 3.0)));
  EXPECT_TRUE(std::signbit(kiln_mod(6.0, -3.0)));
  EXPECT_TRUE(std::signbit(kiln_floordiv(-0.0, 3.0)));
}

TEST(ScalarMath, FloatDivisionByZero) {
  EXPECT_EQ(kiln_floordiv(7.0, 0.0), kInf);
  EXPECT_EQ(kiln_floordiv(-7.0, 0.0), -kInf);
  EXPECT_TRUE(std::isnan(kiln_floordiv(0.0, 0.0)));
  EXPECT_TRUE(std::isnan(kiln_mod(7.0, 0.0)));
  EXPECT_TRUE(std::isnan(kiln_floordiv(kInf, 2.0)));
  EXPECT_TRUE(std::isnan(kiln_mod(kNaN, 2.0)));
}

TEST(ScalarMath, RoundHalfToEven) {
  EXPECT_EQ(kiln_round_half_even(0.5), 0.0);
  EXPECT_EQ(kiln_round_half_even(1.5), 2.0);
  EXPECT_EQ(kiln_round_half_even(2.5), 2.0);
  EXPECT_EQ(kiln_round_half_even(-2.5f), -2.0f);
  EXPECT_EQ(kiln_round_half_even(2.6f), 3.0f);
  EXPECT_TRUE(std::signbit(kiln_round_half_even(-0.5)));
  EXPECT_EQ(kiln_round_half_even<int32_t>(7), 7);
  EXPECT_EQ(kiln_floor(-1.5), -2.0);
  EXPECT_EQ(kiln_ceil(-1.5f), -1.0f);
  EXPECT_EQ(kiln_trunc(-1.5), -1.0);
  EXPECT_EQ(kiln_floor<int64_t>(-3), -3);
}

TEST(ScalarMath, MaximumPropagatesNaNAndFmaxIgnoresIt) {
  EXPECT_TRUE(std::isnan(kiln_maximum(kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(kiln_maximum(1.0, kNaN)));
  EXPECT_TRUE(std::isnan(kiln_minimum(1.0f, std::nanf(""))));
  EXPECT_EQ(kiln_fmax(kNaN, 1.0), 1.0);
  EXPECT_EQ(kiln_fmax(1.0, kNaN), 1.0);
  EXPECT_EQ(kiln_fmin(kNaN, -1.0), -1.0);
  EXPECT_TRUE(std::isnan(kiln_fmax(kNaN, kNaN)));
  // of equal operands the first, as NumPy's (fmax(-0.0, 0.0) is -0.0)
  EXPECT_TRUE(std::signbit(kiln_fmax(-0.0, 0.0)));
  EXPECT_FALSE(std::signbit(kiln_fmax(0.0, -0.0)));
  EXPECT_TRUE(std::signbit(kiln_fmin(-0.0, 0.0)));
  EXPECT_FALSE(std::signbit(kiln_fmin(0.0, -0.0)));
  EXPECT_EQ(kiln_maximum<int8_t>(-3, 2), 2);
  EXPECT_EQ(kiln_minimum<uint8_t>(200, 3), 3);
  EXPECT_EQ(kiln_maximum(true, false), true);
}

TEST(ScalarMath, ArgBestKeepsFirstOccurrenceAndNaNWins) {
  EXPECT_TRUE(kiln_argmax_better(3.0, 2.0));
  EXPECT_FALSE(kiln_argmax_better(2.0, 2.0));
  EXPECT_TRUE(kiln_argmax_better(kNaN, 2.0));
  EXPECT_FALSE(kiln_argmax_better(2.0, kNaN));
  EXPECT_FALSE(kiln_argmax_better(kNaN, kNaN));
  EXPECT_TRUE(kiln_argmin_better(kNaN, -kInf));
  EXPECT_TRUE(kiln_argmin_better<int32_t>(-5, 3));
  EXPECT_FALSE(kiln_argmin_better<int32_t>(3, 3));
}

TEST(ScalarMath, SignAbsAndBitwiseNot) {
  EXPECT_TRUE(std::isnan(kiln_sign(kNaN)));
  EXPECT_EQ(kiln_sign(-3.5), -1.0);
  EXPECT_EQ(kiln_sign(0.0), 0.0);
  EXPECT_FALSE(std::signbit(kiln_sign(-0.0)));
  EXPECT_EQ(kiln_sign<int32_t>(-9), -1);
  EXPECT_EQ(kiln_sign<uint32_t>(9u), 1u);
  EXPECT_EQ(kiln_abs<int8_t>(-128), -128);  // wraps, as NumPy
  EXPECT_EQ(kiln_abs(-2.5f), 2.5f);
  EXPECT_EQ(kiln_bitwise_not(true), false);
  EXPECT_EQ(kiln_bitwise_not<int8_t>(0), -1);
  EXPECT_EQ(kiln_bitwise_not<uint8_t>(0), 255);
}

TEST(ScalarMath, ShiftsPastTheWidth) {
  EXPECT_EQ(kiln_shift_left<int32_t>(1, 3), 8);
  EXPECT_EQ(kiln_shift_left<int32_t>(1, 32), 0);
  EXPECT_EQ(kiln_shift_left<int32_t>(1, -1), 0);
  EXPECT_EQ(kiln_shift_left<int8_t>(64, 1), -128);
  EXPECT_EQ(kiln_shift_left<int8_t>(1, 8), 0);
  EXPECT_EQ(kiln_shift_left<uint8_t>(255, 1), 254);
  EXPECT_EQ(kiln_shift_right<int64_t>(-8, 1), -4);
  EXPECT_EQ(kiln_shift_right<int64_t>(-8, 64), -1);
  EXPECT_EQ(kiln_shift_right<int64_t>(8, 64), 0);
  EXPECT_EQ(kiln_shift_right<int16_t>(-1, 100), -1);
  EXPECT_EQ(kiln_shift_right<uint16_t>(0x8000, 15), 1);
  EXPECT_EQ(kiln_shift_right<uint16_t>(0x8000, 16), 0);
}

TEST(ScalarMath, IntegerPowerBySquaring) {
  EXPECT_EQ(kiln_pow<int32_t>(2, 10), 1024);
  EXPECT_EQ(kiln_pow<int32_t>(3, 0), 1);
  EXPECT_EQ(kiln_pow<int32_t>(0, 0), 1);
  EXPECT_EQ(kiln_pow<int32_t>(-3, 3), -27);
  EXPECT_EQ(kiln_pow<int32_t>(2, -1), 0);
  EXPECT_EQ(kiln_pow<int32_t>(1, -5), 1);
  EXPECT_EQ(kiln_pow<int32_t>(-1, -3), -1);
  EXPECT_EQ(kiln_pow<int32_t>(-1, -2), 1);
  EXPECT_EQ(kiln_pow<int8_t>(2, 7), -128);  // wraps
  EXPECT_EQ(kiln_pow<uint64_t>(3, 40), 12157665459056928801ull);
  EXPECT_DOUBLE_EQ(kiln_pow(2.0, 0.5), std::sqrt(2.0));
  EXPECT_FLOAT_EQ(kiln_pow(2.0f, 3.0f), 8.0f);
}

TEST(ScalarMath, LimitsAndIdentities) {
  EXPECT_EQ(kiln_lowest<int8_t>(), -128);
  EXPECT_EQ(kiln_highest<int8_t>(), 127);
  EXPECT_EQ(kiln_lowest<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(kiln_highest<uint16_t>(), 65535);
  EXPECT_EQ(kiln_lowest<uint32_t>(), 0u);
  EXPECT_EQ(kiln_lowest<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(kiln_highest<double>(), kInf);
  EXPECT_EQ(kiln_lowest<bool>(), false);
  EXPECT_EQ(kiln_highest<bool>(), true);
  EXPECT_EQ(kiln_zero<int16_t>(), 0);
  EXPECT_EQ(kiln_one<double>(), 1.0);
  EXPECT_TRUE(kiln_is_float<float>);
  EXPECT_FALSE(kiln_is_float<int32_t>);
}

// NumPy's float -> int casts on x86-64 (the values NumPy 2.4 gives on this machine).
TEST(ScalarMath, FloatToIntFollowsNumPyOnX86) {
  const int32_t int32_indefinite = std::numeric_limits<int32_t>::min();
  const int64_t int64_indefinite = std::numeric_limits<int64_t>::min();
  EXPECT_EQ((kiln_float_to_int<int32_t>(kNaN)), int32_indefinite);
  EXPECT_EQ((kiln_float_to_int<int32_t>(kInf)), int32_indefinite);
  EXPECT_EQ((kiln_float_to_int<int32_t>(-kInf)), int32_indefinite);
  EXPECT_EQ((kiln_float_to_int<int32_t>(3e9)), int32_indefinite);
  EXPECT_EQ((kiln_float_to_int<int32_t>(-2.9)), -2);
  EXPECT_EQ((kiln_float_to_int<int8_t>(300.7)), 44);
  EXPECT_EQ((kiln_float_to_int<int8_t>(-300.7f)), -44);
  EXPECT_EQ((kiln_float_to_int<int16_t>(70000.5)), 4464);
  EXPECT_EQ((kiln_float_to_int<uint8_t>(300.7f)), 44);
  EXPECT_EQ((kiln_float_to_int<uint8_t>(-1.5)), 255);
  EXPECT_EQ((kiln_float_to_int<uint8_t>(kNaN)), 0);
  EXPECT_EQ((kiln_float_to_int<uint16_t>(-300.7)), 65236);
  EXPECT_EQ((kiln_float_to_int<uint32_t>(kNaN)), 2147483648u);
  EXPECT_EQ((kiln_float_to_int<uint32_t>(kInf)), 0u);
  EXPECT_EQ((kiln_float_to_int<uint32_t>(3e9)), 3000000000u);
  EXPECT_EQ((kiln_float_to_int<uint32_t>(-1.5)), 4294967295u);
  EXPECT_EQ((kiln_float_to_int<int64_t>(9.3e18)), int64_indefinite);
  EXPECT_EQ((kiln_float_to_int<int64_t>(-9.3e18)), int64_indefinite);
  EXPECT_EQ((kiln_float_to_int<int64_t>(kNaN)), int64_indefinite);
  EXPECT_EQ((kiln_float_to_int<uint64_t>(1.8e19)), 18000000000000000000ull);
  EXPECT_EQ((kiln_float_to_int<uint64_t>(kNaN)), 9223372036854775808ull);
  EXPECT_EQ((kiln_float_to_int<uint64_t>(kInf)), 0ull);
  EXPECT_EQ((kiln_float_to_int<uint64_t>(-1.5)), 18446744073709551615ull);
  EXPECT_EQ((kiln_float_to_int<bool>(kNaN)), true);
}

TEST(ScalarMath, Float16Conversions) {
  EXPECT_EQ(kiln_f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(kiln_f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(kiln_f32_to_f16(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(kiln_f32_to_f16(65520.0f), 0x7C00);  // rounds to inf
  EXPECT_EQ(kiln_f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(kiln_f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(kiln_f32_to_f16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(kiln_f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie to even
  EXPECT_EQ(kiln_f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(kiln_f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(kiln_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(kiln_f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(kiln_f16_to_f32(kiln_f32_to_f16(std::nanf("")))));
  // Straight from double rounds once: through float, the 2^-40 would be lost and the tie
  // would round down to 1.0.
  EXPECT_EQ(kiln_f64_to_f16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3C01);
  // Every non-NaN float16 survives the round trip through float32.
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    bool is_nan = (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0;
    if (!is_nan && kiln_f32_to_f16(kiln_f16_to_f32(uint16_t(bits))) != bits) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ScalarMath, BFloat16Conversions) {
  EXPECT_EQ(kiln_f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(kiln_bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(kiln_f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie to even
  EXPECT_EQ(kiln_f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie to even
  EXPECT_EQ(kiln_f32_to_bf16(1.0f + 5 * std::ldexp(1.0f, -10)), 0x3F81);
  EXPECT_EQ(kiln_f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  // A NaN whose payload sits only in the low bits must stay NaN, not round to inf.
  float low_payload_nan = __builtin_bit_cast(float, 0x7F800001u);
  EXPECT_TRUE(std::isnan(kiln_bf16_to_f32(kiln_f32_to_bf16(low_payload_nan))));
  EXPECT_EQ(kiln_bf16_to_f32(kiln_f32_to_bf16(3.140625f)), 3.140625f);
}

TEST(ScalarMath, WelfordMatchesTheTwoPassVariance) {
  const double values[] = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, sum of squares about it 32
  kiln_welford<double> all = {0, 0, 0}, left = {0, 0, 0}, right = {0, 0, 0};
  for (int i = 0; i < 8; ++i) {
    all = kiln_welford_add(all, values[i]);
    if (i < 3) left = kiln_welford_add(left, values[i]);
    else right = kiln_welford_add(right, values[i]);
  }
  EXPECT_DOUBLE_EQ(all.mean, 5.0);
  EXPECT_DOUBLE_EQ(kiln_welford_variance(all, 0), 4.0);
  EXPECT_DOUBLE_EQ(kiln_welford_variance(all, 1), 32.0 / 7.0);
  kiln_welford<double> merged = kiln_welford_merge(left, right);
  EXPECT_DOUBLE_EQ(merged.count, 8.0);
  EXPECT_DOUBLE_EQ(kiln_welford_variance(merged, 1), 32.0 / 7.0);
  kiln_welford<double> empty = {0, 0, 0};
  EXPECT_DOUBLE_EQ(kiln_welford_variance(kiln_welford_merge(empty, all), 0), 4.0);
  kiln_welford<double> one = kiln_welford_add(empty, 3.0);
  EXPECT_TRUE(std::isnan(kiln_welford_variance(one, 1)));
  EXPECT_EQ(kiln_welford_variance(one, 0), 0.0);
}

TEST(ScalarMath, PhiloxMatchesRandom123KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  kiln_uint32x4 zero = kiln_philox4x32_10({0, 0, 0, 0}, 0, 0);
  EXPECT_EQ(zero.x0, 0x6627e8d5u);
  EXPECT_EQ(zero.x1, 0xe169c58du);
  EXPECT_EQ(zero.x2, 0xbc57ac4cu);
  EXPECT_EQ(zero.x3, 0x9b00dbd8u);
  kiln_uint32x4 ones =
      kiln_philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu,
                         0xffffffffu);
  EXPECT_EQ(ones.x0, 0x408f276du);
  EXPECT_EQ(ones.x1, 0x41c83b0eu);
  EXPECT_EQ(ones.x2, 0xa20bc7c6u);
  EXPECT_EQ(ones.x3, 0x6d5451fdu);
  kiln_uint32x4 pi = kiln_philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                        0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.x0, 0xd16cfe09u);
  EXPECT_EQ(pi.x1, 0x94fdccebu);
  EXPECT_EQ(pi.x2, 0x5001e420u);
  EXPECT_EQ(pi.x3, 0x24126ea1u);
}

TEST(ScalarMath, PhiloxUniformAndNormalAreDeterministicAndInRange) {
  EXPECT_EQ(kiln_philox_uniform_f64(42, 7), kiln_philox_uniform_f64(42, 7));
  EXPECT_NE(kiln_philox_uniform_f64(42, 7), kiln_philox_uniform_f64(43, 7));
  EXPECT_NE(kiln_philox_uniform_f64(42, 7), kiln_philox_uniform_f64(42, 8));
  // seed 0, counter 0 is the first known-answer block: 53 bits of (x0, x1).
  EXPECT_EQ(kiln_philox_uniform_f64(0, 0),
            double(((uint64_t(0x6627e8d5u) << 32) | 0xe169c58du) >> 11) * 0x1.0p-53);
  EXPECT_EQ(kiln_philox_uniform_f32(0, 0), float(0x6627e8d5u >> 8) * 0x1.0p-24f);
  const int count = 20000;
  double uniform_sum = 0, normal_sum = 0, normal_squares = 0;
  for (int i = 0; i < count; ++i) {
    double u = kiln_philox_uniform_f64(1234, uint64_t(i));
    float f = kiln_philox_uniform_f32(1234, uint64_t(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    double z = kiln_philox_normal_f64(99, uint64_t(i));
    ASSERT_TRUE(std::isfinite(z));
    ASSERT_TRUE(std::isfinite(kiln_philox_normal_f32(99, uint64_t(i))));
    uniform_sum += u;
    normal_sum += z;
    normal_squares += z * z;
  }
  // Standard errors: 0.002 for the uniform mean, 0.007 for the normal mean, 0.01 for its
  // variance; the bounds are 5 of them.
  EXPECT_NEAR(uniform_sum / count, 0.5, 0.01);
  EXPECT_NEAR(normal_sum / count, 0.0, 0.035);
  EXPECT_NEAR(normal_squares / count, 1.0, 0.05);
}

TEST(ScalarMath, Float32WrappersCallTheFloatFunctions) {
  EXPECT_EQ(kiln_sin(0.5f), std::sin(0.5f));
  EXPECT_EQ(kiln_exp(1.0), std::exp(1.0));
  EXPECT_EQ(kiln_atan2(1.0f, -1.0f), std::atan2(1.0f, -1.0f));
  EXPECT_EQ(kiln_hypot(3.0, 4.0), 5.0);
  EXPECT_EQ(kiln_copysign(2.0f, -0.0f), -2.0f);
  EXPECT_EQ(kiln_sqrt(9.0f), 3.0f);
  EXPECT_EQ(kiln_erfc(0.0), 1.0);
}

}  // namespace

#include "prelude_text.h"

namespace {

// The op semantics are target-neutral: everything compiler- or library-specific is the C++
// prelude's (a CUDA prelude supplies the same primitives for the next target).
TEST(ScalarMathText, SemanticsHoldNoBuiltinsPragmasOrIncludes) {
  std::string semantics = kiln::codegen::kScalarMathText;
  for (const char* target_specific : {"__builtin", "_Pragma", "#pragma", "#include", "_Float16",
                                      "extern \"C\""})
    EXPECT_EQ(semantics.find(target_specific), std::string::npos) << target_specific;
  std::string prelude = kiln::codegen::kCppPreludeText;
  EXPECT_NE(prelude.find("omp declare simd"), std::string::npos);
  EXPECT_NE(prelude.find("kiln_math_floor"), std::string::npos);
}

}  // namespace

namespace {

// Distance in units in the last place between two floats of one sign (0 for equal or two NaNs).
int64_t ulps_apart(float a, float b) {
  if (a == b || (a != a && b != b)) return 0;
  if (a != a || b != b || std::signbit(a) != std::signbit(b)) return std::numeric_limits<int64_t>::max();
  return std::llabs(int64_t(__builtin_bit_cast(int32_t, a)) - int64_t(__builtin_bit_cast(int32_t, b)));
}

// kiln's own float32 exp (the C++ prelude): within 1 ulp of the correctly rounded value on a
// spread of every float (every 61st bit pattern: all exponents, subnormal results included),
// and exact at the edges: 0 below the smallest subnormal's half, inf past FLT_MAX, NaN kept.
TEST(ScalarMath, Float32ExpIsWithinOneUlpEverywhere) {
  int64_t worst = 0;
  float worst_at = 0;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 61) {
    const float x = __builtin_bit_cast(float, uint32_t(bits));
    const int64_t apart = ulps_apart(kiln_exp(x), float(std::exp(double(x))));
    if (apart > worst) worst = apart, worst_at = x;
  }
  EXPECT_LE(worst, 1) << "at " << worst_at;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kiln_exp(-inf), 0.0f);
  EXPECT_EQ(kiln_exp(-3.4e38f), 0.0f);  // finfo.min, a mask's fill
  EXPECT_EQ(kiln_exp(inf), inf);
  EXPECT_EQ(kiln_exp(88.7229f), inf);
  EXPECT_EQ(kiln_exp(0.0f), 1.0f);
  EXPECT_EQ(kiln_exp(-0.0f), 1.0f);
  EXPECT_EQ(kiln_exp(-103.97f), std::numeric_limits<float>::denorm_min());
  EXPECT_TRUE(std::isnan(kiln_exp(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
