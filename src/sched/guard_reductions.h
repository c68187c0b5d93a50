// guard_reductions: a reduction whose result is only selected where a condition holds is
// computed only there.
//
//   for i: r = sum_k f(i, k);  out[i] = where(c(i), g(r), old[i])
//
// runs the sum only for the i where c(i) holds (`if (c) { ... }` around its loops; elsewhere its
// accumulators keep the identity, which nothing reads). Likewise a reduction whose every element
// is the identity where c fails (a sum of where(c(i), x, 0) * where(c(i), y, 0)): there it is
// the identity without running. A slice whose bounds move with a loop's
// index (kiln/_windows.py) is written as where(inside, new, old) over the whole axis: this keeps
// the matrix-vector product of A[j+1:, :j] @ x to the rows j+1.. it is for. Target-neutral.
#pragma once
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::sched {

bool guard_reductions(Kernel& kernel, const target::Target& target);

}  // namespace kiln::sched
