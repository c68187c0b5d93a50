// An Executable: a scheduled Program bound to its compiled kernels. It owns the arena for
// intermediates (allocated once, reused by every call: no allocation per call in steady state
// apart from the outputs) and runs the steps in order: kernel calls and extern calls, and loops
// around the steps of their bodies.
// Safe to run from several threads: runs of one Executable take turns (they share the arena).
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/array.h"
#include "kiln/error.h"
#include "runtime/kernel_call.h"
#include "runtime/output_pool.h"
#include "runtime/shared_library.h"
#include "sched/loop_ir.h"

namespace kiln::runtime {

// A condition the graph computes alongside its results that turns the whole run into an error
// (an index out of bounds, an integer raised to a negative power): NumPy raises there, and a
// kernel cannot. Two extra graph outputs: a bool flag (0-d) and the offending value (0-d
// int64), reported as `before` + value + `after`. Outputs come back only from a run whose
// flags are all clear, so an input written back by the caller is never half-updated.
struct RuntimeCheck {
  int32_t flag_output = -1;
  int32_t value_output = -1;
  ErrorKind kind = ErrorKind::Index;
  std::string before, after;
};

// How an Executable runs (from the target and the mode word, api/options.h).
struct ExecutionSettings {
  int threads = 1;            // the target's threads (fewer on a busy machine: thread_budget)
  bool pool_outputs = false;  // reduce-overhead: outputs come from a pool of recycled blocks
  // max-autotune: on the first run each parallel kernel is timed on one thread and on
  // `threads` (one thread must win by 10%); the choice is stored in `tuning_file` (beside the
  // library in the cache entry) so later processes skip the timing. "": nowhere to store it.
  bool autotune = false;
  std::string tuning_file;
  // By input and output number: complex in the caller's signature, a real (..., 2) array in the
  // program's (ir/complex_lowering.h). run() converts them with no copy.
  std::vector<bool> complex_inputs, complex_outputs;
  // A size-generic library's integers for this program's sizes (codegen/size_parameters.h):
  // every kernel gets the table after its thread count.
  std::vector<int64_t> size_table;
};

class Executable {
 public:
  // kernels: how each of the program's kernels is called (one per Program kernel).
  // checks: the program's last outputs are theirs (see RuntimeCheck); run() hides them.
  Executable(sched::Program program, std::vector<KernelCall> kernels,
             std::shared_ptr<SharedLibrary> library, std::vector<RuntimeCheck> checks = {},
             ExecutionSettings settings = {});

  // Inputs must match the program's input count, dtypes, shapes and strides (checked: an
  // undefined or mismatched Array is a kiln::Error naming it, never a wild read).
  // Outputs that are not defined() are allocated; defined ones must be contiguous and match.
  void run(const std::vector<Array>& inputs, std::vector<Array>& outputs);

  // Bytes the program's inputs and outputs span: callers release Python's GIL for big runs.
  int64_t io_bytes() const { return io_bytes_; }

  const sched::Program& program() const { return program_; }
  // Threads each step runs its parallel regions on, before the busy-machine budget (after
  // autotuning: what it chose).
  const std::vector<int>& step_threads() const { return step_threads_; }
  size_t output_count() const { return program_.output_buffers.size() - 2 * checks_.size(); }

 private:
  using KernelFunction = void (*)(char* const*);
  using LoopFunction = void (*)(char**);  // writes the swapped buffer pointers back
  sched::Program program_;
  std::shared_ptr<SharedLibrary> library_;
  std::vector<KernelFunction> kernels_;
  std::vector<std::vector<int32_t>> arguments_;  // by kernel: its buffers, in call order
  std::vector<char*> argument_pointers_;          // scratch for one call's arguments
  void check_inputs(const std::vector<Array>& inputs) const;
  void run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs);
  void raise_failed_checks(const std::vector<Array>& outputs) const;

  std::shared_ptr<void> arena_;
  std::vector<char*> table_;
  std::vector<int32_t> input_buffers_;  // by input number
  int64_t io_bytes_ = 0;
  std::vector<RuntimeCheck> checks_;
  ExecutionSettings settings_;
  std::vector<int> step_threads_;  // by step
  bool any_parallel_ = false;      // some kernel has a parallel region
  bool tuned_ = false;
  std::shared_ptr<OutputPool> output_pool_;  // reduce-overhead only
  // Compiled loops (codegen/cpp/loop_driver.h), by the step index of their LoopBegin.
  struct CompiledLoop {
    LoopFunction function = nullptr;
    std::vector<int32_t> buffers;
  };
  std::vector<CompiledLoop> compiled_loops_;
  std::vector<char*> loop_arguments_;  // scratch for one compiled loop's call
  template <class Visit>
  void walk_steps(char** table, int threads, Visit&& visit);
  void run_steps(char** table, int budget);
  void run_kernel(size_t kernel, char* const* table, int threads);
  void autotune(char** table);
  Array allocate_output(const sched::Buffer& buffer);
  std::mutex run_mutex_;
};

}  // namespace kiln::runtime
