// A sort or argsort that the graph reads only at a few single positions of its rows (np.median's
// middle one or two and last, np.quantile's neighbours, np.partition(x, k)[k]) picks those
// positions instead (attrs.starts: ascending positions of the sorted row, one per element along
// the axis): the extern selects them with nth_element (src/extern/sort.h), linear in the row,
// not a full sort, and puts there bit for bit what the sort does. Each reader becomes a slice of
// the picked element. Runs after sort_ends (a read of one end keeps its heap top-k) and before
// share_sorts (a sort and an argsort picking the same positions still share their selection).
#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::ValueId;

namespace {

// At most this share of a row picked (a 16th): beyond it a sort of the row is about as quick.
constexpr int64_t kPickFactor = 16;

// The position a slice of `sorted` reads, where it reads one element along the sort's axis and
// all of every other axis; nullopt for any other slice.
std::optional<int64_t> picked_position(const Node& slice, const Node& sorted) {
  if (slice.op != ir::Op::slice) return std::nullopt;
  const auto axis = static_cast<size_t>(sorted.attrs.axis);
  for (size_t d = 0; d < slice.shape.size(); ++d) {
    if (d == axis) continue;
    if (slice.attrs.steps[d] != 1 || slice.attrs.starts[d] != 0 ||
        slice.shape[d] != sorted.shape[d])
      return std::nullopt;
  }
  if (slice.shape[axis] != ir::Dim(1)) return std::nullopt;
  return slice.attrs.starts[axis];
}

// Full sorts (not outputs) whose every reader picks one position, with those positions.
std::map<ValueId, std::vector<int64_t>> sorts_read_at_positions(const ir::Graph& graph) {
  std::vector<std::vector<ValueId>> readers(static_cast<size_t>(graph.size()));
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) readers[static_cast<size_t>(input)].push_back(id);
  std::map<ValueId, std::vector<int64_t>> result;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (!ir::is_sort(node.op) || !node.attrs.starts.empty()) continue;
    const ir::Dim& n = graph.node(node.inputs[0]).shape[static_cast<size_t>(node.attrs.axis)];
    const auto& users = readers[static_cast<size_t>(id)];
    if (!n.is_constant() || node.shape[static_cast<size_t>(node.attrs.axis)] != n ||
        users.empty() ||
        std::find(graph.outputs().begin(), graph.outputs().end(), id) != graph.outputs().end())
      continue;
    std::vector<int64_t> picks;
    bool all = true;
    for (ValueId user : users) {
      std::optional<int64_t> position = picked_position(graph.node(user), node);
      if (!position) {
        all = false;
        break;
      }
      picks.push_back(*position);
    }
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
    if (all && static_cast<int64_t>(picks.size()) * kPickFactor <= n.constant())
      result[id] = std::move(picks);
  }
  return result;
}

}  // namespace

ir::Graph sort_picks(const ir::Graph& graph) {
  const std::map<ValueId, std::vector<int64_t>> picked = sorts_read_at_positions(graph);
  if (picked.empty()) return graph;
  ir::Graph result;
  result.set_symbol_hints(graph.symbol_hints());
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
    builder.set_location(node.location);
    auto sorted = node.op == ir::Op::slice ? picked.find(node.inputs[0]) : picked.end();
    if (auto found = picked.find(id); found != picked.end()) {
      Node selection = node;
      selection.attrs.starts = found->second;
      selection.shape[static_cast<size_t>(node.attrs.axis)] =
          ir::Dim(static_cast<int64_t>(found->second.size()));
      replacement[static_cast<size_t>(id)] = builder.copy_node(selection, std::move(inputs));
    } else if (sorted != picked.end()) {  // the picked element, at its index among the picks
      const auto axis = static_cast<size_t>(graph.node(node.inputs[0]).attrs.axis);
      const std::vector<int64_t>& picks = sorted->second;
      const auto index = std::lower_bound(picks.begin(), picks.end(), node.attrs.starts[axis]) -
                         picks.begin();
      std::vector<int64_t> starts(node.shape.size(), 0), steps(node.shape.size(), 1);
      starts[axis] = index;
      ir::Shape stops = node.shape;
      stops[axis] = ir::Dim(index + 1);
      replacement[static_cast<size_t>(id)] = builder.slice_to(inputs[0], starts, stops, steps);
    } else {
      replacement[static_cast<size_t>(id)] = builder.copy_node(node, std::move(inputs));
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs())
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
