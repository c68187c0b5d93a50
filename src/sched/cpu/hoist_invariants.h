// Hoisting of loop-invariant work that the compiler cannot hoist itself. An expensive
// subexpression that depends on an inner loop but not on an outer one (numpy_fn's
// Y_normalized[i, b] inside the loops over a and b, or g(y[j]) in out[i, j] = f(x[i]) + g(y[j]))
// would be recomputed for every iteration of the outer loop. It is computed once into a local
// array before that loop and read back inside it.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched::cpu {

// Local arrays hold at most kMaxHoistedElements values (they live on the stack).
constexpr int64_t kMaxHoistedElements = 16384;

// Returns whether anything was hoisted.
bool hoist_invariants(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched::cpu
