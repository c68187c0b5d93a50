// CUDA graphs (cuda_executable.h): reduce-overhead's run captured into a graph and replayed,
// the slots whose addresses stay the same baked in, the others staged; and default mode's
// probe, which replays where queueing a run's steps costs the host more than a replay.
#include <algorithm>
#include <memory>
#include <vector>

#include "kiln/error.h"
#include "runtime/cuda/cuda_executable.h"
#include "runtime/device_arrays.h"

namespace kiln::runtime {
namespace {

// default mode replays when queueing a run's steps took longer than this many times the timed
// replay, plus the replay's own host time.
constexpr double kHostBoundMargin = 1.25;
constexpr double kReplayHostSeconds = 20e-6;

}  // namespace

// The addresses of a call's inputs, then of its outputs (null where the caller gives none): the
// slots a captured graph reads and writes in place (on_device_memory's numbering).
std::vector<const void*> CudaExecutable::slot_addresses(const std::vector<Array>& inputs,
                                                        const std::vector<Array>& outputs) const {
  std::vector<const void*> addresses;
  for (const Array& input : inputs) addresses.push_back(input.data());
  for (size_t n = 0; n < program_.output_buffers.size(); ++n)
    addresses.push_back(n < outputs.size() ? outputs[n].data() : nullptr);
  return addresses;
}

// The slots a graph captured now takes in place: an input at the address it had last call (a
// model's parameters), an output at one of the two it had in the last two calls (the torch
// front end's output pool alternates between two tensors while a caller keeps the previous
// result; kiln/torch/_lowering.py).
std::vector<bool> CudaExecutable::wanted_in_place(const std::vector<const void*>& addresses,
                                                  size_t inputs) const {
  std::vector<bool> wanted(addresses.size(), false);
  for (size_t s = 0; s < addresses.size(); ++s)
    wanted[s] = addresses[s] != nullptr &&
                (addresses[s] == last_addresses_[s] ||
                 (s >= inputs && addresses[s] == earlier_addresses_[s]));
  for (const auto& [output, input] : in_place_outputs_) wanted[input] = addresses[input] != nullptr;
  return wanted;
}

// A captured graph that can serve a call with these addresses (every slot it bakes in is at
// that address, and it bakes in the inputs that outputs are written into: a staged copy would
// take the write), the one baking the most in, preferring one that bakes in every wanted slot;
// null when none can.
CudaExecutable::CapturedGraph* CudaExecutable::usable_graph(
    const std::vector<const void*>& addresses, const std::vector<bool>& wanted, bool& complete) {
  CapturedGraph* best = nullptr;
  size_t best_in_place = 0;
  complete = false;
  for (const std::unique_ptr<CapturedGraph>& graph : graphs_) {
    bool usable = true, all_wanted = true;
    size_t in_place = 0;
    for (size_t s = 0; s < addresses.size() && usable; ++s) {
      const void* baked = graph->in_place[s];
      usable = baked == nullptr || baked == addresses[s];
      in_place += baked != nullptr;
      all_wanted = all_wanted && (baked != nullptr || !wanted[s]);
    }
    for (const auto& [output, input] : in_place_outputs_)
      usable = usable && graph->in_place[input] != nullptr;
    if (!usable || (best && (complete > all_wanted ||
                             (complete == all_wanted && in_place <= best_in_place))))
      continue;
    best = graph.get(), best_in_place = in_place, complete = all_wanted;
  }
  return best;
}

bool CudaExecutable::run_graph(const std::vector<Array>& inputs, std::vector<Array>& outputs) {
  void* stream = cuda_stream();
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].size() > 0 && !on_device_memory(k, inputs[k].data())) return false;
  for (size_t n = 0; n < outputs.size(); ++n)
    if (outputs[n].data() != nullptr && !on_device_memory(inputs.size() + n, outputs[n].data()))
      return false;
  const std::vector<const void*> addresses = slot_addresses(inputs, outputs);
  if (last_addresses_.empty() && graphs_.empty()) {  // the first call runs as usual: addresses
    last_addresses_ = addresses;
    return false;
  }
  last_addresses_.resize(addresses.size(), nullptr);
  earlier_addresses_.resize(addresses.size(), nullptr);
  std::vector<int32_t> output_buffer(program_.output_buffers.size(), -1);
  for (size_t b = 0; b < program_.buffers.size(); ++b)
    if (program_.buffers[b].role == sched::BufferRole::Output)
      output_buffer[static_cast<size_t>(program_.buffers[b].number)] = static_cast<int32_t>(b);
  for (size_t n = 0; n < outputs.size(); ++n)
    if (outputs[n].data() != nullptr && output_buffer[n] >= 0)
      check_output(program_.buffers[static_cast<size_t>(output_buffer[n])], outputs[n]);
  // A graph for these addresses: one captured before, or a new one while captures remain (the
  // least recently used one goes); once they are spent, one that stages every slot.
  std::vector<bool> wanted = wanted_in_place(addresses, inputs.size());
  bool complete = false;
  CapturedGraph* graph = usable_graph(addresses, wanted, complete);
  if (graph == nullptr || (!complete && captures_ < kMostCaptures)) {
    if (captures_ >= kMostCaptures) {
      if (!in_place_outputs_.empty()) return false;  // its inputs cannot be staged
      wanted.assign(wanted.size(), false);
    }
    auto state = std::make_unique<CapturedGraph>();
    std::vector<char*> table = table_;
    state->in_place.assign(addresses.size(), nullptr);
    state->staging.resize(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      char*& entry = table[static_cast<size_t>(input_buffers_[k])];
      if (wanted[k]) {
        state->in_place[k] = addresses[k];
        entry = static_cast<char*>(const_cast<void*>(addresses[k]));
        continue;
      }
      int64_t size = dtype_size(inputs[k].dtype());
      auto [low, high] = element_span(inputs[k].shape(), inputs[k].strides());
      state->staging[k] = cuda::allocate((high - low + 1) * size);
      entry = static_cast<char*>(state->staging[k].get()) - low * size;
    }
    state->results.resize(output_buffer.size());
    if (checks_in_block()) state->checks = cuda::allocate(check_bytes_);
    for (size_t n = 0; n < output_buffer.size(); ++n) {
      const int32_t b = output_buffer[n];
      if (b < 0 && written_in_place(n)) continue;  // the input's buffer, baked in above
      if (b < 0) return false;  // an output that is not the program's own buffer
      if (state->checks && check_offset_[n] >= 0) {
        table[static_cast<size_t>(b)] = static_cast<char*>(state->checks.get()) + check_offset_[n];
        continue;
      }
      const size_t slot = inputs.size() + n;
      if (wanted[slot]) {
        state->in_place[slot] = addresses[slot];
        table[static_cast<size_t>(b)] = static_cast<char*>(const_cast<void*>(addresses[slot]));
        continue;
      }
      const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(b)];
      state->results[n] = cuda::allocate(sched::buffer_bytes(buffer));
      table[static_cast<size_t>(b)] = static_cast<char*>(state->results[n].get());
    }
    try {
      state->graph = cuda::Graph::capture(
          [&](void* capture_stream) { queue_steps(table.data(), capture_stream, &state->kept); });
    } catch (const Error&) {  // work that cannot be captured: this executable runs as usual
      graphs_possible_ = false;
      graphs_.clear();
      return false;
    }
    ++captures_;
    graph = state.get();
    graphs_.insert(graphs_.begin(), std::move(state));
    if (graphs_.size() > kMostGraphs) graphs_.pop_back();
  } else {  // the most recently used first
    auto used = std::find_if(graphs_.begin(), graphs_.end(),
                             [&](const std::unique_ptr<CapturedGraph>& g) { return g.get() == graph; });
    std::rotate(graphs_.begin(), used, used + 1);
  }
  earlier_addresses_ = last_addresses_;
  last_addresses_ = addresses;
  const bool timed = probe_.stage == HostBoundProbe::Stage::ReplayNext;
  if (timed) {
    probe_.start = std::make_unique<cuda::Event>(true);
    probe_.end = std::make_unique<cuda::Event>(true);
    probe_.start->record(stream);
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!graph->staging[k]) continue;
    int64_t size = dtype_size(inputs[k].dtype());
    auto [low, high] = element_span(inputs[k].shape(), inputs[k].strides());
    if (high >= low)
      cuda::copy_device_to_device(graph->staging[k].get(),
                                  static_cast<const char*>(inputs[k].data()) + low * size,
                                  (high - low + 1) * size, stream);
  }
  graph->graph->launch(stream);
  outputs.resize(output_buffer.size());
  for (size_t n = 0; n < outputs.size(); ++n) {
    if (!graph->results[n]) continue;  // written in place, or into the checks' block
    const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(output_buffer[n])];
    int64_t bytes = sched::buffer_bytes(buffer);
    if (outputs[n].data() == nullptr) {  // a new result each call: the next replay overwrites
      std::shared_ptr<void> block = cuda::allocate(bytes);  // the graph's buffer
      outputs[n] = Array::borrow(block.get(), buffer.dtype, buffer.shape, buffer.strides, block,
                                 Device::Cuda);
    }
    if (bytes > 0)
      cuda::copy_device_to_device(outputs[n].data(), graph->results[n].get(), bytes, stream);
  }
  if (timed) {
    probe_.end->record(stream);
    probe_.stage = HostBoundProbe::Stage::Judging;
  }
  defer_checks(outputs, graph->checks.get(), stream);
  finish_outputs(inputs, outputs);
  return true;
}

bool CudaExecutable::replays() const {
  using Stage = HostBoundProbe::Stage;
  return settings_.cuda_graphs || probe_.stage == Stage::ReplayNext ||
         probe_.stage == Stage::Replay;
}

bool CudaExecutable::replays_graphs() const {
  return graphs_possible_ &&
         (settings_.cuda_graphs || probe_.stage == HostBoundProbe::Stage::Replay);
}

void CudaExecutable::judge_replay() {
  probe_.end->wait();  // once: the replay's GPU time
  double replay = cuda::Event::seconds_between(*probe_.start, *probe_.end);
  bool host_bound = probe_.queue_seconds > kHostBoundMargin * replay + kReplayHostSeconds;
  probe_.stage = host_bound ? HostBoundProbe::Stage::Replay : HostBoundProbe::Stage::Queue;
  probe_.start.reset(), probe_.end.reset();
  if (!host_bound) graphs_.clear();
}

}  // namespace kiln::runtime
