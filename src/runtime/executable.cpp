#include "runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_set>
#include <utility>

#include <pthread.h>

#include "extern/extern_calls.h"
#include "ir/loop.h"
#include "kiln/error.h"
#include "runtime/device_arrays.h"
#include "runtime/host_allocator.h"
#include "runtime/numpy_text.h"
#include "runtime/output_pool.h"
#include "runtime/private_files.h"
#include "runtime/thread_budget.h"
#include "sched/donated_outputs.h"

namespace kiln::runtime {
namespace {

// A value of a check's output, which may lie at any byte offset of a pinned copy.
template <typename T>
T load(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

// Where the biggest intermediate comes from: what an out-of-memory message points at.
std::string largest_intermediate_origin(const sched::Program& program) {
  const sched::Buffer* largest = nullptr;
  int64_t largest_bytes = -1;
  for (const sched::Buffer& buffer : program.buffers) {
    if (buffer.role != sched::BufferRole::Intermediate) continue;
    int64_t bytes = dtype_size(buffer.dtype);
    for (int64_t extent : buffer.shape) bytes *= extent;
    if (bytes > largest_bytes) largest = &buffer, largest_bytes = bytes;
  }
  return largest ? largest->origin : "the graph";
}

// A new output array; out of memory is a MemoryError naming the op and the user's line.
Array allocate(const sched::Buffer& buffer) {
  try {
    return Array::empty(buffer.dtype, buffer.shape);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::Memory) throw;
    throw Error(ErrorKind::Memory, "kiln: " + buffer.origin + ": cannot allocate the result: " +
                                       (error.what() + std::strlen("kiln: ")));
  }
}

bool has_parallel_region(const std::vector<sched::Stmt>& body) {
  for (const sched::Stmt& s : body)
    if (s.parallel || has_parallel_region(s.body)) return true;
  return false;
}

}  // namespace

bool read_tuning(const std::string& path, const std::string& header, int least, int most,
                 std::vector<int>& values) {
  if (path.empty()) return false;
  constexpr size_t kMaxTuningBytes = 64 << 10;  // a number a line; anything bigger is not one
  Descriptor file = open_private_file(path);
  std::string text;
  if (!file.valid() || !read_all(file.get(), text, kMaxTuningBytes)) return false;
  std::istringstream lines(text);
  std::string first;
  if (!std::getline(lines, first) || first != header) return false;
  std::vector<int> read;
  int value;
  while (lines >> value) {
    if (value < least || value > most) return false;
    read.push_back(value);
  }
  if (!lines.eof() || read.size() != values.size()) return false;
  values = std::move(read);
  return true;
}

void write_tuning(const std::string& path, const std::string& header,
                  const std::vector<int>& values) {
  if (path.empty()) return;
  std::string text = header + "\n";
  for (int value : values) text += std::to_string(value) + "\n";
  try {
    write_private_file(path, text);
  } catch (const Error&) {
    // A read-only cache keeps the choice for this process only.
  }
}

namespace {

// The host autotuning record: one thread count per step.
constexpr const char* kTuningHeader = "kiln-autotune 1";
constexpr int kMostTunedThreads = 4096;

}  // namespace

// A fork while another thread runs an executable (its run mutex held, a parallel region in
// flight: the Python caller released the GIL) left the child that mutex locked for good: the
// child's first call of that function waited forever. A fork waits for runs in flight, and
// starts none meanwhile (as glibc's malloc does with its arenas).
struct Executable::ForkGuard {
  std::mutex mutex;
  std::unordered_set<Executable*> live;

