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

bool is_view(Op op) {
  return op == Op::reshape || op == Op::permute || op == Op::slice || op == Op::broadcast ||
         op == Op::flip;
}

// The nodes other than `scatter` that read `base`, through views; false when one of them (or a
// view, returned as an output) is not something the scatter depends on.
bool readers_of(const ir::Graph& graph, const std::vector<std::vector<ValueId>>& users,
                const std::set<ValueId>& outputs, ValueId base, ValueId scatter,
                std::vector<ValueId>& readers) {
  std::vector<ValueId> pending{base};
  std::set<ValueId> seen;
  while (!pending.empty()) {
    ValueId value = pending.back();
    pending.pop_back();
    for (ValueId user : users[static_cast<size_t>(value)]) {
      if (user == scatter || !seen.insert(user).second) continue;
      if (!depends_on(graph, scatter, user)) return false;
      if (is_view(graph.node(user).op) && !outputs.count(user)) {
        pending.push_back(user);
      } else {
        readers.push_back(user);
      }
    }
  }
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
    // Every other reader of the base (looking through views: a reshape of the whole array
    // that one element is gathered from reads one element) must run before the scatter writes
    // (the scatter depends on it), and gets a buffer of its own: values computed from the base
    // later (inlined into a kernel after the write) must not read the overwritten buffer. When
    // the readers span most of the array (a stencil's interior), one pass into a new buffer is
    // cheaper than in place.
    std::vector<ValueId> readers;
    if (!readers_of(graph, users, outputs, base, id, readers)) continue;
    int64_t read_elements = 0;
    for (ValueId reader : readers) read_elements += ir::element_count(graph.node(reader).shape);
    if (2 * read_elements > ir::element_count(node.shape)) continue;
    plan.base_of[static_cast<size_t>(id)] = base;
    plan.compute_first.insert(readers.begin(), readers.end());
  }
  return plan;
}

}  // namespace kiln::sched
