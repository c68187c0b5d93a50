// The reference argsort and sort: each row's positions ordered by std::stable_sort on the
// values in their compute type (NaN greater than every number), a comparison independent of the
// CPU kernel's keys (src/extern/sort.cpp); sort's values are the elements at those positions.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ir/interpreter_kernels.h"

namespace kiln::ir::interpreter_detail {
namespace {

// The positions; with `values` also the operand's elements at them (`values`, of the node's
// shape and the operand's dtype).
Array positions(const Node& node, const Array& operand, Array* values) {
  View in = view_of(operand);
  Array output = Array::empty(DType::Int64, to_ints(node.shape));
  const auto axis = static_cast<size_t>(node.attrs.axis);
  if (in.shape.empty() || axis >= in.shape.size() || output.shape().size() != in.shape.size())
    fail(node, ErrorKind::Internal, "argsort's operand does not fit its node");
  const int64_t n = in.shape[axis];
  const int64_t k = output.shape()[axis];
  if (output.size() == 0) return output;
  std::vector<int64_t> order(static_cast<size_t>(n));
  const bool descending = node.attrs.descending;
  const int64_t element = dtype_size(in.dtype);
  std::vector<int64_t> rows_shape = in.shape;
  rows_shape[axis] = 1;
  std::vector<int64_t> out_strides = contiguous_strides(from_ints(output.shape()));
  int64_t* out = output.data_as<int64_t>();
  IndexWalker walker(rows_shape, {in.strides, out_strides});
  const int64_t rows = element_count(from_ints(rows_shape));
  visit_dtype(in.dtype, [&](auto traits) {
    using In = decltype(traits);
    using Compute = typename In::Compute;
    std::vector<Compute> row(static_cast<size_t>(n));
    // (a before b): ascending with NaN last; descending with NaN first. -0.0 == 0.0.
    auto before = [&](int64_t a, int64_t b) {
      const Compute x = row[static_cast<size_t>(a)], y = row[static_cast<size_t>(b)];
      const bool x_nan = x != x, y_nan = y != y;
      if (x_nan || y_nan) return descending ? x_nan && !y_nan : !x_nan && y_nan;
      return descending ? y < x : x < y;
    };
    for (int64_t r = 0; r < rows; ++r, walker.advance()) {
      for (int64_t i = 0; i < n; ++i)
        row[static_cast<size_t>(i)] = load<In>(in.data, walker.offset(0) + i * in.strides[axis]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t place = walker.offset(1) + j * out_strides[axis];
        const auto& picks = node.attrs.starts;  // picked positions (passes/sort_picks.cpp)
        out[place] = order[static_cast<size_t>(picks.empty() ? j : picks[static_cast<size_t>(j)])];
        if (values != nullptr)  // the element itself: -0.0 and NaN keep their bits
          std::memcpy(static_cast<char*>(values->data()) + place * element,
                      in.data + (walker.offset(0) + out[place] * in.strides[axis]) * element,
                      static_cast<size_t>(element));
      }
    }
  });
  return output;
}

}  // namespace

Array evaluate_sort(const Node& node, const Array& operand) {
  if (node.op == Op::argsort) return positions(node, operand, nullptr);
  Array values = Array::empty(operand.dtype(), to_ints(node.shape));
  positions(node, operand, &values);
  return values;
}

}  // namespace kiln::ir::interpreter_detail
