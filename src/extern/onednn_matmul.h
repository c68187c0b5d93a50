// float32 products through oneDNN's matmul primitive (its brgemm kernels), for the shapes where
// they beat its sgemm: deep, narrow products such as BERT's feed-forward output layer
// (1024 x 3072 @ 3072 x 768: 285-310 GFLOP/s through sgemm, 313-355 through the primitive on a
// 2-core AVX-512 Xeon). Primitives are cached per problem (shape and strides) for the process.
#pragma once
#include <cstdint>

namespace kiln::externs {

// Whether an (m, k) x (k, n) float32 product runs faster through the primitive than through
// sgemm: n from 16 to 768, deeper than wide (k > n), m between 64 and 2048, and large enough
// (m * n * k >= 2^26) for the primitive's per-call cost not to matter. Measured on an
// AVX-512 Xeon; products with n >= 1024, k <= n or m >= 4096 were as fast or faster in sgemm.
bool prefers_matmul_primitive(int64_t m, int64_t n, int64_t k);

// out (m, n, row-major float32) = a (m, k) x b (k, n), each operand given by element strides
// of its rows and columns, both float32 or (`bfloat16`) both bfloat16, multiplied exactly and
// summed in float32. False when the primitive would not be fast (`a` not dense row-major, `b`
// not dense) or oneDNN cannot run it: the caller falls back to sgemm.
bool onednn_matmul(const void* a, int64_t a_row, int64_t a_column, const void* b, int64_t b_row,
                   int64_t b_column, float* out, int64_t m, int64_t n, int64_t k,
                   bool bfloat16 = false);

}  // namespace kiln::externs
