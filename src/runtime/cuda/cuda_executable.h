// A Program run on a CUDA device: the kernels of one loaded module (codegen/cuda/cuda_emitter.h)
// launched in step order on the calling thread's stream (set_cuda_stream: the caller's, e.g.
// torch's current stream), intermediates in one device arena allocated once.
// Inputs may be host Arrays (NumPy's, the C++ API's), copied in as the span of memory they
// cover (strided ones are not repacked), or Arrays over device memory (torch, CuPy: borrowed by
// pointer), read in place. Outputs live where the inputs do: with any device input they are
// device Arrays the caller gets without a copy, and the call returns without waiting for the
// GPU; otherwise host Arrays, copied back. Graph loops run from the host, which reads each bound
// and condition back (8 bytes) per iteration. Extern calls (matmul, convolution) are not on the
// GPU yet: such a program is refused.
#pragma once
#include <memory>
#include <vector>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/executable.h"

namespace kiln::runtime {

// The stream this thread's CUDA executables queue their work on (null: the legacy default).
void set_cuda_stream(void* stream);
void* cuda_stream();

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
    std::shared_ptr<void> scratch;  // CudaLaunch::scratch_bytes of zeroed device memory
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
