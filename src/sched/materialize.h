// Which values the scheduler gives a buffer of their own before fusing the rest into the kernels
// that read them: graph inputs, outputs, scatters, extern operands, loop state, scans, and the
// values whose inlining would repeat work (stencil chains, expensive broadcasts, shared
// reductions, large values several nodes read). Lowering may ask for more (sched/lowering.h: requests).
#pragma once
#include <cstdint>
#include <set>

#include "ir/graph.h"

namespace kiln::sched {

// elementwise_broadcast, narrow_matmul_operands: ScheduleHints' fields of those names.
std::set<ir::ValueId> initial_materialized(const ir::Graph& graph, int64_t elementwise_broadcast,
                                           bool narrow_matmul_operands = false);

}  // namespace kiln::sched
