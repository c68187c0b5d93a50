// An Executable: a scheduled Program bound to its compiled kernels on one device. It owns the
// arena for intermediates (allocated once, reused by every call: no allocation per call in
// steady state apart from the outputs) and runs the steps in order: kernel calls and extern
// calls, and loops around the steps of their bodies. HostExecutable runs the C++ target's
// library on the CPU; runtime/cuda/cuda_executable.h runs CUDA modules.
// Safe to run from several threads: runs of one Executable take turns (they share the arena).
#pragma once
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/array.h"
#include "kiln/error.h"
#include "runtime/kernel_call.h"
#include "runtime/output_pool.h"
#include "runtime/shared_library.h"
#include "ir/loop.h"
#include "sched/loop_ir.h"

namespace kiln::runtime {

// A condition the graph computes alongside its results that turns the whole run into an error
// (an index out of bounds, an integer raised to a negative power): NumPy raises there, and a
// kernel cannot. Two extra graph outputs: a bool flag (0-d) and the offending values (0-d or
// 1-d, int64 or float64), reported as `before` + the values as NumPy's messages print them,
// comma-separated, + `after`. Outputs come back only from a run whose flags are all clear, so
// an input written back by the caller is never half-updated.
struct RuntimeCheck {
  int32_t flag_output = -1;
  int32_t value_output = -1;
  ErrorKind kind = ErrorKind::Index;
  std::string before, after;
  DType value_dtype = DType::Int64;
  int64_t value_count = 1;

  int64_t value_bytes() const { return value_count * dtype_size(value_dtype); }
  // The error's message from the value output's bytes: `before`, the values comma-separated,
  // `after`; where `after` holds "{}", the first value, then `after` with the next at each {}.
  std::string message(const void* values) const;
};

// How an Executable runs (from the target and the mode word, api/options.h).
struct ExecutionSettings {
  int threads = 1;            // the target's threads (fewer on a busy machine: thread_budget)
  bool pool_outputs = false;  // reduce-overhead: outputs come from a pool of recycled blocks
  // reduce-overhead on a GPU: a run replays one captured CUDA graph (runtime/cuda/cuda_executable.h)
  bool cuda_graphs = false;
  // default mode on a GPU: replay a graph once runs are found host-bound (cuda_executable.h)
  bool host_bound_graphs = false;
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
  virtual ~Executable();
  // Inputs must match the program's input count, dtypes, shapes and strides (checked: an
  // undefined or mismatched Array is a kiln::Error naming it, never a wild read).
  // Outputs that are not defined() are allocated; defined ones must be contiguous and match.
  // Complex inputs and outputs are viewed as real (..., 2) arrays, with no copy. An output
  // sharing memory with an input or another output is computed apart and copied into it.
  void run(const std::vector<Array>& inputs, std::vector<Array>& outputs);

  // Bytes the program's inputs and outputs span: callers release Python's GIL for big runs.
  int64_t io_bytes() const { return io_bytes_; }
  const sched::Program& program() const { return program_; }
  const std::vector<int32_t>& input_buffers() const { return input_buffers_; }  // by input
  // Whether input / output k is complex in the caller's signature: its buffer in the program
  // is the real (..., 2) array of its parts (ir/complex_lowering.h).
  bool complex_input(size_t k) const {
    return k < settings_.complex_inputs.size() && settings_.complex_inputs[k];
  }
  bool complex_output(size_t k) const {
    return k < settings_.complex_outputs.size() && settings_.complex_outputs[k];
  }
  size_t output_count() const { return program_.output_buffers.size() - 2 * checks_.size(); }
  // (output, input) for each output written into the memory of the input donated to it
  // (sched/donated_outputs.h): a run returns that input's array as the output.
  const std::vector<std::pair<size_t, size_t>>& in_place_outputs() const { return in_place_outputs_; }
  bool written_in_place(size_t output) const {
    return std::any_of(in_place_outputs_.begin(), in_place_outputs_.end(),
                       [&](const auto& pair) { return pair.first == output; });
  }
  // Threads each step runs its parallel regions on (the CPU's), before the busy-machine budget
  // (after autotuning: what it chose); empty on other devices.
  const std::vector<int>& step_threads() const { return step_threads_; }

 protected:
  // checks: the program's last outputs are theirs (see RuntimeCheck); run() hides them.
  Executable(sched::Program program, std::vector<RuntimeCheck> checks, ExecutionSettings settings);
  // run() on real arrays, after check_inputs().
  virtual void run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) = 0;
  // A new output of `buffer` (from the output pool under reduce-overhead); a caller's output
  // array must be contiguous and match.
  Array allocate_output(const sched::Buffer& buffer);
  void check_output(const sched::Buffer& buffer, const Array& out) const;
  // The outputs written in place are their inputs' arrays; throws the first failed
  // RuntimeCheck's error; then drops the checks' outputs.
  void finish_outputs(const std::vector<Array>& inputs, std::vector<Array>& outputs) const;

  sched::Program program_;
  std::vector<RuntimeCheck> checks_;
  ExecutionSettings settings_;
  std::vector<int32_t> input_buffers_;  // by input number
  std::vector<std::pair<size_t, size_t>> in_place_outputs_;
  // The first step that writes an input (sched/donated_outputs.h): a run with checks tests
  // them before it (test_checks_before).
  size_t first_input_write_ = 0;
  // Throws the first failed check's error when step `k` is the first write into an input,
  // the checks' flags and values read where the run wrote them.
  void test_checks_before(size_t k, char* const* table) const;
  std::vector<int> step_threads_;       // by step
  std::shared_ptr<OutputPool> output_pool_;  // reduce-overhead only
  std::mutex run_mutex_;

