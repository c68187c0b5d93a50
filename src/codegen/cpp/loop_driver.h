// Compiled loops: a graph loop whose body is kernels only (sched::LoopControl::compiled) becomes
// one C++ function, `extern "C" void kiln_loop<step>(char** kiln_args)`, that runs the whole
// loop: for each iteration it writes the induction variable, calls the body's kernel functions
// (defined just before it, in the same translation unit; the function is `flatten`, so g++
// inlines every one of them into one loop nest: an element-wise loop with a branch becomes the
// scalar loop Numba would write, and 0-d temporaries stay in registers rather than going through
// memory between kernel calls. g++'s own heuristics left the kernels extern and called them:
// levinson's inner loops were 4x slower), and swaps the carried buffers' pointers. A loop whose iterations are independent
// (LoopControl::parallel) runs them in an OpenMP parallel region, each thread with its own copies
// of the iteration's temporaries and calling the kernels with one thread. It takes sched::compiled_loop_buffers() and then the
// thread count, and writes the buffer pointers back on return (the swaps).
#pragma once
#include <string>
#include <vector>

#include "runtime/kernel_call.h"
#include "sched/loop_ir.h"

namespace kiln::codegen {

// The function for the compiled loop starting at step `begin`; `kernels` by kernel index.
std::string loop_driver_text(const sched::Program& program,
                             const std::vector<runtime::KernelCall>& kernels, size_t begin);

}  // namespace kiln::codegen
