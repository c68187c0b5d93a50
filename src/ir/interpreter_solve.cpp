// The reference solve: Gaussian elimination with partial pivoting (the row of largest magnitude
// in each column, the first of equal ones: LAPACK's getrf) in double, one system at a time, the
// textbook form, independent of the library kernel (src/extern/solve.h). An exact zero pivot is
// a singular matrix: kiln's LinAlg error, as LAPACK's info > 0 makes it in the compiled code.
#include <cmath>
#include <utility>

#include "ir/interpreter_kernels.h"
#include "kiln/error.h"

namespace kiln::ir::interpreter_detail {
namespace {

// The elements of `view` in row-major order, as doubles.
std::vector<double> row_major_values(const View& view) {
  int64_t count = 1;
  for (int64_t extent : view.shape) count *= extent;
  std::vector<double> values(static_cast<size_t>(count));
  std::vector<int64_t> index(view.shape.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * view.strides[d];
    values[static_cast<size_t>(e)] =
        view.dtype == DType::Float64 ? reinterpret_cast<const double*>(view.data)[offset]
                                     : reinterpret_cast<const float*>(view.data)[offset];
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < view.shape[d]) break;
      index[d] = 0;
    }
  }
  return values;
}

// Solves the n x n system `a` (row-major, destroyed) for the n x k right-hand sides `b` (in
// place); false where a pivot is exactly zero.
bool eliminate(double* a, double* b, int64_t n, int64_t k) {
  for (int64_t column = 0; column < n; ++column) {
    int64_t pivot = column;
    for (int64_t row = column + 1; row < n; ++row)
      if (std::fabs(a[row * n + column]) > std::fabs(a[pivot * n + column])) pivot = row;
    if (a[pivot * n + column] == 0) return false;
    if (pivot != column) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[pivot * n + j], a[column * n + j]);
      for (int64_t j = 0; j < k; ++j) std::swap(b[pivot * k + j], b[column * k + j]);
    }
    for (int64_t row = column + 1; row < n; ++row) {
      const double factor = a[row * n + column] / a[column * n + column];
      for (int64_t j = column; j < n; ++j) a[row * n + j] -= factor * a[column * n + j];
      for (int64_t j = 0; j < k; ++j) b[row * k + j] -= factor * b[column * k + j];
    }
  }
  for (int64_t row = n; row-- > 0;)
    for (int64_t j = 0; j < k; ++j) {
      double sum = b[row * k + j];
      for (int64_t i = row + 1; i < n; ++i) sum -= a[row * n + i] * b[i * k + j];
      b[row * k + j] = sum / a[row * n + row];
    }
  return true;
}

}  // namespace

Array evaluate_solve(const Node& node, const Array& matrix, const Array& right) {
  const View a = view_of(matrix), b = view_of(right);
  if (a.shape.size() < 2 || b.shape.size() != a.shape.size())
    fail(node, ErrorKind::Internal, "solve's operands do not fit its node");
  const int64_t n = a.shape.back(), k = b.shape.back();
  std::vector<double> systems = row_major_values(a), solutions = row_major_values(b);
  const int64_t batch = n * k == 0 ? 0 : static_cast<int64_t>(solutions.size()) / (n * k);
  for (int64_t t = 0; t < batch; ++t)
    if (!eliminate(systems.data() + t * n * n, solutions.data() + t * n * k, n, k))
      throw Error(ErrorKind::LinAlg, "Singular matrix");
  Array output = Array::empty(node.dtype, to_ints(node.shape));
  for (size_t e = 0; e < solutions.size(); ++e) {
    if (node.dtype == DType::Float64)
      output.data_as<double>()[e] = solutions[e];
    else
      output.data_as<float>()[e] = static_cast<float>(solutions[e]);
  }
  return output;
}

}  // namespace kiln::ir::interpreter_detail