  static ForkGuard& instance() {
    static auto* guard = new ForkGuard;  // never destroyed: a fork may follow static destructors
    return *guard;
  }
  static void prepare() {
    ForkGuard& guard = instance();
    guard.mutex.lock();
    for (Executable* executable : guard.live) executable->run_mutex_.lock();
  }
  static void release() {  // in the parent and in the child
    ForkGuard& guard = instance();
    for (Executable* executable : guard.live) executable->run_mutex_.unlock();
    guard.mutex.unlock();
  }
};

namespace {
[[maybe_unused]] const int fork_guard = pthread_atfork(Executable::ForkGuard::prepare,
                                                       Executable::ForkGuard::release,
                                                       Executable::ForkGuard::release);
}  // namespace

Executable::~Executable() {
  ForkGuard& guard = ForkGuard::instance();
  std::lock_guard<std::mutex> lock(guard.mutex);
  guard.live.erase(this);
}

Executable::Executable(sched::Program program, std::vector<RuntimeCheck> checks,
                       ExecutionSettings settings)
    : program_(std::move(program)), checks_(std::move(checks)), settings_(std::move(settings)) {
  step_threads_.assign(program_.steps.size(), std::max(1, settings_.threads));
  if (settings_.pool_outputs) output_pool_ = std::make_shared<OutputPool>();
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role == sched::BufferRole::Input) {
      if (input_buffers_.size() <= static_cast<size_t>(buffer.number))
        input_buffers_.resize(static_cast<size_t>(buffer.number) + 1, -1);
      input_buffers_[static_cast<size_t>(buffer.number)] = static_cast<int32_t>(b);
    }
    if (buffer.role == sched::BufferRole::Input || buffer.role == sched::BufferRole::Output)
      io_bytes_ += sched::buffer_bytes(buffer);
  }
  for (size_t k = 0; k < program_.output_buffers.size(); ++k) {
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(program_.output_buffers[k])];
    if (buffer.role == sched::BufferRole::Input)
      in_place_outputs_.emplace_back(k, static_cast<size_t>(buffer.number));
  }
  first_input_write_ = sched::first_input_write(program_);
  ForkGuard& guard = ForkGuard::instance();
  std::lock_guard<std::mutex> lock(guard.mutex);
  guard.live.insert(this);
}

HostExecutable::HostExecutable(sched::Program program, std::vector<KernelCall> kernels,
                               std::shared_ptr<SharedLibrary> library,
                               std::vector<RuntimeCheck> checks, ExecutionSettings settings)
    : Executable(std::move(program), std::move(checks), std::move(settings)),
      library_(std::move(library)) {
  size_t most_arguments = 0;
  for (KernelCall& kernel : kernels) {
    kernel_symbols_.push_back(std::move(kernel.symbol));
    most_arguments = std::max(most_arguments, kernel.arguments.size());
    arguments_.push_back(std::move(kernel.arguments));
  }
  argument_pointers_.resize(most_arguments + 2);  // + the thread count and the size table
  for (const sched::Kernel& kernel : program_.kernels)
    any_parallel_ = any_parallel_ || has_parallel_region(kernel.body);
  for (const sched::Step& step : program_.steps)  // libraries run on several threads too
    any_parallel_ = any_parallel_ || step.kind == sched::StepKind::Extern;
  compiled_loops_.resize(program_.steps.size());
  for (size_t begin : sched::compiled_loops(program_)) {
    CompiledLoop& loop = compiled_loops_[begin];
    loop.buffers = sched::compiled_loop_buffers(program_, arguments_, begin);
    loop_arguments_.resize(std::max(loop_arguments_.size(), loop.buffers.size() + 1));
  }
  resolve(library_->use(&program_));
  if (settings_.autotune)
    tuned_ = read_tuning(settings_.tuning_file, kTuningHeader, 1, kMostTunedThreads, step_threads_);
  if (program_.arena_bytes > 0) {
    size_t bytes = (static_cast<size_t>(program_.arena_bytes) + 63) / 64 * 64;
    try {
      arena_ = allocate_host(bytes);
    } catch (const Error& error) {
      throw Error(ErrorKind::Memory, std::string(error.what()) + " for the intermediates of " +
                                         largest_intermediate_origin(program_));
    }
  }
  table_.assign(program_.buffers.size(), nullptr);
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role == sched::BufferRole::Intermediate)
      table_[b] = static_cast<char*>(arena_.get()) + buffer.arena_offset;
    if (buffer.role == sched::BufferRole::Constant)  // kernels use their own static copy
      table_[b] = const_cast<char*>(reinterpret_cast<const char*>(buffer.constant_data->data()));
  }
}

