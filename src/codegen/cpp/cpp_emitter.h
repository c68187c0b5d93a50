// The C++ emitter: prints a Program's kernels as one translation unit. The text starts with
// scalar_math.h (the op semantics shared with the interpreter), then one extern "C" function per
// distinct kernel code, `void <kernel name>(char* const* kiln_args)`, taking its buffers in the
// order CppSource::kernels lists them. Kernels with the same code (the iterations of a Python
// loop) share one function, so the C++ compile grows with the distinct code, not the trace.
// Loops carry OpenMP pragmas: `parallel for` on the outer loop, `simd` on inner loops, and
// whole-array reductions are split across threads.
#pragma once
#include <string>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::codegen {

struct CppEmitOptions {
  bool allow_reassociation = true;  // `omp simd reduction` on float sums
};

// How the runtime calls Program::kernels[k]: kernels[k].symbol with the buffers `arguments`.
struct KernelCall {
  std::string symbol;
  std::vector<int32_t> arguments;
};

struct CppSource {
  std::string text;
  std::vector<KernelCall> kernels;  // by Program::kernels index
};

CppSource emit_cpp(const sched::Program& program, const CppEmitOptions& options = {});

// `text` made safe for a // comment of generated source: every byte outside printable ASCII,
// and the backslash, becomes \xNN, so user-controlled text (file names, function names) can
// neither end the comment line nor splice the next one into it.
std::string comment_text(const std::string& text);

}  // namespace kiln::codegen
