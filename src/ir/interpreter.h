// The reference interpreter: evaluates a graph op by op, with the op table's scalar
// expressions, on inputs of any strides. Slow and simple on purpose: it is the oracle every
// compiled result is checked against.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "kiln/array.h"

namespace kiln::ir {

// Returns one new contiguous Array per graph output. Inputs must match the parameters' dtypes
// and shapes (throws kiln::Error otherwise); a graph with size symbols takes their values from
// the inputs' shapes (ir/specialize.h).
std::vector<Array> interpret(const Graph& graph, const std::vector<Array>& inputs);

// Evaluates a single node given its operands' values (used by constant folding).
Array interpret_node(const Node& node, const std::vector<Array>& operands);

}  // namespace kiln::ir