void HostExecutable::resolve(const SharedLibrary::Use& use) {
  kernels_.clear();
  for (const std::string& symbol : kernel_symbols_)
    kernels_.push_back(reinterpret_cast<KernelFunction>(use.symbol(symbol)));
  for (size_t begin : sched::compiled_loops(program_))
    compiled_loops_[begin].function =
        reinterpret_cast<LoopFunction>(use.symbol("kiln_loop" + std::to_string(begin)));
  generation_ = use.generation();
}

namespace {
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  return text + ")";
}
}  // namespace

void Executable::check_inputs(const std::vector<Array>& inputs) const {
  if (inputs.size() != input_buffers_.size())
    throw Error(ErrorKind::Value, "kiln: run: the compiled graph takes " +
                                      std::to_string(input_buffers_.size()) + " inputs, got " +
                                      std::to_string(inputs.size()));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Array& input = inputs[k];
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(input_buffers_[k])];
    // Made only for a message: a model's call passes hundreds of inputs.
    auto name = [k] { return "kiln: run: input " + std::to_string(k); };
    if (!input.defined())
      throw Error(ErrorKind::Value, name() + " is an undefined (default-constructed or moved-from) kiln::Array");
    if (input.dtype() != buffer.dtype || input.shape() != buffer.shape)
      throw Error(input.dtype() != buffer.dtype ? ErrorKind::Type : ErrorKind::Value,
                  name() + " is " + std::string(dtype_name(input.dtype())) + " " +
                      shape_text(input.shape()) + "; the graph was compiled for " +
                      std::string(dtype_name(buffer.dtype)) + " " + shape_text(buffer.shape));
    if (input.size() == 0) continue;  // an empty array reads nothing, whatever its strides
    for (size_t d = 0; d < buffer.shape.size(); ++d)
      if (buffer.shape[d] > 1 && input.strides()[d] != buffer.strides[d])
        throw Error(ErrorKind::Value, name() + " has strides " + shape_text(input.strides()) +
                                          "; the graph was compiled for " +
                                          shape_text(buffer.strides));
  }
}

namespace {

using Span = std::pair<uintptr_t, uintptr_t>;

// The bytes `array` reaches, as [first, last); empty for an empty or undefined array.
Span byte_span(const Array& array) {
  auto [low, high] = element_span(array.shape(), array.strides());
  if (high < low || array.data() == nullptr) return {0, 0};
  const auto base = reinterpret_cast<uintptr_t>(array.data());
  const auto item = static_cast<intptr_t>(dtype_size(array.dtype()));
  return {base + low * item, base + (high + 1) * item};
}

bool overlap(Span a, Span b) {
  return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
}

}  // namespace

