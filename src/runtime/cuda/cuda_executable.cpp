#include "runtime/cuda/cuda_executable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "ir/loop.h"
#include "kiln/error.h"
#include "runtime/device_arrays.h"

namespace kiln::runtime {
namespace {

constexpr int64_t kLeastLaunchesForAGraph = 3;
// A graph of more launches (a long loop's iterations, each captured) costs more to build and
// hold than its replays save.
constexpr int64_t kMostCapturedLaunches = 20000;
// Runs whose checks' flags may still be on their way to the host: with two, a call queues its
// work while the GPU still runs the previous call's (waiting for it, as each call did, left the
// GPU idle while the host started the next call: BERT-base 8x128 took 5.69 ms a call back to
// back for 5.32 ms of GPU time on an H200).
constexpr size_t kMostPendingChecks = 2;

// Loop bounds and conditions live on the device: the host reads them back one at a time. The
// induction variable is written on the steps' stream (a capture's too) by memsets, and not at
// all where no step reads it (`unread`: its buffer).
struct DeviceScalars {
  void* stream;
  const std::set<int32_t>* unread;
  int64_t read_int64(const char* p) const {
    int64_t value = 0;
    cuda::copy_to_host(&value, p, sizeof value, stream);
    return value;
  }
  bool read_bool(const char* p) const {
    bool value = false;
    cuda::copy_to_host(&value, p, sizeof value, stream);
    return value;
  }
  void write_index(int32_t buffer, char* p, int64_t value) const {
    if (unread->count(buffer) == 0) cuda::write_int64(p, value, stream);
  }
};

// Whether walking the program reads nothing back from the device and runs nothing on the host,
// so a CUDA graph can capture it: every graph loop runs on the device (step_kernel: a kernel
// replaces its steps) or has compile-time bounds and no while condition, and no sort runs on
// the host (one that no generated kernel replaces: codegen/cuda/sort_kernels.cpp).
bool capturable(const sched::Program& program, const std::vector<int32_t>& step_kernel) {
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const sched::Step& step = program.steps[k];
    if (step.kind == sched::StepKind::LoopBegin && step_kernel[k] >= 0) {
      k = static_cast<size_t>(step.loop.partner);
      continue;
    }
    if (step.kind == sched::StepKind::LoopBegin &&
        (step.loop.start >= 0 || step.loop.stop >= 0 || step.loop.condition >= 0))
      return false;
    if (step.kind == sched::StepKind::Extern && ir::is_sort(step.call.op) && step_kernel[k] < 0)
      return false;
  }
  return true;
}

// The buffers some kernel or extern step of `program` reads.
std::set<int32_t> buffers_read(const sched::Program& program) {
  std::set<int32_t> read;
  for (const sched::Kernel& kernel : program.kernels)
    read.insert(kernel.buffers_read.begin(), kernel.buffers_read.end());
  for (const sched::Step& step : program.steps)
    if (step.kind == sched::StepKind::Extern)
      read.insert(step.call.inputs.begin(), step.call.inputs.end());
  return read;
}

}  // namespace

