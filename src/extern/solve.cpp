#include "extern/solve.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "extern/blas_kernels.h"
#include "kiln/error.h"

// LAPACK's Fortran entry points, as OpenBLAS exports them (32-bit integers: Debian's LP64 build).
extern "C" {
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* pivots, double* b,
            const int* ldb, int* info);
void sgesv_(const int* n, const int* nrhs, float* a, const int* lda, int* pivots, float* b,
            const int* ldb, int* info);
}

namespace kiln::externs {
namespace {

// The element offset of system `t` of the batch (row-major over the leading dimensions).
int64_t batch_offset(const StridedOperand& x, int64_t t) {
  int64_t offset = 0;
  for (size_t d = x.shape.size() - 2; d-- > 0;) {
    offset += (t % x.shape[d]) * x.strides[d];
    t /= x.shape[d];
  }
  return offset;
}

template <class T>
void solve_systems(const StridedOperand& a, const StridedOperand& b, T* out) {
  const size_t rank = a.shape.size();
  const int64_t n = a.shape[rank - 1], k = b.shape[rank - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= a.shape[d];
  if (n == 0 || k == 0 || batch == 0) return;
  if (n > INT32_MAX / std::max<int64_t>(n, k))
    throw Error(ErrorKind::Unsupported, "kiln: solve of a system of " + std::to_string(n) +
                                            " unknowns: LAPACK's 32-bit sizes cannot index it");
  select_blas_kernels();
  const int64_t a_row = a.strides[rank - 2], a_column = a.strides[rank - 1];
  const int64_t b_row = b.strides[rank - 2], b_column = b.strides[rank - 1];
  std::vector<T> matrix(static_cast<size_t>(n * n)), right(static_cast<size_t>(n * k));
  std::vector<int> pivots(static_cast<size_t>(n));
  const int size = static_cast<int>(n), columns = static_cast<int>(k);
  for (int64_t t = 0; t < batch; ++t) {
    const T* pa = static_cast<const T*>(a.data) + batch_offset(a, t);
    const T* pb = static_cast<const T*>(b.data) + batch_offset(b, t);
    for (int64_t j = 0; j < n; ++j)  // column-major: element (i, j) at i + j * n
      for (int64_t i = 0; i < n; ++i)
        matrix[static_cast<size_t>(i + j * n)] = pa[i * a_row + j * a_column];
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < n; ++i)
        right[static_cast<size_t>(i + j * n)] = pb[i * b_row + j * b_column];
    int info = 0;
    if constexpr (std::is_same_v<T, double>)
      dgesv_(&size, &columns, matrix.data(), &size, pivots.data(), right.data(), &size, &info);
    else
      sgesv_(&size, &columns, matrix.data(), &size, pivots.data(), right.data(), &size, &info);
    if (info > 0) throw Error(ErrorKind::LinAlg, "Singular matrix");
    if (info < 0)
      throw Error(ErrorKind::Internal, "kiln: gesv refused argument " + std::to_string(-info));
    T* x = out + t * n * k;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) x[i * k + j] = right[static_cast<size_t>(i + j * n)];
  }
}

}  // namespace

void solve(const StridedOperand& a, const StridedOperand& b, void* out) {
  if (a.dtype != b.dtype || a.shape.size() < 2 || a.shape.size() != b.shape.size())
    throw Error(ErrorKind::Internal, "kiln: solve's operands do not fit");
  switch (a.dtype) {
    case DType::Float64: return solve_systems(a, b, static_cast<double*>(out));
    case DType::Float32: return solve_systems(a, b, static_cast<float*>(out));
    default:
      throw Error(ErrorKind::Unsupported, "kiln: solve of " + std::string(dtype_name(a.dtype)) +
                                              " (use float32 or float64)");
  }
}

}  // namespace kiln::externs
