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

// The passes that changed a graph, in order, recorded on one size of a graph with size
// symbols and replayed on its other sizes (api/size_generic_graph.h): their graphs have the
// structure the recorded one had, so the same passes reach the same fixed point, without the
// passes that leave the graph as it is, the comparison after each pass and the verifier after
// each (only the caller's check of the result, prepare_graph's, runs). A size whose structure
// differed after all gets a graph simplified less: its code differs from the others' and
// compiles on its own, or, should scheduling fail on it, its passes run in full.
struct PassRecord {
  bool replaying = false;
  std::vector<size_t> changed;  // indices into the pipeline
};

// record: nullptr (every pass verified, to the fixed point), one to fill, or one replaying.
ir::Graph run_graph_passes(const ir::Graph& graph, const std::set<std::string>& disabled = {},
                           PassRecord* record = nullptr);

// The pass names, in pipeline order (for KILN_DISABLE_PASSES and the documentation).
const std::vector<std::string>& graph_pass_names();

}  // namespace kiln::passes
