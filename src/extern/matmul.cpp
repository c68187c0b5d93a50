#include "extern/matmul.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>

#include "extern/blas_kernels.h"
#include "extern/integer_matmul.h"
#include "extern/matmul_problem.h"
#include "extern/onednn_matmul.h"
#include "extern/skinny_matmul.h"
#include "kiln/array.h"
#include "kiln/error.h"

namespace kiln::externs {
namespace {

// One (M, K) x (K, N) problem: element strides of rows/columns for each operand.
struct Matrix {
  const char* data;
  int64_t row_stride, column_stride;
};

template <class T, class Accumulate>
void naive(const Matrix& a, const Matrix& b, T* out, int64_t m, int64_t n, int64_t k) {
  const T* pa = reinterpret_cast<const T*>(a.data);
  const T* pb = reinterpret_cast<const T*>(b.data);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Accumulate sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += Accumulate(pa[i * a.row_stride + p * a.column_stride]) *
               Accumulate(pb[p * b.row_stride + j * b.column_stride]);
      out[i * n + j] = static_cast<T>(sum);
    }
}

template <class T>
bool blas_layout(const Matrix& x, int64_t rows, int64_t columns, CBLAS_TRANSPOSE& transpose, int64_t& leading) {
  if (x.column_stride == 1 || columns == 1) {
    transpose = CblasNoTrans;
    leading = std::max<int64_t>(rows == 1 ? columns : x.row_stride, std::max<int64_t>(columns, 1));
    return rows == 1 || x.row_stride >= columns;
  }
  if (x.row_stride == 1 || rows == 1) {
    transpose = CblasTrans;
    leading = std::max<int64_t>(columns == 1 ? rows : x.column_stride, std::max<int64_t>(rows, 1));
    return columns == 1 || x.column_stride >= rows;
  }
  return false;
}

// A matrix-vector product (m or n is 1: passes/canonicalize_matmul.cpp leaves large ones whose
// matrix is an input) as BLAS's gemv: OpenBLAS 0.3.21's gemm forwards nothing to it, and runs
// such a product through its packing GEMM kernels. out = matrix x vector, the matrix a (m x k)
// when n is 1, b seen transposed (n x k) when m is 1. False (nothing done) where the matrix
// has neither unit stride, or the vector is a broadcast (BLAS takes no zero increment).
template <class T>
bool gemv(const Matrix& a, const Matrix& b, T* out, int64_t m, int64_t n, int64_t k) {
  const bool one_column = n == 1;
  const Matrix matrix = one_column ? a : Matrix{b.data, b.column_stride, b.row_stride};
  const T* vector = reinterpret_cast<const T*>(one_column ? b.data : a.data);
  const int64_t rows = one_column ? m : n, increment = one_column ? b.row_stride : a.column_stride;
  if (increment <= 0 && k > 1) return false;
  CBLAS_ORDER order;
  int64_t leading;
  if (matrix.column_stride == 1 && (rows == 1 || matrix.row_stride >= k)) {
    order = CblasRowMajor;
    leading = std::max<int64_t>({matrix.row_stride, k, 1});
  } else if (matrix.row_stride == 1 && (k == 1 || matrix.column_stride >= rows)) {
    order = CblasColMajor;
    leading = std::max<int64_t>({matrix.column_stride, rows, 1});
  } else {
    return false;
  }
  const T* data = reinterpret_cast<const T*>(matrix.data);
  const int step = int(std::max<int64_t>(increment, 1));
  if constexpr (std::is_same_v<T, double>)
    cblas_dgemv(order, CblasNoTrans, int(rows), int(k), 1.0, data, int(leading), vector, step,
                0.0, out, 1);
  else
    cblas_sgemv(order, CblasNoTrans, int(rows), int(k), 1.0f, data, int(leading), vector, step,
                0.0f, out, 1);
  return true;
}

// Below this depth a product of few rows is too small for its streaming to matter.
constexpr int64_t kSkinnyMinimumDepth = 64;

template <class T>
void gemm(const Matrix& a, const Matrix& b, T* out, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  select_blas_kernels();
  if (k == 0) {
    std::memset(out, 0, sizeof(T) * static_cast<size_t>(m * n));
    return;
  }
  if ((m == 1 || n == 1) && gemv(a, b, out, m, n, k)) return;
  CBLAS_TRANSPOSE ta, tb;
  int64_t lda, ldb;
  if (!blas_layout<T>(a, m, k, ta, lda) || !blas_layout<T>(b, k, n, tb, ldb)) {
    naive<T, T>(a, b, out, m, n, k);
    return;
  }
  const T* pa = reinterpret_cast<const T*>(a.data);
  const T* pb = reinterpret_cast<const T*>(b.data);
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, pa, int(lda), pb, int(ldb), 0.0, out, int(n));
  } else {
    // A few rows times a weight seen transposed (x @ W.T at a few tokens): kiln's own kernel.
    if (ta == CblasNoTrans && tb == CblasTrans && k >= kSkinnyMinimumDepth &&
        skinny_matmul(pa, lda, pb, ldb, out, n, m, n, k))
      return;
    // Deep, narrow products: oneDNN's matmul primitive (extern/onednn_matmul.h).
    if (prefers_matmul_primitive(m, n, k) &&
        onednn_matmul(pa, a.row_stride, a.column_stride, pb, b.row_stride, b.column_stride, out,
                      m, n, k))
      return;
    // oneDNN's sgemm (row-major, 64-bit sizes) before OpenBLAS's: on an AVX-512 Xeon it was
    // 5-15% faster on the models' large products and 1.5-4.5x on skinny ones (a few tokens
    // through BERT's 768x3072 layers) and small ones (attention's 128x64x128).
    const char trans_a = ta == CblasTrans ? 'T' : 'N', trans_b = tb == CblasTrans ? 'T' : 'N';
    if (dnnl_sgemm(trans_a, trans_b, m, n, k, 1.0f, pa, lda, pb, ldb, 0.0f, out, n) != dnnl_success)
      cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, pa, int(lda), pb, int(ldb), 0.0f, out, int(n));
  }
}

