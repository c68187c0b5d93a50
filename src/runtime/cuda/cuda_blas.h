// cuBLAS, opened with dlopen on first use (libcublas.so.13 or .12: the toolkit's, or pip's
// nvidia wheels, or the copy torch loaded). Without it, a matmul on the GPU is
// Error(Unsupported) saying what was tried.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::runtime::cuda {

// One column-major product per batch entry, cuBLAS's terms: C = op(A) op(B), op(X) = X or X^T,
// C is m x n with leading dimension ldc; entry t reads A + t*stride_a and B + t*stride_b and
// writes C + t*stride_c (element strides; 0 broadcasts an operand). float32/float64 are
// computed in their own precision (TF32 only with `allow_tf32`); float16/bfloat16 accumulate in
// float32, as torch does. Queued on `stream`.
struct Gemm {
  DType dtype = DType::Float32;
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batches = 1;
  // An epilogue, which cuBLASLt applies as it writes C (libcublasLt, opened like cuBLAS): a
  // bias vector of m elements added to every column of C (row-major: along its rows), then a
  // ReLU. float32, float16 and bfloat16.
  const void* bias = nullptr;
  bool relu = false;
  // Which of cuBLASLt's candidates for the product runs, in its heuristic's order: 0 is its
  // first choice (plain products then go through cuBLAS, as torch's do); max-autotune times
  // the first kGemmCandidates (runtime/cuda/cuda_executable_tuning.cpp). Past the candidates
  // it offers, the last one offered; float64 and empty products have cuBLAS's one.
  int candidate = 0;
};
// H200, BERT-base 8x128's feed-forward input product (1024x3072 by 768, float32): cuBLASLt's
// second candidate 120 us against its first's 128 us; its other products keep the first.
constexpr int kGemmCandidates = 4;
// `kept` (a CUDA graph capture) gets cuBLAS's workspace, which the graph's replays use.
void gemm(const Gemm& gemm, void* stream, bool allow_tf32 = false,
          std::vector<std::shared_ptr<void>>* kept = nullptr);

// Whether cuBLAS computes `dtype` (float16, bfloat16, float32, float64).
bool blas_computes(DType dtype);

}  // namespace kiln::runtime::cuda
