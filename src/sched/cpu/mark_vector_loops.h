// Which loops are SIMD candidates (Stmt::vectorize): innermost loops over plain stores, and
// loops whose reductions are so short (kmeans' two means of two coordinates) that the C++
// compiler unrolls them completely and vectorises across the outer iterations.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Returns whether any loop was marked.
bool mark_vector_loops(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
