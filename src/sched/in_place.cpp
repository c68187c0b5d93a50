#include "sched/in_place.h"

#include <algorithm>

namespace kiln::sched {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

// Whether `target` is reachable from `from`'s inputs (node ids only decrease along inputs, so
// the search stops below `target`).
bool depends_on(const ir::Graph& graph, ValueId from, ValueId target) {
  std::vector<ValueId> stack(graph.node(from).inputs);
  std::set<ValueId> seen;
  while (!stack.empty()) {
    ValueId id = stack.back();
    stack.pop_back();
    if (id == target) return true;
    if (id < target || !seen.insert(id).second) continue;
    const Node& node = graph.node(id);
    stack.insert(stack.end(), node.inputs.begin(), node.inputs.end());
  }
  return false;
}

}  // namespace

InPlacePlan plan_in_place(const ir::Graph& graph, const std::set<ValueId>& materialized,
                          const std::vector<int32_t>& donated) {
  InPlacePlan plan;
  plan.base_of.assign(static_cast<size_t>(graph.size()), -1);
  std::vector<std::vector<ValueId>> users = graph.users();
  std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  std::set<int64_t> donated_inputs(donated.begin(), donated.end());
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.op != Op::scatter) continue;
    ValueId base = node.inputs[0];
    const Node& base_node = graph.node(base);
    bool own_buffer = base_node.op == Op::parameter
                          ? donated_inputs.count(base_node.attrs.index) != 0
                          : base_node.op != Op::constant_array && base_node.op != Op::loop_result;
    if (!own_buffer || !materialized.count(base) || outputs.count(base)) continue;
    bool others_first = true;
    for (ValueId user : users[static_cast<size_t>(base)])
      if (user != id && !depends_on(graph, id, user)) others_first = false;
    if (!others_first) continue;
    // Values that read the base must be computed into a buffer of their own first: for an
    // update of most of the array (a stencil's interior) one pass into a new buffer is cheaper.
    bool reads_base = users[static_cast<size_t>(base)].size() > 1;
    if (reads_base &&
        2 * ir::element_count(graph.node(node.inputs[2]).shape) > ir::element_count(node.shape))
      continue;
    plan.base_of[static_cast<size_t>(id)] = base;
    if (users[static_cast<size_t>(base)].size() > 1)  // reads of the base happen first
      for (size_t input = 1; input < 3; ++input)
        if (graph.node(node.inputs[input]).op != Op::constant)
          plan.compute_first.insert(node.inputs[input]);
  }
  return plan;
}

}  // namespace kiln::sched
