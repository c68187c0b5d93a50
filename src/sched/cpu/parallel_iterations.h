// Graph loops whose iterations are independent (sched/independent_iterations.h) and, together,
// worth target.parallel_threshold element operations run their iterations on the thread pool
// (LoopControl::parallel): an element loop with a branch, a per-row update. Each thread gets its
// own copy of the iteration's temporaries (at most kMaxPrivateBytes, on its stack), and the
// kernels of a parallel iteration run on one thread.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Returns whether any loop was marked.
bool parallel_iterations(Program& program, const target::Target& target);

}  // namespace kiln::sched::cpu
