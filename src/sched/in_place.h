// In-place updates: which scatters write into their base's buffer instead of copying it.
//
// A scatter may reuse its base's buffer when nothing reads the base after it: every other user
// of the base is something the scatter itself depends on (its index or values), and gets a
// buffer of its own, computed first (later values derived from the base read that buffer, not
// the overwritten one).
// The base must live in a buffer of its own that may be overwritten: an intermediate the
// scheduler computes, or a graph input the caller donated (a loop body's carried value, dead
// after the body: the body then updates the loop's buffer directly). A graph output is never a
// base (its value must survive). Chains (x[0] = a; x[1] = b; ...) share one buffer, and a
// slice assignment writes only the slice. An update whose other readers of the array
// span more than half of it (a stencil's interior) is not done in place: those readers would
// need buffers of their own first, and one pass into a new buffer costs less.
#pragma once
#include <set>
#include <vector>

#include "ir/graph.h"

namespace kiln::sched {

struct InPlacePlan {
  std::vector<ir::ValueId> base_of;     // by node: the base a scatter overwrites, or -1
  std::set<ir::ValueId> compute_first;  // the base's other readers: materialized
};

// donated[k]: the graph input number output k may overwrite, or -1 (empty: none).
InPlacePlan plan_in_place(const ir::Graph& graph, const std::set<ir::ValueId>& materialized,
                          const std::vector<int32_t>& donated);

}  // namespace kiln::sched
