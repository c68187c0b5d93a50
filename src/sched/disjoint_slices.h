// Scatter-adds whose iterations add into disjoint slices of their buffer need no atomics. The
// gradient of an interpolation, of a pooling or of a gather adds, for each (batch, channel)
// plane, into that plane of its buffer alone: index = plane * size + clamp(position, 0, size - 1).
// Read as a * v + r, v the loop's variable and r within a range narrower than |a|, two
// iterations never touch one element, so the loop runs on the thread pool without the atomic
// add per element (a compare-and-swap loop for floats) that a scatter of unknown indices needs.
#pragma once
#include <optional>
#include <utility>

#include "sched/loop_ir.h"

namespace kiln::sched {

// Whether every accumulating store under loop statement `loop` of `kernel` indexes
// a * v + r (v the loop's variable, one a != 0 per buffer, r within less than |a| elements),
// and the kernel reads none of the buffers they add into.
bool adds_into_disjoint_slices(const Kernel& kernel, const Stmt& loop);

// The least and the greatest element index expression `id` of `kernel` takes, each loop
// variable within its extent; nullopt where that is not known (a loaded or a float index).
std::optional<std::pair<int64_t, int64_t>> index_range(const Kernel& kernel, ExprId id);

}  // namespace kiln::sched
