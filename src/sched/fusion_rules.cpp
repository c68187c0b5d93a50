#include "sched/fusion_rules.h"

#include <utility>

#include "ir/printer.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::ValueId;

// The materialized values `root` reads, through the values inlined into it.
std::set<ValueId> buffers_read(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                               ValueId root) {
  std::set<ValueId> result, seen;
  std::vector<ValueId> stack(graph.node(root).inputs);
  while (!stack.empty()) {
    ValueId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    if (buffer_of[static_cast<size_t>(id)] >= 0) {
      result.insert(id);
      continue;
    }
    const Node& node = graph.node(id);
    stack.insert(stack.end(), node.inputs.begin(), node.inputs.end());
  }
  return result;
}

// Whether `root` reads the materialized value `stored` only at the index it writes itself: every
// path between them runs through elementwise ops of one shape. Joining the kernel that stores
// `stored`, it then uses the value that iteration computed (Lowering::stored_here: never a load
// of what the kernel stores): a batch norm's variance, its reciprocal square root and
// running-variance update in one kernel, not three.
bool reads_at_own_index(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                        ValueId root, ValueId stored) {
  const ir::Shape& shape = graph.node(stored).shape;
  std::set<std::pair<ValueId, bool>> seen;
  // (value, whether every op from root down to it keeps the index)
  std::vector<std::pair<ValueId, bool>> stack{{root, true}};
  while (!stack.empty()) {
    auto [id, same_index] = stack.back();
    stack.pop_back();
    if (id == stored) {
      if (!same_index) return false;
      continue;
    }
    const bool other_buffer = id != root && buffer_of[static_cast<size_t>(id)] >= 0;
    if (other_buffer || !seen.insert({id, same_index}).second) continue;
    const Node& node = graph.node(id);
    const bool keeps = same_index && ir::is_elementwise(node.op) && node.shape == shape;
    for (ValueId input : node.inputs) stack.push_back({input, keeps});
  }
  return true;
}

}  // namespace

std::string describe_value(const ir::Graph& graph, ValueId id) {
  const Node& node = graph.node(id);
  return "%" + std::to_string(id) + " (" + std::string(ir::op_name(node.op)) +
         (node.location.empty() ? "" : " at " + node.location) + ")";
}

std::string fusion_refusal(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                           const std::set<ValueId>& group, ValueId front, ValueId root,
                           bool copy) {
  const Node& node = graph.node(root);
  if (!copy) {
    if (node.op == ir::Op::matmul) return "matmul is an extern call (BLAS) on whole buffers";
    if (node.op == ir::Op::convolution)
      return "convolution is an extern call (oneDNN) on whole buffers";
    if (node.op == ir::Op::convolution_backward_input ||
        node.op == ir::Op::convolution_backward_weight)
      return std::string(ir::op_name(node.op)) + " is an extern call (oneDNN) on whole buffers";
    if (node.op == ir::Op::scatter) return "a scatter writes its updates in order, in its own kernel";
    if (node.op == ir::Op::loop) return "a loop runs the kernels of its body";
    if (ir::is_scan(node.op)) return std::string(ir::op_name(node.op)) + " is a scan, in its own kernel";
  }
  const ir::Shape& shape = graph.node(front).shape;
  if (shape != node.shape)
    return "different iteration domains " + ir::shape_string(shape) + " and " +
           ir::shape_string(node.shape);
  for (ValueId read : buffers_read(graph, buffer_of, root))
    if (group.count(read) && !reads_at_own_index(graph, buffer_of, root, read))
      return "it reads " + describe_value(graph, read) + ", which that kernel stores, at other "
             "indices (one loop nest cannot read back what another iteration writes)";
  return "";
}

}  // namespace kiln::sched
