// Scans of independent columns computed side by side. A scan down a strided axis
// (torch.cumsum(x, 0)) is emitted `for a: acc = identity; for k: acc = combine(acc, x[k, a]);
// out[k, a] = acc`: it reads and writes down columns, a cache line per element (a (1024, 1024)
// float32 cumsum took 118 ms, 40x a pass over the array). It becomes
//   for each block of a: acc[lane] = identity;
//                        for k: for lane in block (SIMD): acc[lane] = combine(acc[lane], x[k, a])
// so each step reads and writes a stretch of a row, and the lanes advance together. Each lane
// combines its elements in the same order as before: the results do not change.
// Scans along rows (the scan's own axis stride-1) keep their form: as lanes, rows a power of two
// apart share L1 sets and evict each other (8 rows of 1024 floats: 15x slower than in turn).
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Applies when the kernel is a nest of loops whose innermost body is one scan with no
// statements of its own, and the innermost loop moves the scan's store by one element. The scan gets Stmt::lanes_loop; mark_parallel then decides whether the
// block loop is shared across threads. Returns whether the kernel changed.
bool interleave_scans(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
