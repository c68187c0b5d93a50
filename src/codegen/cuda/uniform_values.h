// Values that are the same for every thread of a launch: expressions of constants and of
// elements of buffers the kernel only reads, at constant positions (an optimizer's bias
// correction 1 - beta ** step from a 0-d step count; a normalisation by the square root of a
// 0-d variance). Printed inside the element loop they are recomputed for every element and
// lane: two powf and a square root an element made Adam's update run at 40% of the memory
// bandwidth. The CUDA emitter computes them once per thread, before the launch's loops.
#pragma once
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::codegen::cuda_detail {

// The largest uniform expressions `statements` read that are worth computing once: each holds
// a division, a root or a math call (a sum of a 0-d value and an element is not hoisted; its
// operands are). In the order their operands come first.
std::vector<sched::ExprId> uniform_values(const sched::Program& program,
                                          const sched::Kernel& kernel,
                                          const std::vector<sched::Stmt>& statements);

}  // namespace kiln::codegen::cuda_detail
