// Which statements run on the thread pool (Stmt::parallel): the outermost loop of a kernel, a
// whole-array reduction, or, for a loop over few outputs whose reductions are long (a sum over
// axis 0 of a (10^6, 4) array), the reductions themselves (split reductions). Only statements
// with at least target.parallel_threshold element operations qualify, and nothing does on a
// one-thread target.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Element operations statement `s` does, loops and reductions multiplied out.
int64_t statement_work(const Stmt& s);

// Returns whether any statement was marked.
bool mark_parallel(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
