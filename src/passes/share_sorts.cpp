// One sort where a graph asks for both results: a `sort` node (values) whose operand the graph
// also argsorts along the same axis, in the same direction, to the same extent, reads its values
// at those positions (a gather) instead of sorting again. Runs after dce, so that an argsort
// nothing reads is gone and a sort alone keeps the values-only kernel (no gather).
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::ValueId;

ir::Graph share_sorts(const ir::Graph& graph) {
  using Key = std::tuple<ValueId, int64_t, bool, std::string, std::vector<int64_t>>;
  // argsort nodes by (operand, axis, descending, shape, picked positions)
  std::map<Key, ValueId> positions;
  auto key = [](const Node& node) {
    return Key{node.inputs[0], node.attrs.axis, node.attrs.descending,
               ir::shape_string(node.shape), node.attrs.starts};
  };
  for (ValueId id = 0; id < graph.size(); ++id)
    if (graph.node(id).op == ir::Op::argsort) positions.emplace(key(graph.node(id)), id);
  bool shared = false;
  for (ValueId id = 0; id < graph.size() && !shared; ++id)
    shared = graph.node(id).op == ir::Op::sort && positions.contains(key(graph.node(id)));
  if (!shared) return graph;

  ir::Graph result;
  result.set_symbol_hints(graph.symbol_hints());
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  auto mapped = [&](ValueId id) { return replacement[static_cast<size_t>(id)]; };
  // argsort nodes are placed before the sorts that read through them: each argsort is copied
  // where the first node that needs it is, which may be earlier than its own place.
  std::function<ValueId(ValueId)> copy = [&](ValueId id) -> ValueId {
    if (mapped(id) >= 0) return mapped(id);
    const Node& node = graph.node(id);
    ValueId value;
    auto found = node.op == ir::Op::sort ? positions.find(key(node)) : positions.end();
    if (found != positions.end()) {
      builder.set_location(node.location);
      value = builder.take_along_axis(copy(node.inputs[0]), copy(found->second), node.attrs.axis);
    } else {
      std::vector<ValueId> inputs;
      for (ValueId input : node.inputs) inputs.push_back(copy(input));
      value = builder.copy_node(node, std::move(inputs));
    }
    replacement[static_cast<size_t>(id)] = value;
    return value;
  };
  for (ValueId id = 0; id < graph.size(); ++id) copy(id);
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(mapped(output));
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
