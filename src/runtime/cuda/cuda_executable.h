// A Program run on a CUDA device: the kernels of one loaded module (codegen/cuda/cuda_emitter.h)
// launched in step order on one stream, intermediates in one device arena allocated once.
// Inputs and outputs are host Arrays (NumPy's, the C++ API's): each call copies the inputs in
// (strided ones as the span of memory they cover, no repacking), and the outputs back. Graph
// loops run from the host, which reads each bound and condition back (8 bytes) per iteration.
// Extern calls (matmul, convolution) are not on the GPU yet: such a program is refused.
#pragma once
#include <memory>
#include <vector>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln::runtime {

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(sched::Program program, std::vector<CudaKernelCall> kernels,
                 std::shared_ptr<cuda::Module> module, std::vector<RuntimeCheck> checks = {},
                 ExecutionSettings settings = {});

 private:
  void run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) override;
  void launch_kernel(size_t kernel, char* const* table);

  struct Launch {
    void* function = nullptr;
    cuda::Dim3 grid, block;
    std::string symbol;
  };
  struct Kernel {
    std::vector<int32_t> arguments;
    std::vector<Launch> launches;
  };
  std::shared_ptr<cuda::Module> module_;
  std::vector<Kernel> kernels_;
  std::vector<char*> argument_table_;  // scratch: one launch's kiln_arg_table
  std::shared_ptr<void> arena_;        // device memory
  std::vector<std::shared_ptr<void>> constants_;  // device copies of constant buffers
  std::vector<char*> table_;           // device pointer of each buffer
};

}  // namespace kiln::runtime
