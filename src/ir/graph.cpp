// Graph storage: appending nodes, the parameter list, users, and attribute equality.
#include "ir/graph.h"

#include <algorithm>

namespace kiln::ir {
namespace {

bool same_data(const std::shared_ptr<const std::vector<uint8_t>>& a,
               const std::shared_ptr<const std::vector<uint8_t>>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return *a == *b;
}

}  // namespace

bool Attrs::operator==(const Attrs& other) const {
  return axes == other.axes && keepdims == other.keepdims && axis == other.axis &&
         index == other.index && permutation == other.permutation && starts == other.starts &&
         steps == other.steps && pad_low == other.pad_low && pad_high == other.pad_high &&
         pad_mode == other.pad_mode && scatter_mode == other.scatter_mode &&
         scalar == other.scalar && ddof == other.ddof && seed == other.seed &&
         strides == other.strides && padding == other.padding && dilation == other.dilation &&
         groups == other.groups && channels_last == other.channels_last && relu == other.relu &&
         descending == other.descending && causal == other.causal &&
         filters_last == other.filters_last && extent == other.extent &&
         same_data(data, other.data) && body == other.body &&
         else_body == other.else_body;
}

Dim Graph::add_symbol(int64_t hint) {
  symbol_hints_.push_back(hint);
  return Dim::symbol(static_cast<int32_t>(symbol_hints_.size() - 1));
}

ValueId Graph::append(Node node) {
  ValueId id = static_cast<ValueId>(nodes_.size());
  if (node.op == Op::parameter) {
    // Keep inputs ordered by parameter position whatever order they were appended in.
    int64_t position = node.attrs.index;
    auto after = std::upper_bound(inputs_.begin(), inputs_.end(), position,
                                  [this](int64_t value, ValueId input) {
                                    return value < nodes_[static_cast<size_t>(input)].attrs.index;
                                  });
    inputs_.insert(after, id);
  }
  nodes_.push_back(std::move(node));
  return id;
}

void Graph::make_parameter(ValueId id, int64_t index) {
  Node& node = nodes_[static_cast<size_t>(id)];
  if (node.op == Op::parameter) return;
  node.op = Op::parameter;
  node.inputs.clear();
  node.attrs = Attrs();
  node.attrs.index = index;
  auto after = std::upper_bound(inputs_.begin(), inputs_.end(), index,
                                [this](int64_t value, ValueId input) {
                                  return value < nodes_[static_cast<size_t>(input)].attrs.index;
                                });
  inputs_.insert(after, id);
}

std::vector<std::vector<ValueId>> Graph::users() const {
  std::vector<std::vector<ValueId>> result(nodes_.size());
  for (size_t id = 0; id < nodes_.size(); ++id) {
    for (ValueId input : nodes_[id].inputs) {
      if (input < 0 || static_cast<size_t>(input) >= nodes_.size()) continue;
      std::vector<ValueId>& users_of_input = result[static_cast<size_t>(input)];
      // A node that reads the same value twice (x * x) is one user.
      if (users_of_input.empty() || users_of_input.back() != static_cast<ValueId>(id)) {
        users_of_input.push_back(static_cast<ValueId>(id));
      }
    }
  }
  return result;
}

}  // namespace kiln::ir