CudaExecutable::CudaExecutable(sched::Program program, std::vector<CudaKernelCall> kernels,
                               std::vector<std::shared_ptr<cuda::Module>> modules,
                               std::vector<RuntimeCheck> checks, ExecutionSettings settings)
    : Executable(std::move(program), std::move(checks), std::move(settings)),
      modules_(std::move(modules)) {
  step_threads_.clear();
  plan_check_block();
  for (const sched::Step& step : program_.steps)
    if (step.kind == sched::StepKind::Extern) check_cuda_extern_call(step.call, program_.buffers);
  size_t most_arguments = 1;
  step_kernel_.assign(program_.steps.size(), -1);
  step_choice_.assign(program_.steps.size(), 0);
  for (CudaKernelCall& call : kernels) {
    if (call.replaces_step >= 0)
      step_kernel_.at(static_cast<size_t>(call.replaces_step)) = static_cast<int32_t>(kernels_.size());
    Kernel kernel;
    kernel.arguments = std::move(call.arguments);
    most_arguments = std::max(most_arguments, kernel.arguments.size());
    call.alternatives.insert(call.alternatives.begin(), std::move(call.launches));
    for (const std::vector<CudaLaunch>& launches : call.alternatives) {
      std::vector<Launch>& candidate = kernel.candidates.emplace_back();
      for (const CudaLaunch& launch : launches) {
        Launch l;
        for (const auto& module : modules_)
          if (l.function == nullptr) l.function = module->find(launch.symbol);
        if (l.function == nullptr)
          throw Error(ErrorKind::Internal, "kiln: no loaded CUDA module has " + launch.symbol);
        l.grid.x = static_cast<unsigned>(launch.blocks);
        l.block.x = static_cast<unsigned>(launch.threads);
        l.symbol = launch.symbol;
        l.sizes = launch.sizes;
        if (launch.scratch_bytes > 0) {
          l.scratch = cuda::allocate(launch.scratch_bytes);
          cuda::memset_zero(l.scratch.get(), launch.scratch_bytes, nullptr);
        }
        if (launch.scratch_of >= 0)
          l.scratch = candidate.at(static_cast<size_t>(launch.scratch_of)).scratch;
        candidate.push_back(std::move(l));
      }
    }
    kernels_.push_back(std::move(kernel));
  }
  argument_table_.resize(most_arguments + 1);  // + a launch's scratch
  // A graph replaces launches by one launch plus the copies in and out: worth it from a few
  // launches on (a one-kernel function runs as it is).
  // Loops of bounds known at compile time count each iteration's (a graph captures them all).
  int64_t launches = 0;
  std::vector<int64_t> trips{1};
  for (size_t k = 0; k < program_.steps.size(); ++k) {
    const sched::Step& step = program_.steps[k];
    if (step.kind == sched::StepKind::LoopBegin && step_kernel_[k] >= 0) {  // a device loop
      launches += trips.back();
      k = static_cast<size_t>(step.loop.partner);
      continue;
    }
    if (step.kind == sched::StepKind::LoopBegin)
      trips.push_back(trips.back() * ir::loop_trip_count(step.loop.start_value,
                                                         step.loop.stop_value, step.loop.step));
    if (step.kind == sched::StepKind::LoopEnd) trips.pop_back();
    launches += trips.back() * (step.kind == sched::StepKind::Extern ? 1
                                : step.kind == sched::StepKind::Kernel
                                    ? static_cast<int64_t>(
                                          kernels_[static_cast<size_t>(step.kernel)].candidates[0].size())
                                    : 0);
  }
  graphs_possible_ = (settings_.cuda_graphs || settings_.host_bound_graphs) &&
                     launches >= kLeastLaunchesForAGraph && launches <= kMostCapturedLaunches &&
                     capturable(program_, step_kernel_);
  if (settings_.autotune) read_step_choices();
  cuda::synchronize(nullptr);  // the zeroed scratch, before work on other streams
  if (program_.arena_bytes > 0) arena_ = cuda::allocate(program_.arena_bytes);
  table_.assign(program_.buffers.size(), nullptr);
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role == sched::BufferRole::Intermediate)
      table_[b] = static_cast<char*>(arena_.get()) + buffer.arena_offset;
    if (buffer.role == sched::BufferRole::Constant) {  // kernels name their own copy; loops may not
      int64_t bytes = static_cast<int64_t>(buffer.constant_data->size());
      constants_.push_back(cuda::allocate(bytes));
      cuda::copy_to_device(constants_.back().get(), buffer.constant_data->data(), bytes, nullptr);
      cuda::synchronize(nullptr);
      table_[b] = static_cast<char*>(constants_.back().get());
    }
  }
  const std::set<int32_t> read = buffers_read(program_);
  for (const sched::Step& step : program_.steps)
    if (step.kind == sched::StepKind::LoopBegin && !read.count(step.loop.induction))
      unread_inductions_.insert(step.loop.induction);
}

CudaExecutable::~CudaExecutable() {
  for (PendingChecks& pending : pending_checks_) {
    try {
      if (cuda::available()) pending.copied->wait();
    } catch (const Error&) {  // a failed context: its copies never land either
    }
  }
}

