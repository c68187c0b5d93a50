// A Program run on a CUDA device: the kernels of its loaded modules (codegen/cuda/cuda_emitter.h)
// launched in step order on the calling thread's stream (set_cuda_stream: the caller's, e.g.
// torch's current stream), intermediates in one device arena allocated once.
// Inputs may be host Arrays (NumPy's, the C++ API's), copied in as the span of memory they
// cover (strided ones are not repacked), or Arrays over device memory (torch, CuPy: borrowed by
// pointer), read in place. Outputs live where the inputs do: with any device input they are
// device Arrays the caller gets without a copy, and the call returns without waiting for the
// GPU; otherwise host Arrays, copied back. A graph loop of small kernels runs as one kernel that
// walks its iterations on the device (codegen/cuda/device_loops.cpp: CudaKernelCall::
// replaces_step names its LoopBegin); other graph loops run from the host, which reads each bound
// and condition back (8 bytes) per iteration. Extern calls (matmul, convolution) run in cuBLAS
// and cuDNN on the same stream (cuda_extern_calls.h); one the libraries cannot run is refused
// when the executable is made.
//
// Runtime checks (an index out of bounds) of a run whose results stay on the device are not
// waited for: their flags are copied to the host behind the work, and the first later run that
// finds the copy done raises the error, as CUDA's device-side asserts are reported late; a run
// waits only while kMostPendingChecks runs' flags are still on their way (so the host can queue
// the next call while the GPU works on this one). A run that copies results to the host raises
// its own.
//
// reduce-overhead (ExecutionSettings::cuda_graphs): every launch of a run is captured once
// into a CUDA graph and later runs replay it with one launch, as torch.compile's
// reduce-overhead does. A graph bakes addresses in: inputs whose address stays the same from
// call to call (a model's parameters) are read in place, the others are copied into buffers
// of the graph's own first; so are results: written in place into the caller's output arrays
// whose addresses repeat, copied out of the graph's buffers otherwise. A few graphs are kept,
// one per set of addresses taken in place (results alternating between two arrays). Calls are
// expected on one stream (the graph's buffers are reused). Programs of fewer than three
// launches or with host-driven loops that read bounds back, and runs from host inputs, run as usual.
//
// default mode (ExecutionSettings::host_bound_graphs) replays a graph too, once runs are found
// host-bound: a model of a few hundred small kernels and cuDNN calls (tens of microseconds of
// host time each) keeps the GPU waiting for the host. The second device run's queueing time is
// measured on the host, the third run replays a graph with its copies in and out timed on the
// GPU, and the fourth compares the two: later runs replay when queueing took longer than the
// replay (with a margin), and run as usual otherwise (the graph and its buffers are freed).
//
// max-autotune (ExecutionSettings::autotune): the first run times each kernel's launch lists
// (CudaKernelCall::alternatives: other block sizes and steps a thread), each product of few
// rows both as its generated kernel and in cuBLAS, and each library product as cuBLASLt's
// first candidates (cuda::Gemm::candidate), every candidate from the same contents of
// what the step writes (saved first, restored before each timing), and keeps the fastest. The
// choices go to ExecutionSettings::tuning_file, beside the cubins, for later processes.
#pragma once
#include <deque>
#include <memory>
#include <set>
#include <vector>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_extern_calls.h"
#include "runtime/executable.h"

namespace kiln::runtime {

// The stream this thread's CUDA executables queue their work on (null: the legacy default).
void set_cuda_stream(void* stream);
void* cuda_stream();
// How this thread's runs let cuBLAS and cuDNN round float32 (the torch backend passes torch's
// flags; the default is exact).
void set_cuda_math(CudaMathSettings math);
CudaMathSettings cuda_math();

class CudaExecutable final : public Executable {
 public:
  CudaExecutable(sched::Program program, std::vector<CudaKernelCall> kernels,
                 std::vector<std::shared_ptr<cuda::Module>> modules,
                 std::vector<RuntimeCheck> checks = {},
                 ExecutionSettings settings = {});
  ~CudaExecutable() override;  // waits for the checks' copies into pinned memory it frees
  // Whether device runs replay a graph now (reduce-overhead, or default mode's verdict).
  bool replays_graphs() const;
  // By step: the candidate it runs (max-autotune's choice; see step_choice_).
  const std::vector<int>& step_choices() const { return step_choice_; }

 private:
  void run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) override;
  // Launches kernel `kernel`'s launch list `choice` (0: its own; Kernel::candidates).
  void launch_kernel(size_t kernel, char* const* table, void* stream, size_t choice = 0);
  // Runs step `step` (a kernel, or an extern call or the generated kernel replacing it) as
  // step_choice_ says.
  void run_step(size_t step, char* const* table, void* stream,
                std::vector<std::shared_ptr<void>>* kept);
  // max-autotune (cuda_executable_tuning.cpp): the choices read back from the record, or
  // "not tuned"; a run that queues the steps timing each one's candidates, then records the
  // choices; the timing of one step's candidates, from the same contents of what it writes,
  // which keeps the fastest in step_choice_ and leaves the step's results as that one writes
  // them; the candidates of a step.
  void read_step_choices();
  void tune_steps(char** table, void* stream);
  void tune_step(size_t step, char* const* table, void* stream);
  int candidate_count(size_t step) const;
  // Whether `pointer`, input k's (slot k) or output n's (slot inputs + n), is device memory.
  bool on_device_memory(size_t slot, const void* pointer);
  // Queues the program's steps with buffer addresses `table` on `stream` (kept: see
  // run_cuda_extern_call).
  void queue_steps(char** table, void* stream, std::vector<std::shared_ptr<void>>* kept);
  // The reduce-overhead run (cuda_graphs.cpp, as the three below); false when this call cannot
  // replay (then run_real runs as usual).
  bool run_graph(const std::vector<Array>& inputs, std::vector<Array>& outputs);
  std::vector<const void*> slot_addresses(const std::vector<Array>& inputs,
                                          const std::vector<Array>& outputs) const;
  // Whether this call replays a graph (reduce-overhead, or default mode's probe and verdict).
  bool replays() const;
  // default mode: the verdict from the measured queueing time and the timed replay.
  void judge_replay();
  // Queues the copy of the checks' flags and values to pinned memory, read by a later call
  // (raise_pending_checks): from `block` (the layout check_offset_ describes) in one piece, or
  // from each check's output.
  void defer_checks(std::vector<Array>& outputs, const void* block, void* stream);
  // Raises the first error of the copies that are done, oldest first; waits for the oldest
  // while kMostPendingChecks are queued.
  void raise_pending_checks();
  void plan_check_block();  // check_offset_

