// How the runtime calls one generated kernel: a symbol of the loaded library,
// `void symbol(char* const* arguments)`, called with the program buffers `arguments` in order
// (the emitter's a0, a1, ...) followed by the thread count of its parallel regions, as an
// intptr_t, and the size table of a size-generic library (codegen/size_parameters.h). Every code generator produces one per Program kernel; kernels with the same code
// share a symbol.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct KernelCall {
  std::string symbol;
  std::vector<int32_t> arguments;
};

// How the runtime runs one kernel of a CUDA module (codegen/cuda/cuda_emitter.h): its launches
// in order on one stream, each given the buffers `arguments` (in this order) as one by-value
// table of that many device pointers.
struct CudaLaunch {
  std::string symbol;  // the __global__ function
  int64_t blocks = 1;  // grid.x
  int threads = 1;     // block.x
  // Device memory the launch works in (a split reduction's partials and ticket counter),
  // zeroed once, passed after the buffers; the launch leaves it as it found it, or writes
  // before it reads (a long sort's workspace). 0: none.
  int64_t scratch_bytes = 0;
  // >= 0: no scratch of its own: that of launch `scratch_of` of the same list (the passes of a
  // long sort share its workspace: codegen/cuda/sort_kernels.cpp).
  int scratch_of = -1;
  // Size-generic code (codegen/size_parameters.h): the integers the function reads from its
  // kiln_size_table parameter, this launch's values. Empty: a function of one size.
  std::vector<int64_t> sizes;
};
struct CudaKernelCall {
  std::vector<int32_t> arguments;
  std::vector<CudaLaunch> launches;
  // max-autotune: other launch shapes of the same kernel (the same arguments and results),
  // timed against `launches` on the first run (runtime/cuda/cuda_executable.h).
  std::vector<std::vector<CudaLaunch>> alternatives;
  // >= 0: a generated kernel that runs this Program step, an extern call, in place of the
  // library (codegen/cuda/skinny_matmul.cpp); its arguments are the call's inputs and output.
  // max-autotune times it against the library. A LoopBegin step: the kernel runs the whole
  // loop (codegen/cuda/device_loops.cpp), and the loop's kernels may have no launches.
  int32_t replaces_step = -1;
};

}  // namespace kiln::runtime
