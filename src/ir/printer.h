// The canonical text of a graph: stable across runs and platforms, one node per line,
//   %3 = add(%1, %2) : float32(1024, 640)
//   %4 = sum(%3) {axes=[1], keepdims=true} : float32(1024, 1)
// It is the base of the cache key, so equal graphs print equal text. Locations are not printed
// (they do not change the code) unless `with_locations` is set.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

std::string print_graph(const Graph& graph, bool with_locations = false);
std::string print_node(const Graph& graph, ValueId id, bool with_location = false);
std::string print_attrs(const Node& node);  // "{axes=[1], keepdims=true}" or ""

}  // namespace kiln::ir
