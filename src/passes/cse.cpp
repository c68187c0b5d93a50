// Common-subexpression elimination: two nodes with the same op, dtype, shape, operands and
// attributes compute the same value (every op is pure; random ops are a function of their
// seed), so the later one is replaced by the earlier. Operands are rewritten first, so whole
// identical subtrees merge in one pass.
#include <cstring>
#include <limits>
#include <unordered_map>

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
    std::vector<ValueId>& candidates = seen[node_hash(node, inputs)];
    Node candidate = node;
    candidate.inputs = inputs;
    ValueId found = -1;
    for (ValueId earlier : candidates) {
      if (same_node(result.node(earlier), candidate)) {
        found = earlier;
        break;
      }
    }
    if (found < 0) {
      found = builder.copy_node(node, std::move(inputs));
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
