// Dead-code elimination: keeps the nodes the outputs depend on, in their original order, and
// every parameter (the graph's signature does not change when an input goes unused).
#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::ValueId;

ir::Graph eliminate_dead_code(const ir::Graph& graph) {
  std::vector<bool> live(static_cast<size_t>(graph.size()), false);
  for (ValueId output : graph.outputs()) live[static_cast<size_t>(output)] = true;
  // Nodes only read earlier nodes, so one backward sweep marks everything reachable.
  for (ValueId id = graph.size() - 1; id >= 0; --id) {
    const Node& node = graph.node(id);
    if (node.op == ir::Op::parameter) live[static_cast<size_t>(id)] = true;
    if (!live[static_cast<size_t>(id)]) continue;
    for (ValueId input : node.inputs) live[static_cast<size_t>(input)] = true;
  }
  ir::Graph result;
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    if (!live[static_cast<size_t>(id)]) continue;
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
    replacement[static_cast<size_t>(id)] = builder.copy_node(node, std::move(inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) {
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  }
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
