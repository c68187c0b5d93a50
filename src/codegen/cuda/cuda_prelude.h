// The CUDA target's prelude: what generated CUDA C++ needs before the target-neutral semantics
// of src/ir/scalar_math.h, the counterpart of src/codegen/cpp/cpp_prelude.h. NVRTC compiles it
// with no include path, so:
// - no #include, and nothing of the host compiler's: NVRTC knows neither the __INT64_TYPE__
//   family nor GCC's __builtin_ math, so the fixed-width names are spelled out and the math
//   is CUDA's device library;
// - every scalar_math.h function is a __device__ function (KILN_FN);
// - the math functions are CUDA's device library (sin, sinf, ... need no declaration under
//   NVRTC or nvcc); they are IEEE-correct to CUDA's documented ulp bounds, and kiln never
//   compiles with --use_fast_math;
// - float16 rounding through the hardware conversion (cvt.rn.f16.f64).
#ifndef KILN_CUDA_PRELUDE_H
#define KILN_CUDA_PRELUDE_H

#ifdef __CUDACC_RTC__  // NVRTC
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else  // nvcc (the CI check) includes glibc's typedefs: the same types again is legal C++
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
#endif

#define KILN_RESTRICT __restrict__
#define KILN_FN __device__ inline

#define KILN_UNARY_MATH(name)                                   \
  KILN_FN double kiln_##name(double a) { return ::name(a); }   \
  KILN_FN float kiln_##name(float a) { return ::name##f(a); }
#define KILN_BINARY_MATH(name)                                                       \
  KILN_FN double kiln_##name##_float(double a, double b) { return ::name(a, b); }   \
  KILN_FN float kiln_##name##_float(float a, float b) { return ::name##f(a, b); }

KILN_UNARY_MATH(exp)
KILN_UNARY_MATH(exp2)
KILN_UNARY_MATH(expm1)
KILN_UNARY_MATH(log)
KILN_UNARY_MATH(log2)
KILN_UNARY_MATH(log10)
KILN_UNARY_MATH(log1p)
KILN_UNARY_MATH(cbrt)
KILN_UNARY_MATH(sin)
KILN_UNARY_MATH(cos)
KILN_UNARY_MATH(tan)
KILN_UNARY_MATH(asin)
KILN_UNARY_MATH(acos)
KILN_UNARY_MATH(atan)
KILN_UNARY_MATH(sinh)
KILN_UNARY_MATH(cosh)
KILN_UNARY_MATH(tanh)
KILN_UNARY_MATH(asinh)
KILN_UNARY_MATH(acosh)
KILN_UNARY_MATH(atanh)
KILN_UNARY_MATH(erf)
KILN_UNARY_MATH(erfc)
KILN_BINARY_MATH(pow)
KILN_BINARY_MATH(atan2)
KILN_BINARY_MATH(hypot)

#undef KILN_UNARY_MATH
#undef KILN_BINARY_MATH

KILN_FN double kiln_fma(double a, double b, double c) { return ::fma(a, b, c); }
KILN_FN double kiln_sqrt(double a) { return ::sqrt(a); }
KILN_FN float kiln_sqrt(float a) { return ::sqrtf(a); }
KILN_FN double kiln_atan2(double a, double b) { return kiln_atan2_float(a, b); }
KILN_FN float kiln_atan2(float a, float b) { return kiln_atan2_float(a, b); }
KILN_FN double kiln_hypot(double a, double b) { return kiln_hypot_float(a, b); }
KILN_FN float kiln_hypot(float a, float b) { return kiln_hypot_float(a, b); }
KILN_FN double kiln_copysign(double a, double b) { return ::copysign(a, b); }
KILN_FN float kiln_copysign(float a, float b) { return ::copysignf(a, b); }
KILN_FN double kiln_fmod(double a, double b) { return ::fmod(a, b); }
KILN_FN float kiln_fmod(float a, float b) { return ::fmodf(a, b); }

// ---- primitives the semantics are written with ------------------------------------------
template <class To, class From>
KILN_FN To kiln_bit_cast_function(From value) {
  static_assert(sizeof(To) == sizeof(From), "kiln_bit_cast: sizes differ");
  To result;
  memcpy(&result, &value, sizeof(To));
  return result;
}
#define kiln_bit_cast(To, value) kiln_bit_cast_function<To>(value)
KILN_FN double kiln_infinity() { return __longlong_as_double(0x7ff0000000000000ll); }
KILN_FN double kiln_quiet_nan() { return __longlong_as_double(0x7ff8000000000000ll); }
KILN_FN double kiln_math_fabs(double a) { return ::fabs(a); }
KILN_FN float kiln_math_fabs(float a) { return ::fabsf(a); }
KILN_FN double kiln_math_floor(double a) { return ::floor(a); }
KILN_FN float kiln_math_floor(float a) { return ::floorf(a); }
KILN_FN double kiln_math_ceil(double a) { return ::ceil(a); }
KILN_FN float kiln_math_ceil(float a) { return ::ceilf(a); }
KILN_FN double kiln_math_trunc(double a) { return ::trunc(a); }
KILN_FN float kiln_math_trunc(float a) { return ::truncf(a); }
KILN_FN double kiln_math_rint(double a) { return ::rint(a); }
KILN_FN float kiln_math_rint(float a) { return ::rintf(a); }
// float64 -> float16 bits, rounded once (the hardware conversion).
KILN_FN uint16_t kiln_math_f64_to_f16_bits(double value) {
  unsigned short bits;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(value));
  return bits;
}