void CudaExecutable::launch_kernel(size_t kernel, char* const* table, void* stream,
                                   size_t choice) {
  const Kernel& k = kernels_[kernel];
  for (size_t a = 0; a < k.arguments.size(); ++a) argument_table_[a] = table[k.arguments[a]];
  for (const Launch& launch : k.candidates[choice]) {
    argument_table_[k.arguments.size()] = static_cast<char*>(launch.scratch.get());
    // The driver reads as many parameters as the function declares: a second one (its sizes)
    // only where the function is size-generic.
    void* params[] = {argument_table_.data(), const_cast<int64_t*>(launch.sizes.data())};
    cuda::launch(launch.function, launch.grid, launch.block, 0, stream, params, launch.symbol);
  }
}

// Asking the driver costs about a microsecond, and a model passes hundreds of parameters whose
// addresses stay the same from call to call: an address seen as device memory last time is
// still device memory (unified addressing keeps device and host ranges apart).
bool CudaExecutable::on_device_memory(size_t slot, const void* pointer) {
  if (pointer == nullptr) return false;
  if (slot < device_addresses_.size() && device_addresses_[slot] == pointer) return true;
  bool device = cuda::is_device_pointer(pointer);
  if (device_addresses_.size() <= slot) device_addresses_.resize(slot + 1, nullptr);
  device_addresses_[slot] = device ? pointer : nullptr;
  return device;
}

void CudaExecutable::queue_steps(char** table, void* stream,
                                 std::vector<std::shared_ptr<void>>* kept) {
  auto device_loop = [&](size_t k) {  // a loop run by one kernel (codegen/cuda/device_loops.cpp)
    if (step_kernel_[k] < 0) return false;
    launch_kernel(static_cast<size_t>(step_kernel_[k]), table, stream);
    return true;
  };
  walk_steps(
      program_, table, DeviceScalars{stream, &unread_inductions_}, device_loop,
      [&](size_t k) {
        if (tuning_now_ && !step_tuned_[k] && candidate_count(k) > 1)
          tune_step(k, table, stream);
        else
          run_step(k, table, stream, kept);
        if (tuning_now_) step_tuned_[k] = true;
      });
}

void CudaExecutable::run_step(size_t k, char* const* table, void* stream,
                              std::vector<std::shared_ptr<void>>* kept) {
  const sched::Step& step = program_.steps[k];
  const size_t choice = static_cast<size_t>(step_choice_[k]);
  if (step_kernel_[k] >= 0 && choice == 0)
    launch_kernel(static_cast<size_t>(step_kernel_[k]), table, stream);
  else if (step.kind == sched::StepKind::Extern)  // a skinny product's choice 1: the library's first
    run_cuda_extern_call(step.call, program_.buffers, table, stream, cuda_math(), kept,
                         step_kernel_[k] >= 0 ? 0 : static_cast<int>(choice));
  else
    launch_kernel(static_cast<size_t>(step.kernel), table, stream, choice);
}

void CudaExecutable::plan_check_block() {
  check_slot_.clear();
  check_bytes_ = 0;
  for (const RuntimeCheck& check : checks_) {  // 8 bytes for the flag, then the values
    check_slot_.push_back(check_bytes_);
    check_bytes_ += 8 + (check.value_bytes() + 7) / 8 * 8;
  }
  check_offset_.assign(program_.output_buffers.size(), -1);
  std::vector<int64_t> bytes(program_.output_buffers.size(), 0);
  for (const sched::Buffer& buffer : program_.buffers)
    if (buffer.role == sched::BufferRole::Output)
      bytes[static_cast<size_t>(buffer.number)] = sched::buffer_bytes(buffer);
  for (const sched::Step& step : program_.steps)
    if (step.kind == sched::StepKind::LoopBegin) return;
  for (const RuntimeCheck& check : checks_)
    if (bytes[static_cast<size_t>(check.flag_output)] != 1 ||
        bytes[static_cast<size_t>(check.value_output)] != check.value_bytes())
      return;
  for (size_t c = 0; c < checks_.size(); ++c) {
    check_offset_[static_cast<size_t>(checks_[c].flag_output)] = check_slot_[c];
    check_offset_[static_cast<size_t>(checks_[c].value_output)] = check_slot_[c] + 8;
  }
}

