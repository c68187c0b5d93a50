// Matmul operands computed in the order of what they are computed from. Pointwise work on a
// transposed value that only a matmul reads, `(k.transpose(-2, -1) * scale)` in torch's math
// attention (`q @ (kᵀ · s)`), or a bfloat16 linear layer's weight cast to float32
// (`cast(wᵀ)`), is a kernel that reads along one dimension and writes along another: half its
// memory accesses stride (BERT-base at 8x128 on an H200: 6.1 us a layer against 3.0 us for the
// same work on q; a bfloat16 2048x512 weight on the CPU: 1M strided reads a call). BLAS and cuBLAS read either order of an operand's last
// two dimensions at no cost, so the pass computes the pointwise work in its inputs' order and
// hands the matmul its transpose as a view:
//   f(permute(x, p)) -> views -> matmul   becomes   swap(f(permute(x, q))) -> views -> matmul
// with q = p, its last two entries swapped, when p puts x's innermost dimension second to last.
// The views between the work and the matmul must leave the last two dimensions alone (batch
// reshapes, broadcasts and permutes), so that they still read the result in place.
#include <algorithm>
#include <numeric>
#include <vector>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::Op;
using ir::ValueId;

namespace {

std::vector<int64_t> last_two_swapped(std::vector<int64_t> order) {
  std::swap(order[order.size() - 2], order[order.size() - 1]);
  return order;
}

ir::Shape last_two_swapped(ir::Shape shape) {
  std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
  return shape;
}

// Whether a view node keeps the last two dimensions of its operand as the last two of its
// result (in either order), only the batch dimensions changing.
bool keeps_matrix_dims(const ir::Graph& graph, const Node& node) {
  if (node.op != Op::permute && node.op != Op::broadcast && node.op != Op::reshape) return false;
  const ir::Shape& from = graph.node(node.inputs[0]).shape;
  const ir::Shape& to = node.shape;
  if (from.size() < 2 || to.size() < 2) return false;
  const size_t rank = to.size();
  switch (node.op) {
    case Op::permute: {
      const std::vector<int64_t>& p = node.attrs.permutation;
      const int64_t a = p[rank - 2], b = p[rank - 1];
      return std::min(a, b) == int64_t(rank) - 2 && std::max(a, b) == int64_t(rank) - 1;
    }
    default:  // a broadcast or reshape
      return from[from.size() - 2] == to[rank - 2] && from.back() == to.back();
  }
}

// A uniform operand of pointwise work: a splat constant, or a broadcast of one element.
bool uniform(const ir::Graph& graph, ValueId id) {
  const Node& node = graph.node(id);
  if (node.op == Op::constant) return true;
  return node.op == Op::broadcast && ir::is_static(graph.node(node.inputs[0]).shape) &&
         ir::element_count(graph.node(node.inputs[0]).shape) == 1;
}

// The permutation `id`'s pointwise work applies to all its non-uniform operands, when it puts
// their innermost dimension second to last; empty otherwise.
std::vector<int64_t> transposing_order(const ir::Graph& graph, ValueId id) {
  const Node& node = graph.node(id);
  if ((!ir::is_elementwise(node.op) && node.op != Op::cast) || node.shape.size() < 2) return {};
  const int64_t rank = static_cast<int64_t>(node.shape.size());
  std::vector<int64_t> order;
  for (ValueId input : node.inputs) {
    if (uniform(graph, input)) continue;
    const Node& operand = graph.node(input);
    if (operand.op != Op::permute || (!order.empty() && operand.attrs.permutation != order))
      return {};
    order = operand.attrs.permutation;
  }
  return !order.empty() && order[static_cast<size_t>(rank - 2)] == rank - 1 ? order
                                                                            : std::vector<int64_t>{};
}

}  // namespace

ir::Graph order_matmul_operands(const ir::Graph& graph) {
  std::vector<int> uses(static_cast<size_t>(graph.size()), 0);
  for (const Node& node : graph.nodes())
    for (ValueId input : node.inputs) ++uses[static_cast<size_t>(input)];
  for (ValueId output : graph.outputs()) ++uses[static_cast<size_t>(output)];
  // The pointwise nodes to compute in their operands' order: each read only through views of
  // the matrix dimensions by one matmul operand.
  std::vector<bool> reorder(static_cast<size_t>(graph.size()), false);
  bool any = false;
  for (const Node& node : graph.nodes()) {
    if (node.op != Op::matmul) continue;
    for (size_t k = 0; k < 2; ++k) {
      ValueId id = node.inputs[k];
      while (uses[static_cast<size_t>(id)] == 1 && keeps_matrix_dims(graph, graph.node(id)))
        id = graph.node(id).inputs[0];
      if (uses[static_cast<size_t>(id)] == 1 && !transposing_order(graph, id).empty())
        reorder[static_cast<size_t>(id)] = any = true;
    }
  }
  if (!any) return graph;
  ir::Graph result;
  ir::Builder b(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  auto mapped = [&](ValueId id) { return replacement[static_cast<size_t>(id)]; };
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    b.set_location(node.location);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(mapped(input));
    if (!reorder[static_cast<size_t>(id)]) {
      replacement[static_cast<size_t>(id)] = b.copy_node(node, std::move(inputs));
      continue;
    }
    std::vector<int64_t> swap(node.shape.size());
    std::iota(swap.begin(), swap.end(), 0);
    swap = last_two_swapped(swap);
    const std::vector<int64_t> order = last_two_swapped(transposing_order(graph, id));
    Node work = node;
    work.shape = last_two_swapped(node.shape);
    std::vector<ValueId> reordered;
    for (ValueId input : node.inputs) {
      const Node& operand = graph.node(input);
      if (operand.op == Op::permute) {
        reordered.push_back(b.permute(mapped(operand.inputs[0]), order));
      } else if (operand.op == Op::constant) {
        Node splat = operand;
        splat.shape = work.shape;
        reordered.push_back(b.copy_node(splat, {}));
      } else {
        reordered.push_back(b.broadcast(mapped(operand.inputs[0]), work.shape));
      }
    }
    replacement[static_cast<size_t>(id)] = b.permute(b.copy_node(work, std::move(reordered)), swap);
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(mapped(output));
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
