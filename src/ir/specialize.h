// Size symbols meet numbers: a call's input shapes give each size symbol of a graph its value
// (bind_sizes), and specialize() turns the symbolic graph into the static graph for those
// values, which every later stage (passes, scheduler, interpreter) knows how to run.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {

// The value of each size symbol of `graph` (Graph::symbol_hints) given the shapes of the call's
// inputs: a dimension that is one symbol binds it; every dimension must then equal its value.
// Throws kiln::Error Value naming the input and dimension on a mismatch, and for a size below 2
// (a symbol stands for sizes >= 2; the front end compiles sizes 0 and 1 separately).
std::vector<int64_t> bind_sizes(const Graph& graph,
                                const std::vector<std::vector<int64_t>>& input_shapes);

// `graph` with symbol k replaced by values[k] everywhere (regions included), verified. Throws
// kiln::Error Value naming the node when a size comes out negative (`x[5:]` of an axis of 3),
// or naming the values when they break another of the graph's constraints (positions[:n] of a
// table shorter than n).
Graph specialize(const Graph& graph, const std::vector<int64_t>& values);

}  // namespace kiln::ir