// Each check's flag (bool) and values go to its slot of pinned memory (check_slot_), copied on
// the stream; the outputs the caller sees for them are all-clear host arrays (finish_outputs drops
// them).
void CudaExecutable::defer_checks(std::vector<Array>& outputs, const void* block, void* stream) {
  if (checks_.empty()) return;
  PendingChecks pending;
  if (!spare_checks_.empty()) {
    pending = std::move(spare_checks_.back());
    spare_checks_.pop_back();
  } else {
    pending.host = cuda::allocate_pinned(check_bytes_);
    pending.copied = std::make_unique<cuda::Event>();
  }
  char* host = static_cast<char*>(pending.host.get());
  if (block != nullptr)
    cuda::copy_to_host_async(host, block, check_bytes_, stream);
  for (size_t c = 0; c < checks_.size(); ++c) {
    Array& flag = outputs[static_cast<size_t>(checks_[c].flag_output)];
    Array& value = outputs[static_cast<size_t>(checks_[c].value_output)];
    if (block == nullptr) {
      cuda::copy_to_host_async(host + check_slot_[c], flag.data(), 1, stream);
      cuda::copy_to_host_async(host + check_slot_[c] + 8, value.data(), checks_[c].value_bytes(),
                               stream);
    }
    flag = Array::from_vector(std::vector<bool>{false}, {});
    value = Array::zeros(checks_[c].value_dtype, {checks_[c].value_count});
  }
  pending.copied->record(stream);
  pending_checks_.push_back(std::move(pending));
}

void CudaExecutable::raise_pending_checks() {
  while (!pending_checks_.empty()) {
    PendingChecks& oldest = pending_checks_.front();
    if (pending_checks_.size() >= kMostPendingChecks)
      oldest.copied->wait();
    else if (!oldest.copied->done())
      return;
    spare_checks_.push_back(std::move(oldest));
    pending_checks_.pop_front();
    const char* host = static_cast<const char*>(spare_checks_.back().host.get());
    for (size_t c = 0; c < checks_.size(); ++c) {
      if (host[check_slot_[c]] == 0) continue;
      throw Error(checks_[c].kind, checks_[c].message(host + check_slot_[c] + 8) +
                                       " (in an earlier call: a run on the GPU does not wait "
                                       "for its checks, as CUDA's device-side asserts do not)");
    }
  }
}

