#include "sched/in_place.h"

#include <algorithm>

namespace kiln::sched {
namespace {

using ir::Node;
using ir::Op;
using ir::ValueId;

// The values computed from `base` (through any ops) that must be computed into buffers of their
// own before `scatter` overwrites base's buffer: those read after the scatter (by a later node
// or as outputs: the later node must not recompute them from the overwritten buffer) and the
// scatter's own index and values (read while it writes). False when a node after the scatter
// reads base itself.
bool compute_before(const ir::Graph& graph, const std::vector<std::vector<ValueId>>& users,
                    const std::set<ValueId>& outputs, ValueId base, ValueId scatter,
                    std::vector<ValueId>& first) {
  for (ValueId user : users[static_cast<size_t>(base)])
    if (user > scatter) return false;
  std::vector<ValueId> pending{base};
  std::set<ValueId> derived;
  while (!pending.empty()) {
    ValueId value = pending.back();
    pending.pop_back();
    bool read_later = value != base && outputs.count(value);
    for (ValueId user : users[static_cast<size_t>(value)]) {
      if (user == scatter) continue;
      if (user > scatter) {
        read_later = true;
      } else if (derived.insert(user).second) {
        pending.push_back(user);
      }
    }
    if (read_later) first.push_back(value);
  }
  const Node& node = graph.node(scatter);
  for (size_t input = 1; input < 3; ++input)
    if (derived.count(node.inputs[input])) first.push_back(node.inputs[input]);
  return true;
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
    // What is computed from the base and needed after the write gets a buffer first (its
    // later readers must not recompute it from the overwritten buffer). When that is most of
    // the array (a stencil's interior), one pass into a new buffer is cheaper than in place;
    // values stored anyway (products, reductions, other scatters) cost nothing extra.
    std::vector<ValueId> first;
    if (!compute_before(graph, users, outputs, base, id, first)) continue;
    int64_t elements = 0;  // extra work: what gets a buffer only because of the write
    for (ValueId value : first)
      if (!materialized.count(value)) elements += ir::element_count(graph.node(value).shape);
    if (2 * elements > ir::element_count(node.shape)) continue;
    plan.base_of[static_cast<size_t>(id)] = base;
    plan.compute_first.insert(first.begin(), first.end());
  }
  return plan;
}

}  // namespace kiln::sched
