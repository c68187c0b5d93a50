#include "sched/loop_in_place.h"

#include <algorithm>
#include <vector>

#include "sched/strided_views.h"

namespace kiln::sched {

bool read_only_before_loop(const ir::Graph& graph, ir::ValueId init, ir::ValueId loop) {
  const ir::Node& node = graph.node(loop);
  if (std::count(node.inputs.begin(), node.inputs.end(), init) != 1) return false;
  std::vector<char> ancestor(static_cast<size_t>(loop), 0);
  std::vector<ir::ValueId> pending;
  for (ir::ValueId input : node.inputs) {
    if (input == init) continue;
    if (view_base(graph, input) == init) return false;
    pending.push_back(input);
  }
  while (!pending.empty()) {
    ir::ValueId id = pending.back();
    pending.pop_back();
    if (ancestor[static_cast<size_t>(id)]) continue;
    ancestor[static_cast<size_t>(id)] = 1;
    for (ir::ValueId input : graph.node(id).inputs) pending.push_back(input);
  }
  for (ir::ValueId id = init + 1; id < graph.size(); ++id) {
    const std::vector<ir::ValueId>& inputs = graph.node(id).inputs;
    if (id == loop || std::find(inputs.begin(), inputs.end(), init) == inputs.end()) continue;
    if (id > loop || !ancestor[static_cast<size_t>(id)]) return false;
  }
  return true;
}

}  // namespace kiln::sched