void Executable::run(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  // A caller's output that shares memory with an input or an earlier output (f.run({x}, {x})
  // for x.T + 1): the kernels would read what they already wrote. It is computed into a new
  // array and copied into the caller's after the run, as NumPy's out= does. Each array's
  // span is computed once (the torch front end hands a model's hundreds of inputs each call).
  std::vector<std::pair<size_t, Array>> shared;
  const size_t given = std::min(outputs.size(), output_count());
  if (std::any_of(outputs.begin(), outputs.begin() + static_cast<ptrdiff_t>(given),
                  [](const Array& output) { return output.data() != nullptr; })) {
    std::vector<Span> spans;  // the inputs', then the outputs' before k
    spans.reserve(inputs.size() + given);
    for (const Array& input : inputs) spans.push_back(byte_span(input));
    for (size_t k = 0; k < given; ++k) {
      const Span span = byte_span(outputs[k]);
      if (std::any_of(spans.begin(), spans.end(),
                      [&](const Span& other) { return overlap(span, other); }))
        shared.emplace_back(k, std::exchange(outputs[k], Array()));
      spans.push_back(span);
    }
  }
  if (shared.empty()) return run_checked(inputs, outputs);
  auto give_back = [&] {
    for (auto& [k, caller] : shared) outputs[k] = std::move(caller);
  };
  try {
    run_checked(inputs, outputs);
  } catch (...) {
    give_back();
    throw;
  }
  for (auto& [k, caller] : shared) {
    const Array& result = outputs[k];
    if (caller.dtype() != result.dtype() || caller.shape() != result.shape() ||
        !caller.is_contiguous() || caller.device() != Device::Cpu ||
        result.device() != Device::Cpu) {
      const std::string message =
          "kiln: output " + std::to_string(k) + " shares memory with an input or another "
          "output; it must be a contiguous " + std::string(dtype_name(result.dtype())) +
          " array of the result's shape in CPU memory (or pass a separate array)";
      give_back();
      throw Error(ErrorKind::Value, message);
    }
  }
  for (auto& [k, caller] : shared)
    std::memcpy(caller.data(), outputs[k].data(), static_cast<size_t>(outputs[k].nbytes()));
  give_back();
}

void Executable::run_checked(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  const std::vector<bool>&complex_inputs = settings_.complex_inputs,
                         &complex_outputs = settings_.complex_outputs;
  if (complex_inputs.empty() && complex_outputs.empty()) {
    check_inputs(inputs);
    return run_real(inputs, outputs);
  }
  std::vector<Array> real_inputs = inputs;
  for (size_t k = 0; k < real_inputs.size() && k < complex_inputs.size(); ++k) {
    if (!complex_inputs[k]) continue;
    if (!is_complex(inputs[k].dtype()))
      throw Error(ErrorKind::Type, "kiln: run: input " + std::to_string(k) + " is " +
                                       std::string(dtype_name(inputs[k].dtype())) +
                                       "; the graph was compiled for a complex array");
    real_inputs[k] = inputs[k].view_as_real();
  }
  for (size_t k = 0; k < outputs.size() && k < complex_outputs.size(); ++k)
    if (complex_outputs[k] && outputs[k].data() != nullptr && is_complex(outputs[k].dtype()))
      outputs[k] = outputs[k].view_as_real();
  check_inputs(real_inputs);
  run_real(real_inputs, outputs);
  for (size_t k = 0; k < outputs.size() && k < complex_outputs.size(); ++k)
    if (complex_outputs[k]) outputs[k] = outputs[k].view_as_complex();
}

void Executable::check_output(const sched::Buffer& buffer, const Array& out) const {
  if (out.dtype() != buffer.dtype || out.shape() != buffer.shape || !out.is_contiguous())
    throw Error(ErrorKind::Value, "kiln: output " + std::to_string(buffer.number) +
                                      " must be a contiguous " + std::string(dtype_name(buffer.dtype)) +
                                      " array of the result's shape");
}

void Executable::test_checks_before(size_t k, char* const* table) const {
  if (k != first_input_write_) return;
  for (const RuntimeCheck& check : checks_) {
    const auto flag = static_cast<size_t>(program_.output_buffers[static_cast<size_t>(check.flag_output)]);
    if (!*reinterpret_cast<const bool*>(table[flag])) continue;
    const auto value = static_cast<size_t>(program_.output_buffers[static_cast<size_t>(check.value_output)]);
    throw Error(check.kind, check.message(table[value]));
  }
}

