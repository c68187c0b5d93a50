// Common-subexpression elimination: two nodes with the same op, dtype, shape, operands and
// attributes compute the same value (every op is pure; random ops are a function of their
// seed), so the later one is replaced by the earlier. Operands are rewritten first, so whole
// identical subtrees merge in one pass. A loop given one value as two invariants gets it once.
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/builder.h"
#include "passes/passes.h"

namespace kiln::passes {

using ir::Node;
using ir::ValueId;

namespace {

void combine(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

void combine_all(size_t& seed, const std::vector<int64_t>& values) {
  combine(seed, values.size());
  for (int64_t value : values) combine(seed, std::hash<int64_t>{}(value));
}

// A hash of the fields that make two nodes equal; collisions are settled by same_node.
size_t node_hash(const Node& node, const std::vector<ValueId>& inputs) {
  size_t seed = static_cast<size_t>(node.op);
  combine(seed, static_cast<size_t>(node.dtype));
  for (const ir::Dim& dim : node.shape) combine(seed, std::hash<int64_t>{}(dim.constant()));
  for (ValueId input : inputs) combine(seed, std::hash<int32_t>{}(input));
  const ir::Attrs& attrs = node.attrs;
  combine_all(seed, attrs.axes);
  combine_all(seed, attrs.permutation);
  combine_all(seed, attrs.starts);
  combine(seed, std::hash<int64_t>{}(attrs.axis));
  combine(seed, std::hash<int64_t>{}(attrs.index));
  combine(seed, std::hash<uint64_t>{}(attrs.seed));
  // A float scalar by its bits (every NaN alike, as Scalar::operator== compares them): constants that
  // differ only in value must not share a bucket, or a graph of many constants is quadratic.
  double value =
      attrs.scalar.f != attrs.scalar.f ? std::numeric_limits<double>::quiet_NaN() : attrs.scalar.f;
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  combine(seed, std::hash<int64_t>{}(attrs.scalar.is_integer ? attrs.scalar.i : 0));
  combine(seed, std::hash<uint64_t>{}(attrs.scalar.is_integer ? 0 : bits));
  if (attrs.data) combine(seed, attrs.data->size());
  return seed;
}

// A loop given one value as two of its invariants (its body read the value twice, each read
// rebuilt outside the loop, the copies merged here) gets it once, `inputs` losing the repeats:
// its body reads one parameter, so that what the body derives from it is seen to be the same
// (a gather and a scatter at one index, sched/in_place.h).
void merge_repeated_invariants(Node& loop, std::vector<ValueId>& inputs) {
  const size_t first = 2 + static_cast<size_t>(loop.attrs.index);  // start, stop, carried values
  std::vector<int64_t> kept_as(inputs.size() - first, -1);          // by invariant: the one kept
  bool any = false;
  for (size_t j = 0; j < kept_as.size(); ++j)
    for (size_t earlier = 0; earlier < j && kept_as[j] < 0; ++earlier)
      if (kept_as[earlier] < 0 && inputs[first + j] == inputs[first + earlier]) {
        kept_as[j] = static_cast<int64_t>(earlier);
        any = true;
      }
  if (!any) return;
  const ir::Graph& old_body = *loop.attrs.body;
  auto body = std::make_shared<ir::Graph>();
  ir::Builder builder(*body);
  std::vector<ValueId> mapped(static_cast<size_t>(old_body.size()), -1);
  std::vector<ValueId> parameter_at(first + kept_as.size(), -1);  // body parameter -> new value
  std::vector<ValueId> kept_inputs(inputs.begin(), inputs.begin() + static_cast<int64_t>(first));
  // Body parameters: the induction variable, the carried values, then the invariants.
  const int64_t invariant_parameter = loop.attrs.index + 1;
  for (ValueId id : old_body.inputs()) {
    const Node& node = old_body.node(id);
    int64_t position = node.attrs.index;
    int64_t j = position - invariant_parameter;
    if (j >= 0 && kept_as[static_cast<size_t>(j)] >= 0) continue;
    Node copy = node;
    copy.attrs.index = static_cast<int64_t>(body->inputs().size());
    if (j >= 0) kept_inputs.push_back(inputs[first + static_cast<size_t>(j)]);
    mapped[static_cast<size_t>(id)] = parameter_at[static_cast<size_t>(position)] =
        builder.copy_node(copy, {});
  }
  for (ValueId id : old_body.inputs()) {
    int64_t j = old_body.node(id).attrs.index - invariant_parameter;
    if (j >= 0 && kept_as[static_cast<size_t>(j)] >= 0)
      mapped[static_cast<size_t>(id)] =
          parameter_at[static_cast<size_t>(invariant_parameter + kept_as[static_cast<size_t>(j)])];
  }
  for (ValueId id = 0; id < old_body.size(); ++id) {
    if (mapped[static_cast<size_t>(id)] >= 0) continue;
    const Node& node = old_body.node(id);
    std::vector<ValueId> body_inputs;
    for (ValueId input : node.inputs) body_inputs.push_back(mapped[static_cast<size_t>(input)]);
    mapped[static_cast<size_t>(id)] = builder.copy_node(node, std::move(body_inputs));
  }
  std::vector<ValueId> outputs;
  for (ValueId output : old_body.outputs()) outputs.push_back(mapped[static_cast<size_t>(output)]);
  body->set_outputs(std::move(outputs));
  loop.attrs.body = std::make_shared<const ir::Graph>(eliminate_common_subexpressions(*body));
  inputs = std::move(kept_inputs);
}

bool same_node(const Node& a, const Node& b) {
  return a.op == b.op && a.dtype == b.dtype && a.shape == b.shape && a.inputs == b.inputs &&
         a.attrs == b.attrs;
}

}  // namespace

ir::Graph eliminate_common_subexpressions(const ir::Graph& graph) {
  ir::Graph result;
  ir::Builder builder(result);
  std::vector<ValueId> replacement(static_cast<size_t>(graph.size()), -1);
  std::unordered_map<size_t, std::vector<ValueId>> seen;
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    std::vector<ValueId> inputs;
    for (ValueId input : node.inputs) inputs.push_back(replacement[static_cast<size_t>(input)]);
    Node candidate = node;
    if (node.op == ir::Op::loop) merge_repeated_invariants(candidate, inputs);
    std::vector<ValueId>& candidates = seen[node_hash(candidate, inputs)];
    candidate.inputs = inputs;
    ValueId found = -1;
    for (ValueId earlier : candidates) {
      if (same_node(result.node(earlier), candidate)) {
        found = earlier;
        break;
      }
    }
    if (found < 0) {
      found = builder.copy_node(candidate, std::move(inputs));
      candidates.push_back(found);
    }
    replacement[static_cast<size_t>(id)] = found;
  }
  std::vector<ValueId> outputs;
  for (ValueId output : graph.outputs()) {
    outputs.push_back(replacement[static_cast<size_t>(output)]);
  }
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace kiln::passes
