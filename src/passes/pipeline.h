// The graph pass pipeline: simplify, CSE, constant folding and DCE, repeated until a round
// changes nothing (at most 4 rounds).
//
// Passes named in `disabled` (KILN_DISABLE_PASSES, read by the compile driver) are skipped so a
// miscompile can be bisected to one pass. KILN_LOGS=passes prints the graph after each pass, or
// "unchanged" when the pass did nothing; KILN_LOGS=perf its time.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

ir::Graph run_graph_passes(const ir::Graph& graph, const std::set<std::string>& disabled = {});

// The pass names, in pipeline order (for KILN_DISABLE_PASSES and the documentation).
const std::vector<std::string>& graph_pass_names();

}  // namespace kiln::passes
