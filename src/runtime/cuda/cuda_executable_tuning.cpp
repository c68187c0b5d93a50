// max-autotune on the GPU (cuda_executable.h): the first run times each step's candidates, a
// kernel's launch lists, a product of few rows as its generated kernel and in cuBLAS, a
// library product as each of cuBLASLt's first candidates, and keeps the fastest; the choices
// are a record beside the cubins.
#include <algorithm>

#include "kiln/error.h"
#include "ir/ops.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/device_arrays.h"

namespace kiln::runtime {
namespace {

// Timings of each candidate (the best counts), and how much faster than the step's first
// candidate another must be to replace it (timing noise must not flip a choice).
constexpr int kTimings = 5;
constexpr double kTunedMargin = 0.97;
constexpr const char* kTuningHeader = "kiln-autotune-cuda 1";

}  // namespace

void CudaExecutable::read_step_choices() {
  tuned_ = read_tuning(settings_.tuning_file, kTuningHeader, 0, 1 << 20, step_choice_);
  for (size_t k = 0; k < step_choice_.size() && tuned_; ++k)
    tuned_ = step_choice_[k] < candidate_count(k);
  if (!tuned_) step_choice_.assign(program_.steps.size(), 0);
}

void CudaExecutable::tune_steps(char** table, void* stream) {
  tuning_now_ = true;
  step_tuned_.assign(program_.steps.size(), false);
  try {
    queue_steps(table, stream, nullptr);
  } catch (...) {
    tuning_now_ = false;
    throw;
  }
  tuning_now_ = false;
  tuned_ = true;
  write_tuning(settings_.tuning_file, kTuningHeader, step_choice_);
}

int CudaExecutable::candidate_count(size_t step) const {
  const sched::Step& s = program_.steps[step];
  // The generated kernel, the library (a sort's library is the host: not timed).
  if (step_kernel_[step] >= 0)
    return s.kind == sched::StepKind::Extern && ir::is_sort(s.call.op) ? 1 : 2;
  if (s.kind == sched::StepKind::Kernel)
    return static_cast<int>(kernels_[static_cast<size_t>(s.kernel)].candidates.size());
  if (s.kind == sched::StepKind::Extern) return cuda_extern_candidates(s.call, program_.buffers);
  return 1;
}

void CudaExecutable::tune_step(size_t k, char* const* table, void* stream) {
  const sched::Step& step = program_.steps[k];
  std::vector<int32_t> written;
  if (step.kind == sched::StepKind::Extern)
    written.push_back(step.call.output);
  else
    written = program_.kernels[static_cast<size_t>(step.kernel)].buffers_written;
  struct Saved {
    char* at;
    int64_t bytes;
    std::shared_ptr<void> copy;
  };
  std::vector<Saved> saved;
  for (int32_t b : written) {
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(b)];
    auto [low, high] = element_span(buffer.shape, buffer.strides);
    const int64_t size = dtype_size(buffer.dtype), bytes = (high - low + 1) * size;
    if (bytes <= 0) continue;
    Saved s{table[b] + low * size, bytes, cuda::allocate(bytes)};
    cuda::copy_device_to_device(s.copy.get(), s.at, bytes, stream);
    saved.push_back(std::move(s));
  }
  auto restore = [&] {
    for (const Saved& s : saved) cuda::copy_device_to_device(s.at, s.copy.get(), s.bytes, stream);
  };
  const int candidates = candidate_count(k);
  std::vector<double> best(static_cast<size_t>(candidates), 1e30);
  for (int c = 0; c < candidates; ++c) {
    step_choice_[k] = c;
    try {
      restore();
      run_step(k, table, stream, nullptr);  // warm: the library's plan, the module's code
      for (int t = 0; t < kTimings; ++t) {
        restore();
        double ms = cuda::time_ms(stream, [&] { run_step(k, table, stream, nullptr); });
        best[static_cast<size_t>(c)] = std::min(best[static_cast<size_t>(c)], ms);
      }
    } catch (const Error&) {
      if (c == 0) throw;  // the step's own launches must run; an alternative may not (resources)
    }
  }
  int chosen = 0;
  for (int c = 1; c < candidates; ++c)
    if (best[static_cast<size_t>(c)] < kTunedMargin * best[static_cast<size_t>(chosen)]) chosen = c;
  step_choice_[k] = chosen;
  restore();
  run_step(k, table, stream, nullptr);
}

}  // namespace kiln::runtime
