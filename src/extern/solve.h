// The solve kernel (ir op solve, np.linalg.solve): LAPACK's gesv (OpenBLAS's) per system, on
// column-major copies of a and b as NumPy's own call makes them, so that the pivots and the
// rounding are those of NumPy's LU with partial pivoting.
#pragma once
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

// Writes x with a x = b for each system of the batch to `out` (row-major, of b's shape): a
// (.., n, n) and b (.., n, k), float32 or float64, one batch shape, any strides. An exact zero
// pivot throws kiln::Error(LinAlg, "Singular matrix") (numpy.linalg.LinAlgError in Python).
void solve(const StridedOperand& a, const StridedOperand& b, void* out);

}  // namespace kiln::externs
