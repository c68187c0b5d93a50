// Which statements run on the thread pool (Stmt::parallel): the outermost loop of a kernel, a
// whole-array reduction, or, for a loop over few outputs whose reductions are long (a sum over
// axis 0 of a (10^6, 4) array), the reductions themselves (split reductions). Only statements
// with at least target.parallel_threshold element operations (statement_work) qualify, and
// nothing does on a one-thread target.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// What a math library call of an element (op_list.h's Cost column: exp, tanh, pow; a random
// draw) adds to its work, in element operations: a copy or a division is 1 (memory-bound, it
// gains from a second thread from 2^16-2^17 elements), an exp or a tanh 1 + 7 (from 2^14;
// bench/oversubscription.md, "Cost-weighted work").
constexpr int64_t kCallWork = 7;

// The element operations one iteration of statement `s`'s own expressions weighs: 1, and
// kCallWork for each math library call it makes.
int64_t element_work(const Kernel& kernel, const Stmt& s);

// Element operations statement `s` does, loops and reductions multiplied out, each element
// weighed by element_work: a GELU over 500 x 256 elements is worth a second thread, a copy of
// as many is not.
int64_t statement_work(const Kernel& kernel, const Stmt& s);

// Returns whether any statement was marked.
bool mark_parallel(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
