// Checked factories for sorting: argsort and sort (extern ops: src/extern/sort.h) and the
// take_along_axis that reads values at argsort's positions.
#include "ir/builder.h"
#include "ir/builder_checker.h"

namespace kiln::ir {

using builder_detail::Checker;
using builder_detail::ValueType;

ValueId Builder::argsort(ValueId a, int64_t axis, bool descending, int64_t k) {
  return sort_node(Op::argsort, a, axis, descending, k);
}

ValueId Builder::sort(ValueId a, int64_t axis, bool descending, int64_t k) {
  return sort_node(Op::sort, a, axis, descending, k);
}

ValueId Builder::sort_node(Op op, ValueId a, int64_t axis, bool descending, int64_t k) {
  Checker checker(op, graph_, location_);
  ValueType type = checker.operand(a);
  if (is_complex(type.dtype))
    checker.fail(ErrorKind::Unsupported, "complex values have no order kiln sorts by (shape " +
                                             shape_string(type.shape) + ")");
  if (type.shape.empty()) checker.fail(ErrorKind::Axis, "cannot sort a zero-dimensional array");
  Attrs attrs;
  attrs.axis = checker.axis(axis, type.shape);
  attrs.descending = descending;
  Shape shape = type.shape;
  Dim& extent = shape[static_cast<size_t>(attrs.axis)];
  if (k >= 0) {
    if (!extent.is_constant())
      checker.fail(ErrorKind::Unsupported, "k of a sort along the symbolic axis " +
                                               std::to_string(attrs.axis) + " of " +
                                               shape_string(type.shape));
    if (k > extent.constant())
      checker.fail(ErrorKind::Value, "k = " + std::to_string(k) + " is larger than axis " +
                                         std::to_string(attrs.axis) + " of " +
                                         shape_string(type.shape));
    extent = Dim(k);
  }
  return add(op, op == Op::argsort ? DType::Int64 : type.dtype, std::move(shape), {a},
             std::move(attrs));
}

ValueId Builder::take_along_axis(ValueId a, ValueId indices, int64_t axis) {
  Checker checker(Op::gather, graph_, location_);
  ValueType type = checker.operand(a);
  ValueType index_type = checker.operand(indices);
  if (index_type.dtype != DType::Int64 || index_type.rank() != type.rank())
    checker.fail(ErrorKind::Type, "take_along_axis needs int64 indices of the array's rank, got " +
                                      std::string(dtype_name(index_type.dtype)) +
                                      shape_string(index_type.shape) + " for " +
                                      shape_string(type.shape));
  const int along = checker.axis(axis, type.shape);
  if (type.rank() == 1) return gather(a, indices, 0);
  // flat = sum over d of (d == axis ? indices : index d) * (a's row-major stride of d)
  ValueId flat = -1;
  Dim stride(1);
  for (int d = type.rank() - 1; d >= 0; --d) {
    ValueId position = d == along ? indices : iota(DType::Int64, index_type.shape, d);
    ValueId factor = stride.is_constant()
                         ? constant(Scalar::of_int(stride.constant()), DType::Int64)
                         : size(stride);
    ValueId term = binary(Op::mul, position, factor);
    flat = flat < 0 ? term : binary(Op::add, flat, term);
    stride = stride * type.shape[static_cast<size_t>(d)];
  }
  return gather(reshape(a, {stride}), flat, 0);
}

}  // namespace kiln::ir