// ---- what the CUDA emitter's code uses --------------------------------------------------
// A kernel's buffers, passed by value (one kernel parameter): kiln_args[k] as on the CPU.
template <int N>
struct kiln_arg_table {
  char* pointers[N];
  KILN_FN char* operator[](int k) const { return pointers[k]; }
};

// The integers a size-generic function reads (codegen/size_parameters.h), passed by value
// beside its buffers: each launch of a size carries that size's values.
template <int N>
struct kiln_size_table {
  long long v[N];
};

// The barrier of a device loop's launch (codegen/cuda/device_loops.cpp): its first `threads`
// threads (one or more whole warps) of the loop kernel's block, barrier 1 (0 is the block's).
KILN_FN void kiln_team_barrier(int threads) {
  asm volatile("bar.sync 1, %0;" : : "r"(threads) : "memory");
}

// `bytes` from `from` to `to` by every thread of the block, 8 at a time where both allow.
KILN_FN void kiln_block_copy(char* to, const char* from, long long bytes) {
  if ((((unsigned long long)to | (unsigned long long)from | (unsigned long long)bytes) & 7) == 0) {
    for (long long j = threadIdx.x; j < bytes / 8; j += blockDim.x)
      ((unsigned long long*)to)[j] = ((const unsigned long long*)from)[j];
  } else {
    for (long long j = threadIdx.x; j < bytes; j += blockDim.x) to[j] = from[j];
  }
}

// `bytes` from `from` into L2 by the block's threads, a request per 128-byte line, ahead of a
// device loop's iterations (the arrays it reads and does not write). (Hopper's bulk prefetch,
// a request per 64 KiB, made forward substitution's rows later: 865 against 823 us.)
KILN_FN void kiln_prefetch_l2(const char* from, long long bytes) {
  for (long long j = (long long)threadIdx.x * 128; j < bytes; j += (long long)blockDim.x * 128)
    asm volatile("prefetch.global.L2 [%0];" : : "l"(from + j));
}

// The same copy by one thread (a device loop that one thread runs).
KILN_FN void kiln_thread_copy(char* to, const char* from, long long bytes) {
  if ((((unsigned long long)to | (unsigned long long)from | (unsigned long long)bytes) & 7) == 0) {
    for (long long j = 0; j < bytes / 8; ++j)
      ((unsigned long long*)to)[j] = ((const unsigned long long*)from)[j];
  } else {
    for (long long j = 0; j < bytes; ++j) to[j] = from[j];
  }
}

template <class T> KILN_FN T kiln_lowest_normal();
template <> KILN_FN float kiln_lowest_normal<float>() { return 0x1p-126f; }
template <> KILN_FN double kiln_lowest_normal<double>() { return 0x1p-1022; }
template <class T> KILN_FN T kiln_largest_finite();
template <> KILN_FN float kiln_largest_finite<float>() { return 0x1.fffffep127f; }
template <> KILN_FN double kiln_largest_finite<double>() { return 0x1.fffffffffffffp1023; }
// a / b where b is the same for many a (a row's sum or norm, a constant): one reciprocal for
// them all, and a product corrected by its remainder (Markstein), which is the correctly rounded
// quotient a / b is wherever the remainder is exact: numerators away from the subnormal range,
// quotients and reciprocals normal and finite (2^-149 and 2^-1074 steps; exhaustively checked
// on every float32 divisor mantissa). Elsewhere (zeros, infinities, NaN, extreme exponents) the
// division itself. IEEE division costs ~10 instructions an element, this ~6: softmax of 4096
// rows of 1024 floats on an H200, 8.6 -> 7.7 us.
template <class T>
KILN_FN T kiln_div_by_uniform(T a, T b, T least_numerator) {
  const T inverse = T(1) / b;
  T quotient = a * inverse;
  const T remainder = ::fma(-quotient, b, a);
  quotient = ::fma(remainder, inverse, quotient);
  const T least = T(4) * kiln_lowest_normal<T>(), most = kiln_largest_finite<T>();
  const T q = kiln_math_fabs(quotient), r = kiln_math_fabs(inverse);
  return (kiln_math_fabs(a) >= least_numerator && q >= least && q <= most && r >= least &&
          r <= most) ? quotient : a / b;
}
KILN_FN float kiln_div_by_uniform(float a, float b) { return kiln_div_by_uniform(a, b, 0x1p-100f); }
KILN_FN double kiln_div_by_uniform(double a, double b) {
  return kiln_div_by_uniform(a, b, 0x1p-960);
}
// kiln_div_by_uniform without its branch: the corrected product, and `exact` cleared where it
// may not be the quotient; the emitter then runs the loop of stores again with IEEE division
// (CudaKernelEmitter::checked_divisions). A branch an element made each element its own basic
// block, which the compiler could not schedule together: H200, CuPy-launched variants, a
// layer norm of 8192 rows of 1024 floats 22.2 -> 20.0 us without the branches.
template <class T>
KILN_FN T kiln_div_by_uniform_checked(T a, T b, T least_numerator, bool& exact) {
  const T inverse = T(1) / b;
  const T quotient = a * inverse;
  const T corrected = ::fma(::fma(-quotient, b, a), inverse, quotient);
  const T least = T(4) * kiln_lowest_normal<T>(), most = kiln_largest_finite<T>();
  const T q = kiln_math_fabs(corrected), r = kiln_math_fabs(inverse);
  exact &= (kiln_math_fabs(a) >= least_numerator) & (q >= least) & (q <= most) & (r >= least) &
           (r <= most);
  return corrected;
}
KILN_FN float kiln_div_by_uniform_checked(float a, float b, bool& exact) {
  return kiln_div_by_uniform_checked(a, b, 0x1p-100f, exact);
}
KILN_FN double kiln_div_by_uniform_checked(double a, double b, bool& exact) {
  return kiln_div_by_uniform_checked(a, b, 0x1p-960, exact);
}
// Brings the line of global memory at `address` into the SM's L1 cache (a hint: no register,
// nothing waits on it); the emitter's prefetch pass over a thread's steps (LaunchPlan::prefetches).
KILN_FN void kiln_prefetch(const void* address) {
  asm volatile("prefetch.global.L1 [%0];" : : "l"(address));
}

