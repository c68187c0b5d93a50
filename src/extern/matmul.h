// Extern matmul: NumPy matmul semantics (1-D operands promoted and squeezed, broadcast batch
// dimensions) on strided buffers. float32 goes to oneDNN's sgemm (a product of few rows by a
// transposed weight to kiln's own kernel, skinny_matmul.h), float64 to OpenBLAS's dgemm (per
// batch entry, small entries one per thread; transposed operands passed as such, no copy);
// other dtypes use a plain triple loop. bfloat16 operands (read through their casts to a
// float32 product, sched/strided_views.h) go to oneDNN's bfloat16 kernels, result float32.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

// `out` is row-major with `out_shape`, the NumPy matmul result shape of a and b, and
// `out_dtype`: the operands', or float32 for bfloat16 operands read through their casts.
void matmul(const StridedOperand& a, const StridedOperand& b, void* out,
            const std::vector<int64_t>& out_shape, DType out_dtype);

}  // namespace kiln::externs
