// The C++ emitter: prints a Program's kernels as one translation unit. The text starts with
// scalar_math.h (the op semantics shared with the interpreter), then one extern "C" function per
// kernel, `void <kernel name>(char* const* buffers)`, whose buffer table the runtime fills.
// Loops carry OpenMP pragmas: `parallel for` on the outer loop, `simd` on inner loops, and
// whole-array reductions are split across threads.
#pragma once
#include <string>

#include "sched/loop_ir.h"

namespace kiln::codegen {

struct CppEmitOptions {
  bool allow_reassociation = true;  // `omp simd reduction` on float sums
};

std::string emit_cpp(const sched::Program& program, const CppEmitOptions& options = {});

}  // namespace kiln::codegen
