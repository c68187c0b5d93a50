// Loop interchange for reductions over a strided axis. A kernel `for a: r = sum_i x[i, a];
// out[a] = r` reads x column by column (stride = row length). It becomes
//   for each block of a (in parallel): acc[a] = 0; for i: for a in block (SIMD): acc[a] += x[i, a];
//   for a in block: out[a] = acc[a]
// so the inner loop walks rows with stride 1 and vectorises, and each row is read once.
// Reductions merged with those that read along their own rows (mvt's A @ y beside y @ A) keep
// their form, in a loop of their own before the lanes: as lanes, they would read down columns.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Applies when the kernel is one loop over enough outputs whose body is reductions (without
// nested statements) followed by stores, and the reductions read with stride 1 along that loop
// but not along their own innermost loop. Returns whether the kernel changed. Marks nothing
// parallel: mark_parallel decides that for the block loop, as for any other.
bool interchange_reductions(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
