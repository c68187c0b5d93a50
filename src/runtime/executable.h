// An Executable: a scheduled Program bound to its compiled kernels. It owns the arena for
// intermediates (allocated once, reused by every call: no allocation per call in steady state
// apart from the outputs) and runs the steps in order: kernel calls and extern calls.
// Safe to run from several threads: runs of one Executable take turns (they share the arena).
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "codegen/cpp/cpp_emitter.h"
#include "kiln/array.h"
#include "runtime/shared_library.h"
#include "sched/loop_ir.h"

namespace kiln::runtime {

class Executable {
 public:
  // kernels: how each of the program's kernels is called (codegen::CppSource::kernels).
  Executable(sched::Program program, std::vector<codegen::KernelCall> kernels,
             std::shared_ptr<SharedLibrary> library);

  // Inputs must match the program's input count, dtypes, shapes and strides (checked: an
  // undefined or mismatched Array is a kiln::Error naming it, never a wild read).
  // Outputs that are not defined() are allocated; defined ones must be contiguous and match.
  void run(const std::vector<Array>& inputs, std::vector<Array>& outputs);

  // Bytes the program's inputs and outputs span: callers release Python's GIL for big runs.
  int64_t io_bytes() const { return io_bytes_; }

  const sched::Program& program() const { return program_; }
  size_t output_count() const { return program_.output_buffers.size(); }

 private:
  using KernelFunction = void (*)(char* const*);
  sched::Program program_;
  std::shared_ptr<SharedLibrary> library_;
  std::vector<KernelFunction> kernels_;
  std::vector<std::vector<int32_t>> arguments_;  // by kernel: its buffers, in call order
  std::vector<char*> argument_pointers_;          // scratch for one call's arguments
  void check_inputs(const std::vector<Array>& inputs) const;

  std::shared_ptr<void> arena_;
  std::vector<char*> table_;
  std::vector<int32_t> input_buffers_;  // by input number
  int64_t io_bytes_ = 0;
  std::mutex run_mutex_;
};

}  // namespace kiln::runtime
