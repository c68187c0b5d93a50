// Extern calls on the GPU: the ops extern/extern_calls.h runs on the CPU (matmul, convolution
// and its gradients), run by cuBLAS and cuDNN on device buffers, queued on the caller's stream.
// One table, by op, as on the CPU.
#pragma once
#include <memory>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::runtime {

// How the libraries may round float32 (torch's torch.backends.cuda.matmul.allow_tf32 and
// torch.backends.cudnn.allow_tf32; kiln's default keeps float32 exact, as on the CPU).
struct CudaMathSettings {
  bool matmul_tf32 = false;
  bool convolution_tf32 = false;
};

// Error(Unsupported) naming the op and the user's line when `call` cannot run on the GPU (an
// op or dtype the libraries lack): checked when a program is loaded, not halfway through a run.
void check_cuda_extern_call(const sched::ExternCall& call,
                            const std::vector<sched::Buffer>& buffers);

// Runs `call` on device memory (`table[b]`: buffer b's data) on `stream`. `kept`: where library
// workspaces go instead of back to the allocator (a CUDA graph capture), or null. `candidate`:
// which of the library's candidates runs (a matmul's: cuda::Gemm::candidate; 0 for the others).
void run_cuda_extern_call(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers,
                          char* const* table, void* stream, const CudaMathSettings& math,
                          std::vector<std::shared_ptr<void>>* kept = nullptr, int candidate = 0);
// How many candidates max-autotune times for `call` (cuda_executable.h).
int cuda_extern_candidates(const sched::ExternCall& call, const std::vector<sched::Buffer>& buffers);

}  // namespace kiln::runtime
