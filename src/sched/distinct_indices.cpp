#include "sched/distinct_indices.h"

#include <algorithm>
#include <optional>

namespace kiln::sched {
namespace {

// value = slope * iota + offset, over the index's one dimension.
struct Affine {
  int64_t slope = 0, offset = 0;
};

// The extent of a 1-D value with a constant size, or -1.
int64_t extent_1d(const ir::Node& node) {
  if (node.shape.size() != 1 || !node.shape[0].is_constant()) return -1;
  return node.shape[0].constant();
}

std::optional<Affine> affine(const ir::Graph& graph, ir::ValueId id, int64_t extent, int depth) {
  if (depth > 16) return std::nullopt;
  const ir::Node& node = graph.node(id);
  if (!is_integer(node.dtype)) return std::nullopt;
  auto operand = [&](size_t k) { return affine(graph, node.inputs[k], extent, depth + 1); };
  switch (node.op) {
    case ir::Op::constant:
      if ((!node.shape.empty() && extent_1d(node) != extent) || !node.attrs.scalar.is_integer)
        return std::nullopt;
      return Affine{0, node.attrs.scalar.i};
    case ir::Op::iota:
      if (extent_1d(node) != extent || node.attrs.axis != 0) return std::nullopt;
      return Affine{1, 0};
    case ir::Op::broadcast:
    case ir::Op::reshape:
    case ir::Op::cast: {  // a 0-d constant broadcast, or the same one dimension
      const ir::Node& input = graph.node(node.inputs[0]);
      if (!input.shape.empty() && extent_1d(input) != extent) return std::nullopt;
      return operand(0);
    }
    case ir::Op::neg: {
      std::optional<Affine> x = operand(0);
      if (!x) return std::nullopt;
      return Affine{-x->slope, -x->offset};
    }
    case ir::Op::add:
    case ir::Op::sub: {
      std::optional<Affine> x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      int64_t sign = node.op == ir::Op::add ? 1 : -1;
      return Affine{x->slope + sign * y->slope, x->offset + sign * y->offset};
    }
    case ir::Op::mul: {
      std::optional<Affine> x = operand(0), y = operand(1);
      if (!x || !y) return std::nullopt;
      if (y->slope == 0) return Affine{x->slope * y->offset, x->offset * y->offset};
      if (x->slope == 0) return Affine{y->slope * x->offset, y->offset * x->offset};
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<SliceIndex> slice_index(const ir::Graph& graph, ir::ValueId index, int64_t size) {
  const ir::Node& node = graph.node(index);
  const int64_t extent = extent_1d(node);
  if (extent <= 0 || extent > (int64_t(1) << 40) || size <= 0) return std::nullopt;
  std::optional<Affine> form = affine(graph, index, extent, 0);
  if (!form || form->slope == 0 || form->slope > size || form->slope < -size) return std::nullopt;
  const __int128 first = form->offset, last = first + __int128(form->slope) * (extent - 1);
  const __int128 low = std::min(first, last), high = std::max(first, last);
  if (low >= 0 && high < size) return SliceIndex{form->slope, form->offset};
  if (low >= -size && high < 0) return SliceIndex{form->slope, form->offset + size};  // wrapped
  return std::nullopt;
}

bool one_position(const ir::Shape& index_shape) {
  return std::all_of(index_shape.begin(), index_shape.end(),
                     [](const ir::Dim& d) { return d.is_constant() && d.constant() == 1; });
}

bool distinct_indices(const ir::Graph& graph, ir::ValueId index, int64_t size) {
  return one_position(graph.node(index).shape) || slice_index(graph, index, size).has_value();
}

}  // namespace kiln::sched
