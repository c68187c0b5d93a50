// The graph pass pipeline: simplify, CSE, constant folding and DCE, repeated until a round
// changes nothing (at most 4 rounds).
//
// KILN_DISABLE_PASSES=name,name switches passes off (names: simplify, cse, fold, dce; "all"
// switches every one off) so a miscompile can be bisected to one pass. KILN_LOGS=passes prints
// the graph after each pass, or "unchanged" when the pass did nothing.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

ir::Graph run_graph_passes(const ir::Graph& graph);

// The pass names, in pipeline order (for KILN_DISABLE_PASSES and the documentation).
const std::vector<std::string>& graph_pass_names();

}  // namespace kiln::passes
