#include "sched/strided_views.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

bool is_view(Op op) {
  return op == Op::permute || op == Op::slice || op == Op::broadcast || op == Op::reshape;
}

// A link of a chain strided_view() walks: a view op, or (through_casts) a widening cast of
// bfloat16 to float32, which keeps the layout.
bool is_link(const ir::Graph& graph, const Node& node, bool through_casts) {
  return is_view(node.op) ||
         (through_casts && node.op == Op::cast && node.dtype == DType::Float32 &&
          graph.node(node.inputs[0]).dtype == DType::BFloat16);
}

// Strides for `view.shape` -> `shape` without moving data: walking from the innermost
// dimension, each run of input dimensions that is one contiguous block in memory (a chunk) may
// be split or merged freely; a new dimension boundary inside a non-contiguous step needs a copy.
std::optional<std::vector<int64_t>> reshaped_strides(const StridedView& view,
                                                     const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t elements = 1;
  for (int64_t extent : shape) elements *= extent;
  if (elements == 0 || view.shape.empty()) return strides;  // nothing, or one element, is read
  const auto& old_shape = view.shape;
  const auto& old_strides = view.strides;
  int64_t out = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t chunk_elements = 1, out_elements = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    chunk_elements *= old_shape[static_cast<size_t>(d)];
    bool chunk_ends =
        d == 0 || (old_shape[static_cast<size_t>(d - 1)] != 1 &&
                   old_strides[static_cast<size_t>(d - 1)] != chunk_elements * chunk_stride);
    if (!chunk_ends) continue;
    while (out >= 0 && (out_elements < chunk_elements || shape[static_cast<size_t>(out)] == 1)) {
      strides[static_cast<size_t>(out)] = out_elements * chunk_stride;
      out_elements *= shape[static_cast<size_t>(out)];
      --out;
    }
    if (out_elements != chunk_elements) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[static_cast<size_t>(d - 1)];
      chunk_elements = out_elements = 1;
    }
  }
  if (out != -1) return std::nullopt;
  return strides;
}

bool apply(const Node& node, StridedView& view) {
  std::vector<int64_t> shape = ir::to_ints(node.shape);
  switch (node.op) {
    case Op::permute: {
      StridedView next{view.offset, {}, {}};
      for (int64_t axis : node.attrs.permutation) {
        int64_t d = axis < 0 ? axis + static_cast<int64_t>(view.shape.size()) : axis;
        next.shape.push_back(view.shape[static_cast<size_t>(d)]);
        next.strides.push_back(view.strides[static_cast<size_t>(d)]);
      }
      view = std::move(next);
      return true;
    }
    case Op::slice:
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != 0) view.offset += node.attrs.starts[d] * view.strides[d];
        view.strides[d] *= node.attrs.steps[d];
      }
      view.shape = shape;
      return true;
    case Op::broadcast: {
      size_t lead = shape.size() - view.shape.size();
      std::vector<int64_t> strides(shape.size(), 0);
      for (size_t d = 0; d < view.shape.size(); ++d)
        strides[lead + d] = view.shape[d] == shape[lead + d] ? view.strides[d] : 0;
      view.shape = shape;
      view.strides = std::move(strides);
      return true;
    }
    case Op::reshape: {
      std::optional<std::vector<int64_t>> strides = reshaped_strides(view, shape);
      if (!strides) return false;
      view.shape = shape;
      view.strides = std::move(*strides);
      return true;
    }
    case Op::cast:  // a widening cast: the same elements (is_link)
      return true;
    default:
      return false;
  }
}

}  // namespace

ValueId view_base(const ir::Graph& graph, ValueId id, bool through_casts) {
  while (is_link(graph, graph.node(id), through_casts)) id = graph.node(id).inputs[0];
  return id;
}

std::optional<StridedView> strided_view(const ir::Graph& graph, ValueId id,
                                        const std::vector<int64_t>& base_strides,
                                        bool through_casts) {
  std::vector<ValueId> chain;
  for (ValueId at = id; is_link(graph, graph.node(at), through_casts);
       at = graph.node(at).inputs[0])
    chain.push_back(at);
  ValueId base = chain.empty() ? id : graph.node(chain.back()).inputs[0];
  StridedView view{0, ir::to_ints(graph.node(base).shape), base_strides};
  for (size_t k = chain.size(); k-- > 0;)
    if (!apply(graph.node(chain[k]), view)) return std::nullopt;
  return view;
}

bool reshaped_input(const ir::Graph& graph, ValueId id) {
  if (graph.node(id).op != Op::reshape) return false;
  while (graph.node(id).op == Op::reshape) id = graph.node(id).inputs[0];
  return graph.node(id).op == Op::parameter;
}

bool needs_packed_operand(const Node& node, size_t k) {
  if (node.op == Op::matmul) return k == 2;  // a bias cuBLASLt reads as a packed vector
  return ir::is_convolution(node.op) && node.attrs.filters_last && k <= 1;  // not a bias
}

bool reads_narrow_operand(const Node& node, size_t k, bool narrow_matmul_operands) {
  return narrow_matmul_operands && node.op == Op::matmul && k < 2;
}

bool packed_view(const StridedView& view) { return row_major(view.shape, view.strides); }

bool row_major(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  if (strides.size() != shape.size()) return false;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

}  // namespace kiln::sched
