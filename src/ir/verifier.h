// Checks a graph's invariants between stages: operands defined before use, arities, dtypes and
// shapes consistent with the op table's rules. A failure is kiln's own bug: the error is
// Internal and names `stage` (the pass that produced the graph).
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::ir {

// `symbol_count`: the size symbols shapes may use; -1: the graph's own (a region passes its
// parent's).
void verify(const Graph& graph, const std::string& stage, int32_t symbol_count = -1);

}  // namespace kiln::ir