// Warp shuffles of any accumulator type: its bits as one 32- or 64-bit word (a 16-bit or 8-bit
// value widened to an int) through `intrinsic`. kiln_shuffle_down: the value of lane
// `lane + delta` (lanes past the warp keep their own); kiln_shuffle_up: of lane `lane - delta`
// (lanes below delta keep their own); kiln_shuffle_from: lane `from`'s, in every lane.
#define KILN_WARP_SHUFFLE(name, intrinsic)                                                  \
  template <class T>                                                                       \
  KILN_FN T name(T value, int lane_or_delta) {                                             \
    if constexpr (sizeof(T) == 8) {                                                        \
      return kiln_bit_cast(T, intrinsic(0xffffffffu, kiln_bit_cast(long long, value),      \
                                        lane_or_delta));                                   \
    } else if constexpr (sizeof(T) == 4) {                                                 \
      return kiln_bit_cast(T, intrinsic(0xffffffffu, kiln_bit_cast(int, value), lane_or_delta)); \
    } else {                                                                               \
      return T(intrinsic(0xffffffffu, int(value), lane_or_delta));                         \
    }                                                                                      \
  }
KILN_WARP_SHUFFLE(kiln_shuffle_down, __shfl_down_sync)
KILN_WARP_SHUFFLE(kiln_shuffle_up, __shfl_up_sync)
KILN_WARP_SHUFFLE(kiln_shuffle_from, __shfl_sync)
#undef KILN_WARP_SHUFFLE

// Lane 0's value, in every lane of the warp.
template <class T>
KILN_FN T kiln_shuffle_first(T value) {
  return kiln_shuffle_from(value, 0);
}

// A scan over tiles in one launch (decoupled look-back, as CUB's single-pass scan; the scan
// emitter's ScanTiles launches): tile t's block publishes its total in aggregates[t] and then
// sets flags[t] = 1; once it knows the combination of tiles 0..t it stores that in
// inclusive[t] and sets flags[t] = 2. Called by a whole warp of tile `tile` (> 0) after it
// published its aggregate: returns, in every lane, the combination of tiles 0..tile-1, read
// 32 tiles at a time from the nearest back to the first that has its inclusive value. Tiles
// are numbered in the order blocks start (a ticket), so every tile waited on is running.
template <class T, class Combine>
KILN_FN T kiln_look_back(volatile int* flags, volatile T* aggregates, volatile T* inclusive,
                         long long tile, T identity, Combine combine) {
  const int lane = threadIdx.x & 31;
  T prefix = identity;
  for (long long base = tile - 1;; base -= 32) {
    const long long t = base - lane;
    int flag = 2;  // before tile 0: nothing, as if inclusive
    if (t >= 0) {
      do {
        flag = flags[t];
      } while (flag == 0);
    }
    __threadfence();
    T value = t < 0 ? identity : flag == 2 ? inclusive[t] : aggregates[t];
    const unsigned done = __ballot_sync(0xffffffffu, flag == 2);
    const int stop = done ? __ffs(done) - 1 : 31;  // the nearest tile with its inclusive value
    if (lane > stop) value = identity;
    for (int delta = 16; delta > 0; delta >>= 1) {  // lane k + delta is tile t - delta: earlier
      const T other = kiln_shuffle_down(value, delta);
      if (lane + delta < 32) value = combine(other, value);
    }
    prefix = combine(kiln_shuffle_first(value), prefix);
    if (done) return prefix;
  }
}

#endif  // KILN_CUDA_PRELUDE_H
