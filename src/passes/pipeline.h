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

// verify_each: the verifier after every pass, naming the pass that broke a graph; without it
// only the caller's check of the result (prepare_graph's) runs: for sizes of a graph with size
// symbols after its first (api/size_generic_graph.h), whose passes ran verified on the same
// structure.
ir::Graph run_graph_passes(const ir::Graph& graph, const std::set<std::string>& disabled = {},
                           bool verify_each = true);

// The pass names, in pipeline order (for KILN_DISABLE_PASSES and the documentation).
const std::vector<std::string>& graph_pass_names();

}  // namespace kiln::passes
