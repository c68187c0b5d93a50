// In-place updates: which scatters, and which masked updates where(mask, new, base) over the
// whole of base (kiln/_windows.py's slice assignments), write into their base's buffer instead
// of copying it. A masked update reads base in place only at each element's own position; what
// it reads elsewhere (a row, a column) is computed first. Its kernel may then skip the elements
// outside the mask (sched/trim_stores.h).
//
// A scatter may reuse its base's buffer when nothing after it reads the base: every other user
// of the base comes before it (node order is execution order). What is computed from the base
// and still needed after the write (a later node reads it, or it is the scatter's own index or
// values, read while it writes) gets a buffer first, so that nothing re-reads the overwritten
// buffer; values that read the base only in the column each element is stored to (x[i, j] = v
// as row i put back with column j changed, a masked update; out[i] = f(out[i - 1])) are
// computed as it writes. The base must
// live in a buffer of its own that may be overwritten: an intermediate
// the scheduler computes, or a graph input the caller donated (a loop body's carried value,
// dead after the body: the body then updates the loop's buffer directly). A graph output is
// never a base (its value must survive). Chains (x[0] = a; x[1] = b; ...) share one buffer, and
// a slice assignment writes only the slice. When what must be computed first spans more than
// half of the array (a stencil's interior), one pass into a new buffer costs less: no update
// in place.
#pragma once
#include <set>
#include <vector>

#include "ir/graph.h"

namespace kiln::sched {

struct InPlacePlan {
  std::vector<ir::ValueId> base_of;     // by node: the base a scatter overwrites, or -1
  std::set<ir::ValueId> compute_first;  // values of the base needed after the write
};

// donated[k]: the graph input number output k may overwrite, or -1 (empty: none).
InPlacePlan plan_in_place(const ir::Graph& graph, const std::set<ir::ValueId>& materialized,
                          const std::vector<int32_t>& donated);

}  // namespace kiln::sched
