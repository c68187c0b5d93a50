// A sort or argsort that the graph reads only at one end of its rows becomes a top-k of that
// end: `np.argsort(x)[-n:]`, `np.sort(x)[:n]`, argpartition's first n, `np.argsort(x)[::-1][:n]`
// (the last n backwards: simplify composes the two slices). The extern selects the
// first k of a row through a heap (src/extern/sort.h) instead of sorting all of it, so this
// applies where that heap does: k at most a 16th of the row. The last k of a row are the first
// k of the row reversed, sorted the other way: a stable sort orders ties by position, and
// reversing the row reverses both the keys' order and the ties' (argsort's positions p become
// n - 1 - p), so flip(top-k of flip(x), other direction) is the row's last k, bit for bit.
// Runs after dce (a dead read of the whole sort is gone) and before share_sorts (a sort and an
// argsort of one end still share their sort).
#include <algorithm>
#include <map>
#include <optional>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::ValueId;

namespace {

constexpr int64_t kHeapFactor = 16;  // extern/sort.cpp selects through its heap up to n / 16

// The end of the row a slice of a sort keeps: its extent along the sort's axis, whether it is
// the row's last elements, and whether it reads them backwards (step -1 from the last);
// nullopt for any other slice (another step, another axis cut).
struct End {
  int64_t extent;
  bool last;
  bool backwards = false;
};
std::optional<End> slice_end(const Node& slice, const Node& sorted) {
  if (slice.op != ir::Op::slice) return std::nullopt;
  const auto axis = static_cast<size_t>(sorted.attrs.axis);
  for (size_t d = 0; d < slice.shape.size(); ++d) {
    if (slice.attrs.steps[d] != 1 && (d != axis || slice.attrs.steps[d] != -1))
      return std::nullopt;
    if (d != axis && (slice.attrs.starts[d] != 0 || slice.shape[d] != sorted.shape[d]))
      return std::nullopt;
  }
  if (!slice.shape[axis].is_constant()) return std::nullopt;
  const int64_t extent = slice.shape[axis].constant(), n = sorted.shape[axis].constant();
  const int64_t start = slice.attrs.starts[axis];
  if (slice.attrs.steps[axis] == -1) {
    if (start == n - 1) return End{extent, true, true};
    return std::nullopt;
  }
  if (start == 0) return End{extent, false};
  if (start + extent == n) return End{extent, true};
  return std::nullopt;
}

// Sorts whose every reader is a slice of the same end, with the k they keep.
std::map<ValueId, End> sorts_read_at_one_end(const ir::Graph& graph) {
  std::vector<std::vector<ValueId>> readers(static_cast<size_t>(graph.size()));
  for (ValueId id = 0; id < graph.size(); ++id)
    for (ValueId input : graph.node(id).inputs) readers[static_cast<size_t>(input)].push_back(id);
  std::map<ValueId, End> result;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (!ir::is_sort(node.op) || !node.attrs.starts.empty()) continue;  // not a pick of one
    const ir::Dim& n = graph.node(node.inputs[0]).shape[static_cast<size_t>(node.attrs.axis)];
    const auto& users = readers[static_cast<size_t>(id)];
    if (!n.is_constant() || node.shape[static_cast<size_t>(node.attrs.axis)] != n ||
        users.empty() ||
        std::find(graph.outputs().begin(), graph.outputs().end(), id) != graph.outputs().end())
      continue;
    std::optional<End> end = End{0, false};
    for (ValueId user : users) {
      std::optional<End> read = slice_end(graph.node(user), node);
      if (!read || (end->extent > 0 && read->last != end->last)) {
        end.reset();
        break;
      }
      end = End{std::max(end->extent, read->extent), read->last};
    }
    if (end && end->extent > 0 && end->extent * kHeapFactor <= n.constant()) result[id] = *end;
  }
  return result;
}

}  // namespace

ir::Graph sort_ends(const ir::Graph& graph) {
  const std::map<ValueId, End> ends = sorts_read_at_one_end(graph);
  if (ends.empty()) return graph;
  ir::Graph result;
  result.set_symbol_hints(graph.symbol_hints());
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  std::map<ValueId, ValueId> backwards;  // a last end's top-k, before it is flipped back
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
    builder.set_location(node.location);
    auto sorted = node.op == ir::Op::slice ? ends.find(node.inputs[0]) : ends.end();
    if (auto found = ends.find(id); found != ends.end()) {
      // The sort's first k, in the order of the original one: kept where the slices read it.
      const auto axis = node.attrs.axis;
      const int64_t k = found->second.extent;
      const bool positions = node.op == ir::Op::argsort;
      if (!found->second.last) {
        replacement[static_cast<size_t>(id)] =
            positions ? builder.argsort(inputs[0], axis, node.attrs.descending, k)
                      : builder.sort(inputs[0], axis, node.attrs.descending, k);
        continue;
      }
      const ValueId flipped = builder.flip(inputs[0], {axis});
      ValueId top = positions ? builder.argsort(flipped, axis, !node.attrs.descending, k)
                              : builder.sort(flipped, axis, !node.attrs.descending, k);
      if (positions) {
        const int64_t n = graph.node(node.inputs[0]).shape[static_cast<size_t>(axis)].constant();
        top = builder.binary(ir::Op::sub, builder.constant(ir::Scalar::of_int(n - 1),
                                                           DType::Int64), top);
      }
      backwards[id] = top;  // dce drops the flip where only backward reads remain
      replacement[static_cast<size_t>(id)] = builder.flip(top, {axis});
    } else if (sorted != ends.end()) {
      // A slice of the sort's end: the same extent of the top-k, from its start or its end,
      // or from the start of the unflipped top-k for a backward read.
      const Node& whole = graph.node(node.inputs[0]);
      const auto axis = static_cast<size_t>(whole.attrs.axis);
      const int64_t k = sorted->second.extent, extent = node.shape[axis].constant();
      const bool backward = node.attrs.steps[axis] == -1;
      std::vector<int64_t> starts(node.shape.size(), 0), steps(node.shape.size(), 1);
      starts[axis] = sorted->second.last && !backward ? k - extent : 0;
      ir::Shape stops = node.shape;
      stops[axis] = ir::Dim(starts[axis] + extent);
      const ValueId source = backward ? backwards.at(node.inputs[0]) : inputs[0];
      replacement[static_cast<size_t>(id)] = builder.slice_to(source, starts, stops, steps);
    } else {
      replacement[static_cast<size_t>(id)] = builder.copy_node(node, std::move(inputs));
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) outputs.push_back(replacement[static_cast<size_t>(output)]);
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
