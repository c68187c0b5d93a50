#include "extern/integer_matmul.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::externs {
namespace {

// Loop order i, p, j: each row of the result is accumulated in a block of kBlockBytes (L1)
// while the rows of b stream past it stride-1, so the j loop vectorises. The i, j, p order of a
// dot product per element read b down a column (stride n): int64 256^3 took 29 ms, eager
// torch's 3.9. Arithmetic is in the unsigned type of the same width: wrapping modulo 2^bits is
// what the dtype's product is (NumPy, eager torch) and vectorises in every width.
constexpr int64_t kBlockBytes = 2048;
// Below this many multiply-adds the product runs on the calling thread: starting the team
// costs more than the work.
constexpr int64_t kParallelWork = int64_t{1} << 16;

template <class U>
__attribute__((always_inline)) inline void row_block(const U* a, int64_t a_column,
                                                     const U* b, int64_t b_row, U* out,
                                                     int64_t width, int64_t k) {
  alignas(64) U acc[kBlockBytes / sizeof(U)] = {};
  for (int64_t p = 0; p < k; ++p) {
    const U scale = a[p * a_column];
    const U* row = b + p * b_row;
    for (int64_t j = 0; j < width; ++j) acc[j] += U(scale * row[j]);
  }
  std::memcpy(out, acc, size_t(width) * sizeof(U));
}

// One block of one result row, compiled for AVX-512, AVX2 and the x86-64 baseline; the CPU
// picks (as in winograd_convolution.cpp). Not the parallel loop: OpenMP outlines its body into
// a function of its own, compiled for the baseline.
#define KILN_INTEGER_ROW_BLOCK(U)                                                            \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void         \
  row_block_##U(const U* a, int64_t a_column, const U* b, int64_t b_row, U* out,              \
                int64_t width, int64_t k) {                                                  \
    row_block<U>(a, a_column, b, b_row, out, width, k);                                      \
  }
KILN_INTEGER_ROW_BLOCK(uint8_t)
KILN_INTEGER_ROW_BLOCK(uint16_t)
KILN_INTEGER_ROW_BLOCK(uint32_t)
KILN_INTEGER_ROW_BLOCK(uint64_t)
#undef KILN_INTEGER_ROW_BLOCK

template <class U>
void row_block_for(const U* a, int64_t a_column, const U* b, int64_t b_row, U* out,
                   int64_t width, int64_t k) {
  if constexpr (sizeof(U) == 1) row_block_uint8_t(a, a_column, b, b_row, out, width, k);
  if constexpr (sizeof(U) == 2) row_block_uint16_t(a, a_column, b, b_row, out, width, k);
  if constexpr (sizeof(U) == 4) row_block_uint32_t(a, a_column, b, b_row, out, width, k);
  if constexpr (sizeof(U) == 8) row_block_uint64_t(a, a_column, b, b_row, out, width, k);
}

// The product whose b has stride-1 rows (`b_row` apart); out is row-major (m, n).
template <class U>
void product(const U* a, int64_t a_row, int64_t a_column, const U* b, int64_t b_row, U* out,
             int64_t m, int64_t n, int64_t k) {
  constexpr int64_t block = kBlockBytes / int64_t(sizeof(U));
  const int64_t blocks = (n + block - 1) / block;
  // Column blocks outer: a thread's rows reuse one block of b from its cache.
  #pragma omp parallel for collapse(2) schedule(static) if (m * n * k >= kParallelWork)
  for (int64_t jb = 0; jb < blocks; ++jb)
    for (int64_t i = 0; i < m; ++i) {
      const int64_t j0 = jb * block, width = std::min(block, n - j0);
      row_block_for<U>(a + i * a_row, a_column, b + j0, b_row, out + i * n + j0, width, k);
    }
}

template <class U>
void multiply(const IntegerMatrix& a, const IntegerMatrix& b, void* out, int64_t m, int64_t n,
              int64_t k) {
  if (m == 0 || n == 0) return;
  const U* pa = static_cast<const U*>(a.data);
  const U* pb = static_cast<const U*>(b.data);
  U* po = static_cast<U*>(out);
  if (b.column_stride == 1 || n == 1)
    return product<U>(pa, a.row_stride, a.column_stride, pb, b.row_stride, po, m, n, k);
  // Any other b (a transposed view) is packed row-major first: k * n copies against the
  // m * n * k multiply-adds that then read it stride-1.
  std::vector<U> packed(size_t(k * n));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      packed[size_t(p * n + j)] = pb[p * b.row_stride + j * b.column_stride];
  product<U>(pa, a.row_stride, a.column_stride, packed.data(), n, po, m, n, k);
}

}  // namespace

bool integer_matmul(DType dtype, const IntegerMatrix& a, const IntegerMatrix& b, void* out,
                    int64_t m, int64_t n, int64_t k) {
  switch (dtype) {
    case DType::Int8: case DType::UInt8: multiply<uint8_t>(a, b, out, m, n, k); return true;
    case DType::Int16: case DType::UInt16: multiply<uint16_t>(a, b, out, m, n, k); return true;
    case DType::Int32: case DType::UInt32: multiply<uint32_t>(a, b, out, m, n, k); return true;
    case DType::Int64: case DType::UInt64: multiply<uint64_t>(a, b, out, m, n, k); return true;
    default: return false;
  }
}

}  // namespace kiln::externs
