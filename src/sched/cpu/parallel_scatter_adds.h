// Scatter-adds on the thread pool. A scatter's statements run in order on one thread
// (Kernel::ordered_from); one whose stores only add (sched/scatter_adds.h) and that is big
// enough runs its iterations on all threads instead, each add atomic (the C++ emitter's
// `omp atomic`): max-pool's and embedding's gradients, which were a serial pass over the
// activation in every resnet18 training step. Where its iterations add into disjoint slices
// (sched/disjoint_slices.h), the adds are plain (Stmt::disjoint_adds).
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Returns whether any statement was marked parallel.
bool parallel_scatter_adds(Program& program, const target::Target& target);

}  // namespace kiln::sched::cpu
