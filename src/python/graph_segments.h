// Graph breaks' segments (kiln._compile: a function with graph breaks is traced again on every
// call, and at each break the graph so far runs to give the tracer its value). A break cuts
// the trace: the values the tracer still holds become graph inputs fed what that segment
// computed (cut_trace), so the next segment holds only what was traced since, and a loop with a
// break in its body makes the same segment each iteration, compiled once. A segment is the
// trace's graph cut down to what its outputs (and its pending checks) reach, with the inputs it
// reads renumbered in order: its text does not depend on what came before the last cut.
#pragma once
#include <string>
#include <vector>

#include "api/runtime_checks.h"
#include "api/trace.h"
#include "ir/graph.h"
#include "python/common.h"

namespace kiln::python {

struct Segment {
  ir::Graph graph;
  std::vector<int64_t> inputs;  // the trace's input positions it reads, in its input order
  std::vector<runtime::RuntimeCheck> checks;
};

Segment extract_segment(detail::Trace& trace, const std::vector<Tensor>& outputs);

void bind_graph_segments(nb::module_& module);

}  // namespace kiln::python
