// peel_clamps: an innermost loop whose loads clamp their index to stay inside a buffer near one
// end of the loop (a pad, a shifted window: x[min(i, n - 2) + 1] over i < n) runs as two loops
// that split its range where the clamp starts to bite, each with the clamps, selects and
// comparisons its range decides folded away. The C++ compiler then sees unit-stride loads
// (x[i + 1]) where it saw an index it could only gather (vgatherqpd): a shrinking loop's step
// (kiln/_loop_extents.py, v = p * v[:-1] + q * v[1:]) ran at a third of its speed.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Returns whether any loop was split.
bool peel_clamps(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
