// The matrix product of integer matrices (no BLAS has one): one (m, k) x (k, n) product into a
// row-major (m, n) result, arithmetic modulo 2^bits of the dtype as in NumPy and eager torch.
#pragma once
#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::externs {

// An operand's matrix: its first element and the element strides of its rows and columns.
struct IntegerMatrix {
  const void* data;
  int64_t row_stride, column_stride;
};

// Returns false (nothing written) when `dtype` is not an integer dtype.
bool integer_matmul(DType dtype, const IntegerMatrix& a, const IntegerMatrix& b, void* out,
                    int64_t m, int64_t n, int64_t k);

}  // namespace kiln::externs