std::string RuntimeCheck::message(const void* values) const {
  auto value_text = [&](int64_t k) {
    const char* value = static_cast<const char*>(values) + k * dtype_size(value_dtype);
    return value_dtype == DType::Float64 ? float_text(load<double>(value))
                                         : std::to_string(load<int64_t>(value));
  };
  std::string text = before;
  if (after.find("{}") != std::string::npos && value_count > 0) {
    // "index {v0} is out of bounds for axis 0 with size {}": each next value at a {}
    text += value_text(0);
    int64_t next = 1;
    for (size_t at = 0; at < after.size(); ++at) {
      if (after.compare(at, 2, "{}") == 0 && next < value_count) {
        text += value_text(next++);
        ++at;
      } else {
        text += after[at];
      }
    }
    return text;
  }
  for (int64_t k = 0; k < value_count; ++k) {
    if (k > 0) text += ", ";
    text += value_text(k);
  }
  return text + after;
}

void Executable::finish_outputs(const std::vector<Array>& inputs,
                                std::vector<Array>& outputs) const {
  for (const auto& [output, input] : in_place_outputs_) outputs[output] = inputs[input];
  for (const RuntimeCheck& check : checks_) {
    if (!*outputs[static_cast<size_t>(check.flag_output)].data_as<bool>()) continue;
    throw Error(check.kind, check.message(outputs[static_cast<size_t>(check.value_output)].data()));
  }
  outputs.resize(output_count());
}

void HostExecutable::run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  auto on_host = [](const Array& array, const char* what, size_t k) {
    if (array.device() != Device::Cpu)
      throw Error(ErrorKind::Value, "kiln: " + std::string(what) + " " + std::to_string(k) +
                                        " is in GPU memory; the function was compiled for the "
                                        "CPU (compile it with device 'cuda')");
  };
  for (size_t k = 0; k < inputs.size(); ++k) on_host(inputs[k], "input", k);
  for (size_t k = 0; k < outputs.size(); ++k) on_host(outputs[k], "output", k);
  std::lock_guard<std::mutex> lock(run_mutex_);
  // Keeps the library loaded until the run is over (loaded again if it was unloaded).
  SharedLibrary::Use use = library_->use(&program_);
  if (use.generation() != generation_) resolve(use);
  outputs.resize(program_.output_buffers.size());
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role == sched::BufferRole::Input) {
      table_[b] = static_cast<char*>(inputs[static_cast<size_t>(buffer.number)].data());
    } else if (buffer.role == sched::BufferRole::Output) {
      Array& out = outputs[static_cast<size_t>(buffer.number)];
      if (out.data() == nullptr)
        out = allocate_output(buffer);
      else
        check_output(buffer, out);
      table_[b] = static_cast<char*>(out.data());
    }
  }
  if (settings_.autotune && !tuned_)
    autotune(table_.data());  // this call's run: the steps once, each timed kernel run again
  else  // The free-core budget only matters to parallel regions (and costs a clock read per call).
    run_steps(table_.data(), any_parallel_ ? thread_budget(settings_.threads) : 1);
  finish_outputs(inputs, outputs);
}

void HostExecutable::run_kernel(size_t kernel, char* const* table, int threads) {
  const std::vector<int32_t>& arguments = arguments_[kernel];
  for (size_t k = 0; k < arguments.size(); ++k) argument_pointers_[k] = table[arguments[k]];
  argument_pointers_[arguments.size()] = reinterpret_cast<char*>(static_cast<intptr_t>(threads));
  argument_pointers_[arguments.size() + 1] =
      reinterpret_cast<char*>(const_cast<int64_t*>(settings_.size_table.data()));
  kernels_[kernel](argument_pointers_.data());
}

