// The C++ emitter: prints a Program's kernels as C++ source. The text starts with scalar_math.h
// (the op semantics shared with the interpreter), then one extern "C" function per
// distinct kernel code, `void <kernel name>(char* const* kiln_args)`, taking its buffers in the
// order CppSource::kernels lists them. Kernels with the same code (the iterations of a Python
// loop; sched/kernel_hash.h finds them) share one function, so the C++ compile grows with the
// distinct code, not the trace.
// Loops carry OpenMP pragmas: `parallel for` on the outer loop, `simd` on inner loops, and
// whole-array reductions are split across threads.
#pragma once
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "runtime/kernel_call.h"
#include "sched/loop_ir.h"
#include "target/target.h"

namespace kiln::codegen {

struct CppSource {
  // What every translation unit starts with: the prelude, the op templates and a declaration of
  // each constant array and kernel function, so that the pieces can go to separate units
  // (codegen/cpp/translation_units.h).
  std::string prefix;
  std::vector<std::string> pieces;  // the definitions: constant arrays, kernels, loop drivers
  std::vector<runtime::KernelCall> kernels;  // by Program::kernels index
  // Bytes of the longest kernel function: the C++ compiler's time grows faster than a
  // function's length (api/pipeline.cpp bounds it).
  size_t largest_kernel = 0;

  std::string text() const;  // the whole source as one translation unit
};

// options.allow_reassociation: `omp simd reduction` on float sums; target: parallel regions
// get target.threads threads, reductions target.vector_bits-wide lanes.
CppSource emit_cpp(const sched::Program& program, const Options& options,
                   const target::Target& target);

// `text` made safe for a // comment of generated source: every byte outside printable ASCII,
// and the backslash, becomes \xNN, so user-controlled text (file names, function names) can
// neither end the comment line nor splice the next one into it.
std::string comment_text(const std::string& text);

}  // namespace kiln::codegen
