// Which graph loops may run their iterations at once (DESIGN §1: "parallel where the analysis
// proves they do not depend on each other"). Iteration i of a loop writes two kinds of buffers:
//   - its own temporaries (the body's intermediates, and the induction variable): nothing
//     outside the loop reads them and each iteration writes them before it reads them, so each
//     thread gets its own copy (they are returned here);
//   - shared ones (the carried arrays updated in place, `out[i] = ...`): every access of such a
//     buffer in the body must fall in a block of elements that belongs to iteration i alone.
// The second is proved on the flat index expressions: each is a*v + r, v the induction value and
// r a term of the kernel's loop variables and constants with a known range, once the clamps and
// wraps of NumPy indexing are folded away on v's range; all accesses of the buffer must share a,
// and together span less than |a * step| elements (a buffer of no elements is never touched).
// Loops with bounds known only at run time, a while condition, swapped carried values or nested
// loops are left sequential.
#pragma once
#include <optional>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

// `begin` is a LoopBegin step. The buffers each iteration needs its own copy of (the induction
// variable first), or nullopt when the analysis cannot prove the iterations independent.
// `sorts`: the body may hold extern sorts too (a GPU's device loop runs them itself), each
// reading what its iteration made or what the loop never writes, into the iteration's own buffer.
std::optional<std::vector<int32_t>> independent_iterations(const Program& program, size_t begin,
                                                           bool sorts = false);

}  // namespace kiln::sched
