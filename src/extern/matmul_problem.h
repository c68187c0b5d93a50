// A NumPy matmul on strided operands (1-D operands promoted and squeezed, batch dimensions
// broadcast) as a batch of (M, K) x (K, N) matrix products: what every device's matmul
// (extern/matmul.h, runtime/cuda/cuda_extern_calls.cpp) hands its library.
#pragma once
#include <cstdint>
#include <vector>

#include "extern/strided_operand.h"

namespace kiln::externs {

struct MatmulProblem {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch;  // the broadcast batch shape
  int64_t batches = 1;         // its element count
  // Element strides: of each batch dimension (0 where an operand is broadcast), and of the
  // rows and columns of each operand's matrices.
  std::vector<int64_t> a_batch_strides, b_batch_strides;
  int64_t a_row = 0, a_column = 0, b_row = 0, b_column = 0;
};

// Error(Internal) when `out_shape` (the row-major result, from a program that may have been
// read back from the cache) is not the product's: a mismatch must not become a write past it.
MatmulProblem matmul_problem(const StridedOperand& a, const StridedOperand& b,
                             const std::vector<int64_t>& out_shape);

struct BatchEntryOffsets {
  int64_t a = 0, b = 0;  // element offsets of batch entry t's matrices into a and b
};
// Entry t counts row-major over `batch`; its result is at t * m * n.
BatchEntryOffsets batch_entry_offsets(const MatmulProblem& problem, int64_t t);

// Calls visit(t, a_offset, b_offset) for each batch entry t, in order.
template <class Visit>
void for_each_batch_entry(const MatmulProblem& problem, Visit&& visit) {
  for (int64_t t = 0; t < problem.batches; ++t) {
    const BatchEntryOffsets offsets = batch_entry_offsets(problem, t);
    visit(t, offsets.a, offsets.b);
  }
}

}  // namespace kiln::externs