  struct Launch {
    void* function = nullptr;
    cuda::Dim3 grid, block;
    std::string symbol;
    std::shared_ptr<void> scratch;  // CudaLaunch::scratch_bytes of zeroed device memory
    std::vector<int64_t> sizes;     // CudaLaunch::sizes: the function's second parameter
  };
  struct Kernel {
    std::vector<int32_t> arguments;
    // Its launch lists: its own first, then max-autotune's alternatives (CudaKernelCall).
    std::vector<std::vector<Launch>> candidates;
  };
  std::vector<std::shared_ptr<cuda::Module>> modules_;  // the program's units, any split
  std::vector<Kernel> kernels_;
  std::vector<int32_t> step_kernel_;   // by step: the kernel that replaces an extern call, or -1
  // By step: a kernel step's launch list (an index into Kernel::candidates); an extern step
  // with a generated replacement: 0 the generated kernel, 1 the library (max-autotune's choice).
  std::vector<int> step_choice_;
  bool tuned_ = false;       // max-autotune: step_choice_ is chosen (timed, or read back)
  bool tuning_now_ = false;  // this run times the candidates
  std::vector<bool> step_tuned_;
  std::vector<char*> argument_table_;  // scratch: one launch's kiln_arg_table
  std::shared_ptr<void> arena_;        // device memory
  std::vector<std::shared_ptr<void>> constants_;  // device copies of constant buffers
  std::vector<char*> table_;           // device pointer of each buffer
  std::vector<const void*> device_addresses_;  // by slot: the last address seen as device memory
  // reduce-overhead's state: the addresses of the last call's inputs, and the captured graph
  // with the buffers it reads and writes.
  struct CapturedGraph {
    std::shared_ptr<cuda::Graph> graph;
    std::vector<const void*> in_place;            // by slot: its address, or null: staged
    std::vector<std::shared_ptr<void>> staging;   // by input: the copy the graph reads
    std::vector<std::shared_ptr<void>> results;   // by output: what the graph writes, or null:
                                                  // it writes the caller's array in place
    std::vector<std::shared_ptr<void>> kept;      // library workspaces the graph uses
    std::shared_ptr<void> checks;                 // the block its checks write (check_offset_)
  };
  // A device run writes the runtime checks' flags and values into one block laid out as their
  // pinned host copy (check_slot_), copied back in one piece: a copy of a few bytes costs ~2 us
  // of GPU and host time, and BERT's four checks made 16 a call.
  // By output: its offset in the block, or -1 (not a check's; all -1 for a program with loops,
  // whose steps may move a carried buffer).
  std::vector<int64_t> check_offset_;
  // By check: its offset in the block and the pinned copy (8 bytes for the flag, then its
  // values, rounded up to 8 bytes); and their total.
  std::vector<int64_t> check_slot_;
  int64_t check_bytes_ = 0;
  bool checks_in_block() const { return !checks_.empty() && check_offset_[checks_[0].flag_output] >= 0; }
  struct PendingChecks {
    std::shared_ptr<void> host;             // pinned: check_bytes_ (check_slot_)
    std::unique_ptr<cuda::Event> copied;    // after the copies
  };
  std::deque<PendingChecks> pending_checks_;  // queued, oldest first
  std::vector<PendingChecks> spare_checks_;   // read, for reuse
  bool graphs_possible_ = false;
  // The loop induction variables (buffers) no step reads: never written. By buffer, not
  // address: an unread index may share its address with a read one (disjoint lifetimes).
  std::set<int32_t> unread_inductions_;
  // default mode's question (host_bound_graphs): does a replay beat queueing the steps?
  struct HostBoundProbe {
    enum class Stage { Warming, ReplayNext, Judging, Replay, Queue } stage = Stage::Warming;
    int device_runs = 0;                       // runs queued as usual while warming
    double queue_seconds = 0;                  // host time queueing the second one's steps
    std::unique_ptr<cuda::Event> start, end;   // around the timed replay
  };
  HostBoundProbe probe_;
  std::vector<bool> wanted_in_place(const std::vector<const void*>& addresses,
                                    size_t inputs) const;
  CapturedGraph* usable_graph(const std::vector<const void*>& addresses,
                              const std::vector<bool>& wanted, bool& complete);
  // By slot (inputs, then outputs): the addresses of the last two calls.
  std::vector<const void*> last_addresses_, earlier_addresses_;
  // Graphs captured for the addresses calls came with, the most recently used first: a few, so
  // that results alternating between two pooled tensors replay in place too.
  static constexpr size_t kMostGraphs = 3;
  static constexpr int kMostCaptures = 8;  // then one staging every slot serves the rest
  std::vector<std::unique_ptr<CapturedGraph>> graphs_;
  int captures_ = 0;
};

}  // namespace kiln::runtime
