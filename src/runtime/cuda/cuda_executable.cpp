#include "runtime/cuda/cuda_executable.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

// The elements a strided array covers: [lowest, highest] offsets from element 0.
std::pair<int64_t, int64_t> element_span(const std::vector<int64_t>& shape,
                                         const std::vector<int64_t>& strides) {
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return {0, -1};
    int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? low : high) += reach;
  }
  return {low, high};
}

// Loop bounds and conditions live on the device: the host reads them back one at a time.
struct DeviceScalars {
  int64_t read_int64(const char* p) const {
    int64_t value = 0;
    cuda::copy_to_host(&value, p, sizeof value, cuda_stream());
    return value;
  }
  bool read_bool(const char* p) const {
    bool value = false;
    cuda::copy_to_host(&value, p, sizeof value, cuda_stream());
    return value;
  }
  void write_int64(char* p, int64_t value) const {
    cuda::copy_to_device(p, &value, sizeof value, cuda_stream());
  }
};

}  // namespace

CudaExecutable::CudaExecutable(sched::Program program, std::vector<CudaKernelCall> kernels,
                               std::shared_ptr<cuda::Module> module,
                               std::vector<RuntimeCheck> checks, ExecutionSettings settings)
    : Executable(std::move(program), std::move(checks), std::move(settings)),
      module_(std::move(module)) {
  step_threads_.clear();
  for (const sched::Step& step : program_.steps)
    if (step.kind == sched::StepKind::Extern) {
      const sched::Buffer& out = program_.buffers[static_cast<size_t>(step.call.output)];
      throw Error(ErrorKind::Unsupported,
                  "kiln: " + out.origin + ": " + std::string(ir::op_name(step.call.op)) +
                      " does not run on device=\"cuda\" yet (cuBLAS/cuDNN calls are the next step)");
    }
  size_t most_arguments = 1;
  for (CudaKernelCall& call : kernels) {
    Kernel kernel;
    kernel.arguments = std::move(call.arguments);
    most_arguments = std::max(most_arguments, kernel.arguments.size());
    for (const CudaLaunch& launch : call.launches) {
      Launch l;
      l.function = module_->function(launch.symbol);
      l.grid.x = static_cast<unsigned>(launch.blocks);
      l.block.x = static_cast<unsigned>(launch.threads);
      l.symbol = launch.symbol;
      if (launch.scratch_bytes > 0) {
        l.scratch = cuda::allocate(launch.scratch_bytes);
        cuda::memset_zero(l.scratch.get(), launch.scratch_bytes, nullptr);
      }
      kernel.launches.push_back(std::move(l));
    }
    kernels_.push_back(std::move(kernel));
  }
  argument_table_.resize(most_arguments + 1);  // + a launch's scratch
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
}

void CudaExecutable::launch_kernel(size_t kernel, char* const* table) {
  const Kernel& k = kernels_[kernel];
  for (size_t a = 0; a < k.arguments.size(); ++a) argument_table_[a] = table[k.arguments[a]];
  void* params[] = {argument_table_.data()};
  for (const Launch& launch : k.launches) {
    argument_table_[k.arguments.size()] = static_cast<char*>(launch.scratch.get());
    cuda::launch(launch.function, launch.grid, launch.block, 0, cuda_stream(), params, launch.symbol);
  }
}

void CudaExecutable::run_real(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  void* stream = cuda_stream();
  std::vector<char*> table = table_;  // loops swap entries
  std::vector<std::shared_ptr<void>> copies;  // this call's device copies of host inputs
  bool on_device = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Array& input = inputs[k];
    char*& entry = table[static_cast<size_t>(input_buffers_[k])];
    if (cuda::is_device_pointer(input.data())) {
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
  outputs.resize(program_.output_buffers.size());
  std::vector<int32_t> output_buffer(outputs.size(), -1);
  std::vector<std::shared_ptr<void>> device_outputs(outputs.size());  // host mode: copied back
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const sched::Buffer& buffer = program_.buffers[b];
    if (buffer.role != sched::BufferRole::Output) continue;
    size_t n = static_cast<size_t>(buffer.number);
    Array& out = outputs[n];
    output_buffer[n] = static_cast<int32_t>(b);
    if (out.data() != nullptr) {
      check_output(buffer, out);
      if (cuda::is_device_pointer(out.data())) {  // the caller's device array: written in place
        table[b] = static_cast<char*>(out.data());
        continue;
      }
    }
    device_outputs[n] = cuda::allocate(sched::buffer_bytes(buffer));
    table[b] = static_cast<char*>(device_outputs[n].get());
    if (out.data() == nullptr)
      out = on_device ? Array::borrow(device_outputs[n].get(), buffer.dtype, buffer.shape,
                                      buffer.strides, device_outputs[n])
                      : allocate_output(buffer);
  }
  walk_steps(
      program_, table.data(), DeviceScalars{}, [](size_t) { return false; },
      [&](size_t k) { launch_kernel(static_cast<size_t>(program_.steps[k].kernel), table.data()); });
  // Host outputs are copied back; an output may be a loop's carried value, whose buffer the loop
  // swapped: read the table.
  for (size_t n = 0; n < outputs.size(); ++n) {
    size_t b = static_cast<size_t>(output_buffer[n]);
    if (cuda::is_device_pointer(outputs[n].data())) {
      if (table[b] != outputs[n].data())
        cuda::copy_device_to_device(outputs[n].data(), table[b],
                                    sched::buffer_bytes(program_.buffers[b]), stream);
      continue;
    }
    int64_t bytes = sched::buffer_bytes(program_.buffers[b]);
    if (bytes > 0) cuda::copy_to_host(outputs[n].data(), table[b], bytes, stream);
  }
  // The runtime checks' flags are read on the host (a device run waits for them: only programs
  // that have checks pay that).
  for (const RuntimeCheck& check : checks_)
    for (int32_t n : {check.flag_output, check.value_output}) {
      Array& out = outputs[static_cast<size_t>(n)];
      if (!cuda::is_device_pointer(out.data())) continue;
      const sched::Buffer& buffer =
          program_.buffers[static_cast<size_t>(output_buffer[static_cast<size_t>(n)])];
      Array host = allocate_output(buffer);
      cuda::copy_to_host(host.data(), out.data(), sched::buffer_bytes(buffer), stream);
      out = std::move(host);
    }
  if (!on_device) cuda::synchronize(stream);
  finish_outputs(outputs);
}

namespace {
thread_local void* current_stream = nullptr;
}  // namespace

void set_cuda_stream(void* stream) { current_stream = stream; }
void* cuda_stream() { return current_stream; }

}  // namespace kiln::runtime