void multiply(DType dtype, const Matrix& a, const Matrix& b, char* out, int64_t m, int64_t n, int64_t k) {
  switch (dtype) {
    case DType::Float64: return gemm<double>(a, b, reinterpret_cast<double*>(out), m, n, k);
    case DType::Float32: return gemm<float>(a, b, reinterpret_cast<float*>(out), m, n, k);
    default:
      if (integer_matmul(dtype, {a.data, a.row_stride, a.column_stride},
                         {b.data, b.row_stride, b.column_stride}, out, m, n, k))
        return;
      throw Error(ErrorKind::Unsupported, "kiln: matmul: dtype " + std::string(dtype_name(dtype)) +
                                              " is not supported (use float32 or float64)");
  }
}

// A batch of products each this small (multiply-adds) runs one product per thread, each
// single-threaded: a library GEMM spread over all threads spends as long starting them as
// computing, and attention's 96 (128, 64) x (64, 128) products per BERT layer ran at 40% of
// the large products' rate that way.
constexpr int64_t kSmallProduct = int64_t{1} << 21;

// A bfloat16 operand widened into a dense float32 copy (`storage` holds it); others as they are.
StridedOperand widened(const StridedOperand& x, std::vector<float>& storage) {
  if (x.dtype != DType::BFloat16) return x;
  const size_t rank = x.shape.size();
  int64_t count = 1;
  for (int64_t extent : x.shape) count *= extent;
  storage.resize(static_cast<size_t>(count));
  std::vector<int64_t> index(rank, 0), strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
  const uint16_t* bits = static_cast<const uint16_t*>(x.data);
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * x.strides[d];
    storage[static_cast<size_t>(n)] = std::bit_cast<float>(uint32_t(bits[offset]) << 16);
    for (size_t d = rank; d-- > 0;) {  // the next index, row-major
      if (++index[d] < x.shape[d]) break;
      index[d] = 0;
    }
  }
  return {storage.data(), DType::Float32, x.shape, strides};
}

// A float32 product with bfloat16 operands, read in place through their casts
// (sched/strided_views.h: a bfloat16 linear layer): oneDNN's bfloat16 kernels where both
// operands are bfloat16 in a layout they take (each product of two bfloat16s is exact in
// float32 and the sums are float32, as in the product of their float32 casts); otherwise the
// bfloat16 operands are widened into float32 copies first.
void bfloat16_matmul(const StridedOperand& a, const StridedOperand& b, float* out,
                     const std::vector<int64_t>& out_shape) {
  const MatmulProblem p = matmul_problem(a, b, out_shape);
  bool done = a.dtype == DType::BFloat16 && b.dtype == DType::BFloat16 && p.m > 0 && p.n > 0 &&
              p.k > 0;
  for (int64_t t = 0; t < p.batches && done; ++t) {
    const BatchEntryOffsets offsets = batch_entry_offsets(p, t);
    done = onednn_matmul(static_cast<const uint16_t*>(a.data) + offsets.a, p.a_row, p.a_column,
                         static_cast<const uint16_t*>(b.data) + offsets.b, p.b_row, p.b_column,
                         out + t * p.m * p.n, p.m, p.n, p.k, /*bfloat16=*/true);
  }
  if (done) return;
  std::vector<float> a_storage, b_storage;
  matmul(widened(a, a_storage), widened(b, b_storage), out, out_shape, DType::Float32);
}

}  // namespace

void matmul(const StridedOperand& a, const StridedOperand& b, void* out,
            const std::vector<int64_t>& out_shape, DType out_dtype) {
  if (out_dtype == DType::Float32 && (a.dtype == DType::BFloat16 || b.dtype == DType::BFloat16))
    return bfloat16_matmul(a, b, static_cast<float*>(out), out_shape);
  if (a.dtype != out_dtype || b.dtype != out_dtype)
    throw Error(ErrorKind::Internal, "kiln: matmul of " + std::string(dtype_name(a.dtype)) +
                                         " and " + std::string(dtype_name(b.dtype)) + " into " +
                                         std::string(dtype_name(out_dtype)));
  const MatmulProblem p = matmul_problem(a, b, out_shape);
  const int element = dtype_size(a.dtype);
  char* out_bytes = static_cast<char*>(out);
  auto entry = [&](int64_t t) {
    const BatchEntryOffsets offsets = batch_entry_offsets(p, t);
    Matrix ma{static_cast<const char*>(a.data) + offsets.a * element, p.a_row, p.a_column};
    Matrix mb{static_cast<const char*>(b.data) + offsets.b * element, p.b_row, p.b_column};
    multiply(a.dtype, ma, mb, out_bytes + t * p.m * p.n * element, p.m, p.n, p.k);
  };
  const int threads = omp_get_max_threads();
  if (threads > 1 && p.batches >= threads && p.m * p.n * p.k <= kSmallProduct) {
    // Inside the parallel region OpenBLAS and oneDNN run single-threaded. An exception must
    // not leave it: the first is kept and rethrown after.
    std::exception_ptr error;
    #pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t t = 0; t < p.batches; ++t) {
      try {
        entry(t);
      } catch (...) {
        #pragma omp critical(kiln_matmul_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
  for (int64_t t = 0; t < p.batches; ++t) entry(t);
}

}  // namespace kiln::externs
