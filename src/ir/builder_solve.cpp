// The checked factory of solve (an extern op: LAPACK's gesv, src/extern/solve.h).
#include <algorithm>

#include "ir/builder.h"
#include "ir/builder_checker.h"

namespace kiln::ir {

using builder_detail::Checker;
using builder_detail::ValueType;

ValueId Builder::solve(ValueId a, ValueId b) {
  Checker checker(Op::solve, graph_, location_);
  ValueType matrix = checker.operand(a);
  ValueType right = checker.operand(b);
  checker.expect_same_dtype(matrix, right);
  if (matrix.dtype != DType::Float32 && matrix.dtype != DType::Float64)
    checker.fail(ErrorKind::Type, "solve takes float32 or float64 operands, got " +
                                      std::string(dtype_name(matrix.dtype)));
  const Shape& m = matrix.shape;
  const Shape& r = right.shape;
  if (m.size() < 2 || m[m.size() - 1] != m[m.size() - 2] || r.size() != m.size() ||
      r[r.size() - 2] != m.back() || !std::equal(m.begin(), m.end() - 2, r.begin()))
    checker.fail(ErrorKind::Value, "solve takes a (.., n, n) and a (.., n, k) of one batch "
                                   "shape, got " + shape_string(m) + " and " + shape_string(r));
  return add(Op::solve, matrix.dtype, right.shape, {a, b});
}

}  // namespace kiln::ir