// The steps in order, a compiled loop as one call; `visit(k)` runs kernel and extern step k.
template <class Visit>
void HostExecutable::walk(char** table, int threads, Visit&& visit) {
  struct HostMemory {
    int64_t read_int64(const char* p) const { return *reinterpret_cast<const int64_t*>(p); }
    bool read_bool(const char* p) const { return *reinterpret_cast<const bool*>(p); }
    void write_index(int32_t, char* p, int64_t value) const {
      *reinterpret_cast<int64_t*>(p) = value;
    }
  };
  auto whole_loop = [&](size_t k) {
    const CompiledLoop& compiled = compiled_loops_[k];
    if (compiled.function == nullptr) return false;
    for (size_t j = 0; j < compiled.buffers.size(); ++j) loop_arguments_[j] = table[compiled.buffers[j]];
    loop_arguments_[compiled.buffers.size()] = reinterpret_cast<char*>(static_cast<intptr_t>(threads));
    compiled.function(loop_arguments_.data());
    for (size_t j = 0; j < compiled.buffers.size(); ++j) table[compiled.buffers[j]] = loop_arguments_[j];
    return true;
  };
  walk_steps(program_, table, HostMemory{}, whole_loop, visit);
}

void HostExecutable::run_steps(char** table, int budget) {
  walk(table, std::min(settings_.threads, budget), [&](size_t k) {
    test_checks_before(k, table);
    const sched::Step& step = program_.steps[k];
    if (step.kind == sched::StepKind::Kernel)
      run_kernel(static_cast<size_t>(step.kernel), table, std::min(step_threads_[k], budget));
    else {
      LibraryThreads library_threads(budget);
      externs::run_extern_call(step.call, program_.buffers, table);
    }
  });
}

// The first call's run, with each kernel with a parallel region run alternately on one thread
// and on all, three times each, after the steps before it have produced its inputs (the first
// time it runs, inside a loop); one thread is kept only when its best time beats all threads'
// by 10% (the scheduler's choice stands on a tie, and timing noise must not flip it). Kernels
// only read their inputs and write their outputs, so running one again gives the same result;
// but one that writes into a donated input (sched/donated_outputs.h) reads what it wrote: not
// timed. Every step runs once more than its timing runs: the call's own run (a second pass
// over the program would apply an input's in-place update twice).
namespace {

bool writes_input(const sched::Program& program, const sched::Kernel& kernel) {
  return std::any_of(kernel.buffers_written.begin(), kernel.buffers_written.end(), [&](int32_t b) {
    return program.buffers[static_cast<size_t>(b)].role == sched::BufferRole::Input;
  });
}

}  // namespace

void HostExecutable::autotune(char** table) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [&](size_t kernel, int threads) {
    auto start = Clock::now();
    run_kernel(kernel, table, threads);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::vector<bool> timed(program_.steps.size(), false);
  walk(table, settings_.threads, [&](size_t k) {
    test_checks_before(k, table);
    const sched::Step& step = program_.steps[k];
    if (step.kind != sched::StepKind::Kernel) {
      externs::run_extern_call(step.call, program_.buffers, table);
      return;
    }
    size_t kernel = static_cast<size_t>(step.kernel);
    if (!timed[k] && settings_.threads > 1 && has_parallel_region(program_.kernels[kernel].body) &&
        !writes_input(program_, program_.kernels[kernel])) {
      run_kernel(kernel, table, settings_.threads);  // warm: caches, the thread team
      double one = 1e30, all = 1e30;
      for (int repeat = 0; repeat < 3; ++repeat) {
        one = std::min(one, seconds(kernel, 1));
        all = std::min(all, seconds(kernel, settings_.threads));
      }
      step_threads_[k] = one < 0.9 * all ? 1 : settings_.threads;
    }
    timed[k] = true;
    run_kernel(kernel, table, step_threads_[k]);
  });
  tuned_ = true;
  write_tuning(settings_.tuning_file, kTuningHeader, step_threads_);
}

Array Executable::allocate_output(const sched::Buffer& buffer) {
  if (!output_pool_) return allocate(buffer);
  int64_t bytes = dtype_size(buffer.dtype);
  for (int64_t extent : buffer.shape) bytes *= extent;
  std::shared_ptr<void> block = output_pool_->take(static_cast<size_t>(bytes));
  void* data = block.get();
  return Array::borrow(data, buffer.dtype, buffer.shape, buffer.strides, std::move(block));
}

}  // namespace kiln::runtime