void CudaExecutable::run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  raise_pending_checks();
  if (probe_.stage == HostBoundProbe::Stage::Judging) judge_replay();
  if (graphs_possible_ && replays()) {
    if (run_graph(inputs, outputs)) return;
    if (probe_.stage == HostBoundProbe::Stage::ReplayNext)  // this program cannot replay
      probe_.stage = HostBoundProbe::Stage::Queue;
  }
  void* stream = cuda_stream();
  std::vector<char*> table = table_;  // loops swap entries
  std::vector<std::shared_ptr<void>> copies;  // this call's device copies of host inputs
  bool on_device = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Array& input = inputs[k];
    char*& entry = table[static_cast<size_t>(input_buffers_[k])];
    if (on_device_memory(k, input.data())) {
      entry = static_cast<char*>(const_cast<void*>(input.data()));
      on_device = true;
      continue;
    }
    int64_t size = dtype_size(input.dtype());
    auto [low, high] = element_span(input.shape(), input.strides());
    int64_t bytes = (high - low + 1) * size;
    copies.push_back(cuda::allocate(bytes));
    char* base = static_cast<char*>(copies.back().get());
    if (bytes > 0)
      cuda::copy_to_device(base, static_cast<const char*>(input.data()) + low * size, bytes, stream);
    entry = base - low * size;
  }
  // An output written into a host input's device copy goes back into the input.
  auto copy_back_in_place = [&] {
    for (const auto& [output, k] : in_place_outputs_) {
      const Array& input = inputs[k];
      if (on_device_memory(k, input.data())) continue;
      int64_t size = dtype_size(input.dtype());
      auto [low, high] = element_span(input.shape(), input.strides());
      if (high >= low)
        cuda::copy_to_host(const_cast<char*>(static_cast<const char*>(input.data())) + low * size,
                           table[static_cast<size_t>(input_buffers_[k])] + low * size,
                           (high - low + 1) * size, stream);
    }
  };
  outputs.resize(program_.output_buffers.size());
  std::vector<int32_t> output_buffer(outputs.size(), -1);
  std::vector<std::shared_ptr<void>> device_outputs(outputs.size());  // host mode: copied back
  std::vector<bool> output_on_device(outputs.size(), false);
  std::shared_ptr<void> check_block;  // a device run's checks (check_offset_)
  if (on_device && checks_in_block())
    check_block = cuda::allocate(check_bytes_);
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role != sched::BufferRole::Output) continue;
    size_t n = static_cast<size_t>(buffer.number);
    Array& out = outputs[n];
    output_buffer[n] = static_cast<int32_t>(b);
    if (check_block && check_offset_[n] >= 0) {  // copied back by defer_checks
      table[b] = static_cast<char*>(check_block.get()) + check_offset_[n];
      continue;
    }
    if (out.data() != nullptr) {
      check_output(buffer, out);
      if (on_device_memory(inputs.size() + n, out.data())) {  // the caller's: written in place
        output_on_device[n] = true;
        table[b] = static_cast<char*>(out.data());
        continue;
      }
    }
    device_outputs[n] = cuda::allocate(sched::buffer_bytes(buffer));
    table[b] = static_cast<char*>(device_outputs[n].get());
    output_on_device[n] = out.data() == nullptr && on_device;
    if (out.data() == nullptr)
      out = on_device ? Array::borrow(device_outputs[n].get(), buffer.dtype, buffer.shape,
                                      buffer.strides, device_outputs[n], Device::Cuda)
                      : allocate_output(buffer);
  }
  const bool probing = on_device && graphs_possible_ && settings_.host_bound_graphs &&
                       probe_.stage == HostBoundProbe::Stage::Warming;
  const auto queued_from = std::chrono::steady_clock::now();
  if (settings_.autotune && !tuned_)
    tune_steps(table.data(), stream);
  else
    queue_steps(table.data(), stream, nullptr);
  if (probing) {  // the second run (the first warms cuDNN's plans up) is the one measured
    if (++probe_.device_runs == 2) {
      probe_.queue_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - queued_from).count();
      probe_.stage = HostBoundProbe::Stage::ReplayNext;
    }
    earlier_addresses_ = last_addresses_;  // what a capture compares with
    last_addresses_ = slot_addresses(inputs, outputs);
  }
  // Host outputs are copied back; an output may be a loop's carried value, whose buffer the loop
  // swapped: read the table.
  copy_back_in_place();
  for (size_t n = 0; n < outputs.size(); ++n) {
    if (output_buffer[n] < 0) continue;  // written into its input (finish_outputs)
    size_t b = static_cast<size_t>(output_buffer[n]);
    if (check_block && check_offset_[n] >= 0) continue;
    if (output_on_device[n]) {
      if (table[b] != outputs[n].data())
        cuda::copy_device_to_device(outputs[n].data(), table[b],
                                    sched::buffer_bytes(program_.buffers[b]), stream);
      continue;
    }
    int64_t bytes = sched::buffer_bytes(program_.buffers[b]);
    if (bytes > 0) cuda::copy_to_host(outputs[n].data(), table[b], bytes, stream);
  }
  // The runtime checks' flags: a device run leaves them to the next run; a host run (which
  // waits for the GPU anyway) reads them now.
  if (on_device) {
    defer_checks(outputs, check_block.get(), stream);
  } else {
    for (const RuntimeCheck& check : checks_)
      for (int32_t n : {check.flag_output, check.value_output}) {
        Array& out = outputs[static_cast<size_t>(n)];
        if (!output_on_device[static_cast<size_t>(n)]) continue;
        const sched::Buffer& buffer =
            program_.buffers[static_cast<size_t>(output_buffer[static_cast<size_t>(n)])];
        Array host = allocate_output(buffer);
        cuda::copy_to_host(host.data(), out.data(), sched::buffer_bytes(buffer), stream);
        out = std::move(host);
      }
  }
  if (!on_device) cuda::synchronize(stream);
  finish_outputs(inputs, outputs);
}

namespace {
thread_local void* current_stream = nullptr;
thread_local CudaMathSettings current_math;
}  // namespace

void set_cuda_stream(void* stream) { current_stream = stream; }
void* cuda_stream() { return current_stream; }
void set_cuda_math(CudaMathSettings math) { current_math = math; }
CudaMathSettings cuda_math() { return current_math; }

}  // namespace kiln::runtime
