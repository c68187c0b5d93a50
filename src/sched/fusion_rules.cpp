#include "sched/fusion_rules.h"

#include <utility>

#include "ir/printer.h"

namespace kiln::sched {
namespace {

using ir::Node;
using ir::ValueId;

// A value of `group` that `root` reads at other indices than its own, or -1: a walk from root
// through the values inlined into it, down to the materialized ones, noting whether every op on
// the way keeps the index (elementwise, of root's shape). A group value reached that way joins
// the kernel with root: root uses the value the iteration computed (Lowering::stored_here, never
// a load of what the kernel stores): a batch norm's variance, its reciprocal square root and
// running-variance update in one kernel, not three. One walk per root, each value visited at
// most twice (a graph unrolled from a Python loop inlines thousands of values into a root).
ValueId read_at_other_indices(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
                              const std::set<ValueId>& group, ValueId root) {
  // Ops that read their operands at their own index, for root's elements: elementwise ops,
  // and reshapes that only add or drop dimensions of extent 1 (a batch norm's (64,) mean saved
  // as (1, 64, 1, 1)).
  const ir::Shape elements = ir::without_unit_dims(graph.node(root).shape);
  auto keeps_index = [&](const Node& node) {
    if (ir::without_unit_dims(node.shape) != elements) return false;
    return ir::is_elementwise(node.op) ||
           (node.op == ir::Op::reshape &&
            ir::without_unit_dims(graph.node(node.inputs[0]).shape) == elements);
  };
  std::vector<uint8_t> seen(static_cast<size_t>(graph.size()), 0);  // 1: same index, 2: other
  std::vector<std::pair<ValueId, bool>> stack;
  const bool root_keeps = keeps_index(graph.node(root));
  for (ValueId input : graph.node(root).inputs) stack.push_back({input, root_keeps});
  while (!stack.empty()) {
    auto [id, same_index] = stack.back();
    stack.pop_back();
    uint8_t& visited = seen[static_cast<size_t>(id)];
    const uint8_t bit = same_index ? 1 : 2;
    if (visited & bit) continue;
    visited |= bit;
    if (buffer_of[static_cast<size_t>(id)] >= 0) {  // materialized: read from its buffer
      if (!same_index && group.count(id)) return id;
      continue;
    }
    const Node& node = graph.node(id);
    const bool keeps = same_index && keeps_index(node);
    for (ValueId input : node.inputs) stack.push_back({input, keeps});
  }
  return -1;
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
    if (node.op == ir::Op::attention) return "attention is an extern call on whole buffers";
    if (node.op == ir::Op::convolution)
      return "convolution is an extern call (oneDNN) on whole buffers";
    if (node.op == ir::Op::convolution_backward_input ||
        node.op == ir::Op::convolution_backward_weight)
      return std::string(ir::op_name(node.op)) + " is an extern call (oneDNN) on whole buffers";
    if (ir::is_sort(node.op))
      return std::string(ir::op_name(node.op)) + " is an extern call (a sort) on whole buffers";
    if (node.op == ir::Op::solve) return "solve is an extern call (LAPACK) on whole buffers";
    if (node.op == ir::Op::scatter) return "a scatter writes its updates in order, in its own kernel";
    if (node.op == ir::Op::loop) return "a loop runs the kernels of its body";
    if (ir::is_scan(node.op)) return std::string(ir::op_name(node.op)) + " is a scan, in its own kernel";
  }
  // Shapes that differ in dimensions of extent 1 only iterate the same elements in the same
  // order (ProgramBuilder::build_pointwise_kernel maps the index); a permute's loops follow
  // its operand's shape, so permutes join on equal shapes only.
  const Node& first = graph.node(front);
  const bool permutes = first.op == ir::Op::permute || node.op == ir::Op::permute;
  if (permutes ? first.shape != node.shape
               : ir::without_unit_dims(first.shape) != ir::without_unit_dims(node.shape))
    return "different iteration domains " + ir::shape_string(first.shape) + " and " +
           ir::shape_string(node.shape);
  const ValueId read = read_at_other_indices(graph, buffer_of, group, root);
  if (read >= 0)
    return "it reads " + describe_value(graph, read) + ", which that kernel stores, at other "
           "indices (one loop nest cannot read back what another iteration writes)";
  return "";
}

}  // namespace kiln::sched