 public:
  struct ForkGuard;  // pthread_atfork's handlers: no run is in flight at a fork

 private:
  void check_inputs(const std::vector<Array>& inputs) const;
  void run_checked(const std::vector<Array>& inputs, std::vector<Array>& outputs);
  int64_t io_bytes_ = 0;
};

// max-autotune's record beside a compiled program (ExecutionSettings::tuning_file): `header`,
// then one choice per step. read_tuning fills `values` (its size: the step count) and returns
// true only for a record of that header and size whose values all lie in [least, most];
// anything else means "not tuned yet". write_tuning leaves no record in a read-only cache.
bool read_tuning(const std::string& path, const std::string& header, int least, int most,
                 std::vector<int>& values);
void write_tuning(const std::string& path, const std::string& header,
                  const std::vector<int>& values);

// Runs the steps of `program` in order, following graph loops (sched::StepKind). `memory`
// reads and writes the 0-d loop buffers wherever they live: read_int64(pointer),
// read_bool(pointer), write_index(buffer, pointer, value) (a loop's induction variable: its
// buffer's number too, as buffers of disjoint lifetimes share an address). `whole_loop(k)` may
// run the loop starting at LoopBegin step k itself (a compiled loop) and return true; `visit(k)`
// runs kernel and extern step k.
template <class Memory, class WholeLoop, class Visit>
void walk_steps(const sched::Program& program, char** table, Memory&& memory,
                WholeLoop&& whole_loop, Visit&& visit) {
  struct Active {
    int64_t start, trips, done;
  };
  std::vector<Active> loops;
  for (size_t k = 0; k < program.steps.size();) {
    const sched::Step& step = program.steps[k];
    const sched::LoopControl& loop = step.loop;
    if (step.kind == sched::StepKind::LoopBegin && whole_loop(k)) {
      k = static_cast<size_t>(loop.partner) + 1;
      continue;
    }
    if (step.kind == sched::StepKind::LoopBegin) {
      auto bound = [&](int32_t buffer, int64_t value) {
        return buffer < 0 ? value : memory.read_int64(table[buffer]);
      };
      int64_t start = bound(loop.start, loop.start_value), stop = bound(loop.stop, loop.stop_value);
      int64_t trips = ir::loop_trip_count(start, stop, loop.step);
      if (trips == 0 || (loop.condition >= 0 && !memory.read_bool(table[loop.condition]))) {
        k = static_cast<size_t>(loop.partner) + 1;
        continue;
      }
      loops.push_back({start, trips, 0});
      memory.write_index(loop.induction, table[loop.induction], start);
    } else if (step.kind == sched::StepKind::LoopEnd) {
      for (const auto& [carried, next] : loop.swaps) std::swap(table[carried], table[next]);
      Active& active = loops.back();
      bool go_on = loop.condition < 0 || memory.read_bool(table[loop.condition]);
      if (++active.done < active.trips && go_on) {
        const sched::LoopControl& begin = program.steps[static_cast<size_t>(loop.partner)].loop;
        memory.write_index(loop.induction, table[loop.induction],
                           active.start + active.done * begin.step);
        k = static_cast<size_t>(loop.partner) + 1;
        continue;
      }
      loops.pop_back();
    } else {
      visit(k);
    }
    ++k;
  }
}

// The C++ target's library run on this process's CPU threads.
class HostExecutable final : public Executable {
 public:
  // kernels: how each of the program's kernels is called (one per Program kernel).
  HostExecutable(sched::Program program, std::vector<KernelCall> kernels,
                 std::shared_ptr<SharedLibrary> library, std::vector<RuntimeCheck> checks = {},
                 ExecutionSettings settings = {});

 private:
  using KernelFunction = void (*)(char* const*);
  using LoopFunction = void (*)(char**);  // writes the swapped buffer pointers back
  void run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) override;
  void run_steps(char** table, int budget);
  template <class Visit>
  void walk(char** table, int threads, Visit&& visit);
  void run_kernel(size_t kernel, char* const* table, int threads);
  void autotune(char** table);
  // The kernels' and compiled loops' addresses in the library as `use` has it loaded.
  void resolve(const SharedLibrary::Use& use);

  std::shared_ptr<SharedLibrary> library_;
  uint64_t generation_ = 0;  // the library's load the addresses below are from
  std::vector<std::string> kernel_symbols_;
  std::vector<KernelFunction> kernels_;
  std::vector<std::vector<int32_t>> arguments_;  // by kernel: its buffers, in call order
  std::vector<char*> argument_pointers_;          // scratch for one call's arguments
  std::shared_ptr<void> arena_;
  std::vector<char*> table_;
  bool any_parallel_ = false;  // some kernel has a parallel region, or a library runs
  bool tuned_ = false;
  // Compiled loops (codegen/cpp/loop_driver.h), by the step index of their LoopBegin.
  struct CompiledLoop {
    LoopFunction function = nullptr;
    std::vector<int32_t> buffers;
  };
  std::vector<CompiledLoop> compiled_loops_;
  std::vector<char*> loop_arguments_;  // scratch for one compiled loop's call
};

}  // namespace kiln::runtime
