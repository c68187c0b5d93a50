#include "extern/attention.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "extern/blas_kernels.h"
#include "kiln/error.h"
// kiln_exp: float32's branch-free exp, which vectorises below (no libmvec: no SIMD pragmas).
#define KILN_SCALAR_MATH_NO_SIMD
#include "codegen/cpp/cpp_prelude.h"

namespace kiln::externs {
namespace {

constexpr int64_t kKeyBlock = 512;            // keys a block of scores holds
constexpr int64_t kScoreBlock = 64 * kKeyBlock;  // float32 scores: 128 KB, in a core's L2

// c = a bᵀ (b_transposed) or a b, plus beta c; row-major, unit stride along rows.
void gemm(bool b_transposed, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (dnnl_sgemm('N', b_transposed ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) !=
      dnnl_success)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, int(m),
                int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
void gemm(bool b_transposed, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, int(m),
              int(n), int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// How a row's scores are masked: not, by a bias added, by a bool mask (false: -inf).
enum class Mask { None, Add, Keep };

// One row of a block of scores, in place: the mask applied (`mask` at element stride `step`;
// keys from `visible` on are -inf, a causal mask's), the row's running maximum updated, the
// scores replaced by exp(score - shift), shift the maximum (0 where it is not finite: a row
// of -inf keeps weights 0). Returns their sum; `correction` is what the sums of the earlier
// blocks are multiplied by (0 before any key counted). Two passes over the row, each one
// SIMD loop.
template <class T, Mask M>
__attribute__((always_inline)) inline T exponentiate(T* scores, int64_t n, const void* mask,
                                                     int64_t step, int64_t visible, T& maximum,
                                                     T& correction) {
  constexpr T kMinusInfinity = -std::numeric_limits<T>::infinity();
  const T* __restrict add = static_cast<const T*>(mask);
  const bool* __restrict keep = static_cast<const bool*>(mask);
  const int64_t seen = std::min(n, visible);
  T top = maximum;
  if (M == Mask::None || step == 1) {  // (a separate loop: GCC left the strided one scalar)
    #pragma omp simd reduction(max : top)
    for (int64_t j = 0; j < seen; ++j) {
      T score = scores[j];
      if constexpr (M == Mask::Add) score += add[j];
      if constexpr (M == Mask::Keep) score = keep[j] ? score : kMinusInfinity;
      scores[j] = score;
      top = score > top ? score : top;
    }
  } else {
    #pragma omp simd reduction(max : top)
    for (int64_t j = 0; j < seen; ++j) {
      T score = scores[j];
      if constexpr (M == Mask::Add) score += add[j * step];
      if constexpr (M == Mask::Keep) score = keep[j * step] ? score : kMinusInfinity;
      scores[j] = score;
      top = score > top ? score : top;
    }
  }
  for (int64_t j = std::max<int64_t>(seen, 0); j < n; ++j) scores[j] = kMinusInfinity;
  const T shift = std::isfinite(top) ? top : T(0);
  correction = maximum == kMinusInfinity
                   ? T(0) : kiln_exp(T((std::isfinite(maximum) ? maximum : T(0)) - shift));
  maximum = top;
  T sum = 0;
  #pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const T weight = kiln_exp(T(scores[j] - shift));
    scores[j] = weight;
    sum += weight;
  }
  return sum;
}

template <class T>
__attribute__((always_inline)) inline T exponentiate_masked(T* scores, int64_t n, Mask mask_kind,
                                                            const void* mask, int64_t step,
                                                            int64_t visible, T& maximum,
                                                            T& correction) {
  switch (mask_kind) {
    case Mask::Add:
      return exponentiate<T, Mask::Add>(scores, n, mask, step, visible, maximum, correction);
    case Mask::Keep:
      return exponentiate<T, Mask::Keep>(scores, n, mask, step, visible, maximum, correction);
    case Mask::None: break;
  }
  return exponentiate<T, Mask::None>(scores, n, mask, step, visible, maximum, correction);
}
// float32 rows in AVX-512 or AVX2 where the CPU has them (kiln is built for any x86-64).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
float exponentiate_row(float* scores, int64_t n, Mask mask_kind, const void* mask, int64_t step,
                       int64_t visible, float& maximum, float& correction) {
  return exponentiate_masked(scores, n, mask_kind, mask, step, visible, maximum, correction);
}
double exponentiate_row(double* scores, int64_t n, Mask mask_kind, const void* mask,
                        int64_t step, int64_t visible, double& maximum, double& correction) {
  return exponentiate_masked(scores, n, mask_kind, mask, step, visible, maximum, correction);
}

// An operand's rows (b, h, first.., features) for a GEMM: in place where the features are
// contiguous and the rows do not overlap, else packed into `scratch`.
template <class T>
const T* rows_of(const StridedOperand& x, int64_t b, int64_t h, int64_t first, int64_t count,
                 int64_t& leading, T* scratch) {
  const int64_t width = x.shape[3];
  const T* base = static_cast<const T*>(x.data) + b * x.strides[0] + h * x.strides[1] +
                  first * x.strides[2];
  if (x.strides[3] == 1 && (count == 1 || x.strides[2] >= width) && width > 0) {
    leading = count == 1 ? width : x.strides[2];
    return base;
  }
  for (int64_t r = 0; r < count; ++r)
    for (int64_t c = 0; c < width; ++c)
      scratch[r * width + c] = base[r * x.strides[2] + c * x.strides[3]];
  leading = std::max<int64_t>(width, 1);
  return scratch;
}

template <class T>
void attend(const StridedOperand& q, const StridedOperand& k, const StridedOperand& v,
            const std::optional<StridedOperand>& bias, bool causal, T* out) {
  const int64_t batch = q.shape[0], heads = q.shape[1], length = q.shape[2];
  const int64_t features = q.shape[3], keys = k.shape[2], width = v.shape[3];
  const int64_t group = heads / k.shape[1];
  // As many query rows a block as fill the scores' block (fewer, larger products: BERT's 128
  // keys make a head one block), but at least two blocks a thread.
  const int64_t key_block = std::min(kKeyBlock, std::max<int64_t>(keys, 1));
  const int available = omp_get_max_threads();
  int64_t query_block = std::min(kScoreBlock / key_block, length);
  const auto blocks_of = [&](int64_t rows) { return (length + rows - 1) / rows; };
  while (query_block > 16 && batch * heads * blocks_of(query_block) < 2 * available)
    query_block /= 2;
  const int64_t blocks = blocks_of(query_block);
  const int64_t items = batch * heads * blocks;
  // Per thread: the scores, the outputs' sums, the rows' maxima and sums, packed operands.
  const int64_t packed = query_block * features + key_block * (features + width);
  const int64_t per_thread = query_block * (key_block + width + 2) + packed;
  const int threads = static_cast<int>(std::min<int64_t>(available, items));
  std::vector<T> scratch(static_cast<size_t>(std::max(threads, 1) * per_thread));
  constexpr T kMinusInfinity = -std::numeric_limits<T>::infinity();
  const Mask mask_kind = !bias ? Mask::None : bias->dtype == DType::Bool ? Mask::Keep : Mask::Add;
  #pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t item = 0; item < items; ++item) {
    T* own = scratch.data() + omp_get_thread_num() * per_thread;
    T *scores = own, *sums = scores + query_block * key_block, *maxima = sums + query_block * width;
    T *totals = maxima + query_block, *packed_q = totals + query_block;
    T *packed_k = packed_q + query_block * features, *packed_v = packed_k + key_block * features;
    const int64_t b = item / (heads * blocks), h = item / blocks % heads;
    const int64_t first = item % blocks * query_block, rows = std::min(query_block, length - first);
    int64_t q_leading, k_leading, v_leading;
    const T* query = rows_of<T>(q, b, h, first, rows, q_leading, packed_q);
    std::fill(sums, sums + rows * width, T(0));
    std::fill(maxima, maxima + rows, kMinusInfinity);
    std::fill(totals, totals + rows, T(0));
    // Causal: key j is seen by rows i >= j only, so keys past the block's last row are skipped.
    const int64_t seen = causal ? std::min(keys, first + rows) : keys;
    for (int64_t start = 0; start < seen; start += key_block) {
      const int64_t n = std::min(key_block, seen - start);
      const T* key = rows_of<T>(k, b, h / group, start, n, k_leading, packed_k);
      gemm(true, rows, n, features, query, q_leading, key, k_leading, T(0), scores, key_block);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = first + r;
        const void* row_mask = nullptr;
        int64_t step = 0;
        if (bias) {
          step = bias->strides[3];
          row_mask = static_cast<const char*>(bias->data) +
                     (b * bias->strides[0] + h * bias->strides[1] + i * bias->strides[2] +
                      start * step) * dtype_size(bias->dtype);
        }
        T correction;
        const T total = exponentiate_row(scores + r * key_block, n, mask_kind, row_mask, step,
                                         causal ? i + 1 - start : n, maxima[r], correction);
        totals[r] = totals[r] * correction + total;
        if (correction != T(1))
          for (int64_t c = 0; c < width; ++c) sums[r * width + c] *= correction;
      }
      const T* value = rows_of<T>(v, b, h / group, start, n, v_leading, packed_v);
      gemm(false, rows, width, n, scores, key_block, value, v_leading, T(1), sums, width);
    }
    T* result = out + ((b * heads + h) * length + first) * width;
    for (int64_t r = 0; r < rows; ++r) {
      const T divisor = totals[r] == T(0) ? T(1) : totals[r];  // a row that sees no key: 0
      for (int64_t c = 0; c < width; ++c) result[r * width + c] = sums[r * width + c] / divisor;
    }
  }
}

}  // namespace

void attention(const StridedOperand& q, const StridedOperand& k, const StridedOperand& v,
               const std::optional<StridedOperand>& bias, bool causal, void* out) {
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4 || k.shape[1] == 0 ||
      (bias && bias->shape.size() != 4))
    throw Error(ErrorKind::Internal, "kiln: attention call with operands of the wrong rank");
  if (q.shape[0] * q.shape[1] * q.shape[2] * v.shape[3] == 0) return;  // nothing to write
  select_blas_kernels();
  if (q.dtype == DType::Float32)
    attend<float>(q, k, v, bias, causal, static_cast<float*>(out));
  else if (q.dtype == DType::Float64)
    attend<double>(q, k, v, bias, causal, static_cast<double*>(out));
  else
    throw Error(ErrorKind::Internal, "kiln: attention in " + std::string(dtype_name(q.dtype)));
}

}  // namespace kiln::externs
