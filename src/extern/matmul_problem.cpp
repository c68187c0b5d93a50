#include "extern/matmul_problem.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::externs {

MatmulProblem matmul_problem(const StridedOperand& a_in, const StridedOperand& b_in,
                             const std::vector<int64_t>& out_shape) {
  // Promote 1-D operands to matrices: (K,) @ B -> (1, K); A @ (K,) -> (K, 1).
  StridedOperand a = a_in, b = b_in;
  if (a.shape.size() == 1) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b.shape.size() == 1) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  MatmulProblem p;
  const size_t ra = a.shape.size(), rb = b.shape.size();
  p.m = a.shape[ra - 2], p.k = a.shape[ra - 1], p.n = b.shape[rb - 1];
  p.a_row = a.strides[ra - 2], p.a_column = a.strides[ra - 1];
  p.b_row = b.strides[rb - 2], p.b_column = b.strides[rb - 1];
  const size_t rank = std::max(ra, rb) - 2;
  p.batch.assign(rank, 1);
  p.a_batch_strides.assign(rank, 0);
  p.b_batch_strides.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    long da = long(d) - long(rank) + long(ra) - 2, db = long(d) - long(rank) + long(rb) - 2;
    int64_t ea = da >= 0 ? a.shape[size_t(da)] : 1, eb = db >= 0 ? b.shape[size_t(db)] : 1;
    p.batch[d] = std::max(ea, eb);
    if (ea != 1) p.a_batch_strides[d] = a.strides[size_t(da)];
    if (eb != 1) p.b_batch_strides[d] = b.strides[size_t(db)];
    p.batches *= p.batch[d];
  }
  int64_t out_elements = 1;
  for (int64_t e : out_shape) out_elements *= e;
  if (out_elements != p.batches * p.m * p.n || b.shape[rb - 2] != p.k)
    throw Error(ErrorKind::Internal, "kiln: matmul: operand and result shapes disagree");
  return p;
}

BatchEntryOffsets batch_entry_offsets(const MatmulProblem& problem, int64_t t) {
  BatchEntryOffsets offsets;
  for (size_t d = problem.batch.size(); d-- > 0;) {
    const int64_t index = t % problem.batch[d];
    t /= problem.batch[d];
    offsets.a += index * problem.a_batch_strides[d];
    offsets.b += index * problem.b_batch_strides[d];
  }
  return offsets;
}

}  // namespace kiln::externs
