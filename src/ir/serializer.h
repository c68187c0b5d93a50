// The graph's serialised form: a versioned binary that round-trips every node, attribute and
// source location. Stored beside compiled code (the warm start and saved artifacts build on
// it); reading checks every field and verifies the graph, so damaged bytes are an Error(Value).
#pragma once
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln::ir {

std::string serialize_graph(const Graph& graph);
Graph deserialize_graph(std::string_view bytes);

}  // namespace kiln::ir
