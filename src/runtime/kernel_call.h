// How the runtime calls one generated kernel: a symbol of the loaded library, called with the
// program buffers `arguments` in order (the emitter's a0, a1, ...). Every code generator
// produces one per Program kernel; kernels with the same code share a symbol.
#pragma once
#include <string>
#include <vector>

namespace kiln::runtime {

struct KernelCall {
  std::string symbol;
  std::vector<int32_t> arguments;
};

// The library's `int` holding the thread count of its parallel regions: the target's when
// built, set by the runtime before each run (runtime/thread_budget.h).
inline constexpr const char* kThreadsSymbol = "kiln_threads";

}  // namespace kiln::runtime
