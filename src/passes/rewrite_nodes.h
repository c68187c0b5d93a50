// The shape of a pass that replaces some nodes one by one: each node's operands mapped to their
// replacements, the node rebuilt by `rewrite(builder, id, node, inputs)` where that returns a
// value, else copied as it is; the outputs mapped last.
#pragma once
#include <optional>
#include <vector>

#include "ir/builder.h"

namespace kiln::passes {

template <class Rewrite>
ir::Graph rewrite_nodes(const ir::Graph& graph, Rewrite&& rewrite) {
  ir::Graph result;
  ir::Builder b(result);
  std::vector<ir::ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ir::ValueId id = 0; id < graph.size(); ++id) {
    const ir::Node& node = graph.node(id);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId input : node.inputs)
      inputs.push_back(replacement[static_cast<size_t>(input)]);
    b.set_location(node.location);
    const std::optional<ir::ValueId> rebuilt = rewrite(b, id, node, inputs);
    replacement[static_cast<size_t>(id)] =
        rebuilt ? *rebuilt : b.copy_node(node, std::move(inputs));
  }
  std::vector<ir::ValueId> outputs;
  for (ir::ValueId output : graph.outputs())
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
