// Checks a graph's invariants between stages: operands defined before use, arities, dtypes and
// shapes consistent with the op table's rules. A failure is kiln's own bug: the error is
// Internal and names `stage` (the pass that produced the graph).
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

void verify(const Graph& graph, const std::string& stage);

}  // namespace kiln::ir
