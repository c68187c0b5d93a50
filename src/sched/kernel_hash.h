// Kernels with the same code (the iterations of a Python loop, the same op on other buffers)
// are found by a structural key of their loop IR, not by comparing emitted text: the kernel
// without its name and comments, with program buffers renumbered in order of first use. Equal
// keys mean one generated function serves both, called with each kernel's own arguments.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::sched {

struct KernelSignature {
  std::string key;                 // equal keys: the same code
  uint64_t hash = 0;               // of the key
  std::vector<int32_t> arguments;  // program buffers the code takes, in argument order
};

// Constant buffers are not arguments: the code names them (they are part of the key).
KernelSignature kernel_signature(const Kernel& kernel, const Program& program);

}  // namespace kiln::sched
