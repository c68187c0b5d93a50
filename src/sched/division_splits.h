// Loop splits that make a kernel's index divisions exact. A pointwise kernel loops over its
// output's shape; a reshape under it that splits a dimension (BERT's attention heads:
// (8, 12, 128, 64) permuted and merged into (1024, 768)) reads its source at i // 128 and
// i % 128, a division per element that also stops vectorisation. Looping over the finer shape
// (8, 128, 12, 64) instead makes those divisions exact, and the index simplifier removes them.
#pragma once
#include <vector>

#include "sched/kernel_builder.h"

namespace kiln::sched {

// For each of `loops` (a kernel's output loops, outermost first), the extents of the inner
// loops to split it into, outermost first: loop i of extent n with splits {f1, f2} (f2 | f1 | n)
// becomes loops of extents n/f1, f1/f2, f2 with i = a*f1 + b*f2 + c. Empty: no split. Only
// divisions of an index by a constant, where the split divides the loop's extent, ask for one.
using LoopSplits = std::vector<std::vector<int64_t>>;
LoopSplits division_splits(KernelBuilder& builder, const std::vector<int32_t>& loops);
bool any_split(const LoopSplits& splits);

}  // namespace kiln::sched
