// The loop nests the scheduler's kernels iterate in: over a value's shape, or over a finer nest
// that splits some of its loops (sched/division_splits.h).
#pragma once
#include <functional>
#include <vector>

#include "sched/division_splits.h"
#include "sched/kernel_builder.h"
#include "sched/lowering.h"

namespace kiln::sched {

// A loop nest over `shape`; `inner` fills the innermost body. Scopes are pushed so that
// reductions found while lowering land at the right depth.
Stmt loop_nest(KernelBuilder& builder, Lowering& lowering, const std::vector<int64_t>& shape,
               std::vector<int32_t>& loops, const std::function<void(std::vector<Stmt>&)>& inner);

// loop_nest over `shape` split as `splits` says: loops of extents n/f1, f1/f2, f2 for a
// dimension of extent n split {f1, f2}. `inner` gets each dimension's index (i = a*f1 + b*f2
// + c); `dimension_loops` receives each dimension's outermost loop.
Stmt split_nest(KernelBuilder& builder, Lowering& lowering, const std::vector<int64_t>& shape,
                const LoopSplits& splits, std::vector<int32_t>& dimension_loops,
                const std::function<void(std::vector<Stmt>&, std::vector<ExprId>)>& inner);

}  // namespace kiln::sched
