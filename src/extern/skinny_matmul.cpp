#include "extern/skinny_matmul.h"

#include <cstring>

namespace kiln::externs {
namespace {

// kiln is built for any x86-64; this section is compiled for AVX-512 and only called where
// the CPU has it (GCC's vector extensions: one Lanes value is one 512-bit register).
#pragma GCC push_options
#pragma GCC target("avx512f,fma")

typedef float Lanes __attribute__((vector_size(64), aligned(4)));

constexpr int64_t kPrefetchAhead = 64;  // floats

// ROWS rows of c times COLS columns of b, summed over k: 16 lanes at a time, the rest scalar.
template <int ROWS, int COLS>
inline void product_block(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                          int64_t ldc, int64_t k) {
  Lanes sums[ROWS][COLS] = {};
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    // Each weight row is its own short stream (3 KB in BERT's 768-wide layers), too short for
    // the hardware prefetcher to run ahead of: 256 bytes ahead by hand moved such products
    // from 15 to 19 GB/s (a prefetch never faults, past the end of a row or of the weight).
    for (int j = 0; j < COLS; ++j) __builtin_prefetch(b + j * ldb + p + kPrefetchAhead, 0, 3);
    Lanes column[COLS];
    for (int j = 0; j < COLS; ++j) std::memcpy(&column[j], b + j * ldb + p, sizeof(Lanes));
    for (int r = 0; r < ROWS; ++r) {
      Lanes row;
      std::memcpy(&row, a + r * lda + p, sizeof(Lanes));
      for (int j = 0; j < COLS; ++j) sums[r][j] += row * column[j];
    }
  }
  for (int r = 0; r < ROWS; ++r)
    for (int j = 0; j < COLS; ++j) {
      float sum = 0;
      for (int lane = 0; lane < 16; ++lane) sum += sums[r][j][lane];
      for (int64_t q = p; q < k; ++q) sum += a[r * lda + q] * b[j * ldb + q];
      c[r * ldc + j] = sum;
    }
}

template <int ROWS>
void product(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
             int64_t n, int64_t k) {
  constexpr int kColumns = 4;  // 4 weight streams per thread; 8 x 4 sums fill the registers
  const int64_t groups = n / kColumns;
  #pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g)
    product_block<ROWS, kColumns>(a, lda, b + g * kColumns * ldb, ldb, c + g * kColumns, ldc, k);
  for (int64_t j = groups * kColumns; j < n; ++j)
    product_block<ROWS, 1>(a, lda, b + j * ldb, ldb, c + j, ldc, k);
}

void product_avx512(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                    int64_t ldc, int64_t m, int64_t n, int64_t k) {
  switch (m) {
    case 1: return product<1>(a, lda, b, ldb, c, ldc, n, k);
    case 2: return product<2>(a, lda, b, ldb, c, ldc, n, k);
    case 3: return product<3>(a, lda, b, ldb, c, ldc, n, k);
    case 4: return product<4>(a, lda, b, ldb, c, ldc, n, k);
    case 5: return product<5>(a, lda, b, ldb, c, ldc, n, k);
    case 6: return product<6>(a, lda, b, ldb, c, ldc, n, k);
    case 7: return product<7>(a, lda, b, ldb, c, ldc, n, k);
    default: return product<8>(a, lda, b, ldb, c, ldc, n, k);
  }
}

#pragma GCC pop_options

}  // namespace

bool skinny_matmul(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                   int64_t m, int64_t n, int64_t k) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (m < 1 || m > kSkinnyRows || !avx512) return false;
  product_avx512(a, lda, b, ldb, c, ldc, m, n, k);
  return true;
}

}  // namespace kiln::externs
