// Products of few rows on the CPU: a Linear layer at a few tokens (BERT at 1x8: x (8, 768)
// times the transpose of W (3072, 768)) is a stream over the weight, one load of it per 8
// multiply-adds. The libraries' GEMMs (oneDNN's sgemm, OpenBLAS) pack and tile for large M and
// streamed such weights from memory at 11-14 GB/s on a 2-core AVX-512 Xeon, this kernel at
// 19-24 GB/s (1.3-2x): each thread takes 4 weight rows at a time, streams them once and
// multiplies every 16-float piece by all (up to 8) rows of x, kept in cache.
#pragma once
#include <cstdint>

namespace kiln::externs {

// c (m x n, rows ldc apart) = a (m x k, rows lda apart) times b (k x n) whose column j lies
// contiguous at b + j * ldb (a weight W (n, k) seen as W.T). Runs and returns true when
// 1 <= m <= kSkinnyRows and the CPU has AVX-512; false (nothing done) otherwise.
constexpr int64_t kSkinnyRows = 8;
bool skinny_matmul(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                   int64_t m, int64_t n, int64_t k);

}  // namespace kiln::externs
