// The scheduler: turns a graph into a Program of fused kernels and extern calls.
//
// Which nodes get a buffer ("materialized"): graph inputs and outputs, constant arrays, scans,
// scatters, extern ops (matmul) and their operands, and any reduction that cannot be placed
// inside its consumer's loops without recomputation (lowering.h). Everything else is inlined.
// Materialized nodes of equal shape that follow each other and do not read one another share
// one kernel (one loop nest, several stores), so sibling reductions run in one pass.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "sched/loop_ir.h"

namespace kiln::sched {

struct ScheduleOptions {
  // Work (element operations) below which a loop stays serial: waking the second thread costs
  // microseconds on an idle machine and a scheduler time slice on a busy one.
  int64_t parallel_threshold = 1 << 17;
  bool allow_reassociation = true;       // vectorised float reductions
};

// input_strides[k]: element strides of graph input k (empty: row-major contiguous).
Program schedule(const ir::Graph& graph, const std::vector<std::vector<int64_t>>& input_strides,
                 const ScheduleOptions& options = {});

}  // namespace kiln::sched
