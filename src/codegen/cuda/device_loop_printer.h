// The text of a device loop's kernel (codegen/cuda/device_loops.cpp) after its device
// functions: the loop's control, the calls of its launches between barriers, its 0-d buffers
// moved to shared memory or one thread's registers, and the copies back of what the steps after
// it read.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sched/loop_ir.h"

namespace kiln::codegen::cuda_detail {

// A launch of a step as the loop kernel calls it: its device function, the threads that run
// it, whether only its first thread touches memory (one thread's work: a single element's
// store) and whether only that thread does after its last barrier
// (CudaKernelEmitter::ends_on_first_thread).
struct LoopCall {
  std::string symbol;
  int threads = 1;
  bool first_thread_only = false;
  bool ends_on_first_thread = false;
};

// The loop kernel's text after its device functions (its table `b` of buffer pointers, slots by
// buffer number).
class LoopPrinter {
 public:
  LoopPrinter(const sched::Program& program, const std::map<int32_t, size_t>& slot,
              const std::map<size_t, std::vector<LoopCall>>& calls,
              const std::map<size_t, std::vector<int32_t>>& arguments, int threads,
              bool one_thread, const std::set<int32_t>& private_buffers)
      : program_(program), slot_(slot), calls_(calls), arguments_(arguments), threads_(threads),
        one_thread_(one_thread), private_(private_buffers),
        barrier_(one_thread ? "" : "__syncthreads();"),
        copy_(one_thread ? "kiln_thread_copy" : "kiln_block_copy") {}

  void loop(size_t begin, int depth) {
    const sched::LoopControl& control = program_.steps[begin].loop;
    const size_t end = static_cast<size_t>(control.partner);
    const std::string pad(static_cast<size_t>(2 * depth), ' '), k = "k" + std::to_string(depth);
    out_ << pad << "{\n"
         << pad << "  const int64_t start = " << bound(control.start, control.start_value)
         << ", trips = kiln_trip_count(start, " << bound(control.stop, control.stop_value) << ", "
         << control.step << "ll);\n";
    if (depth == 1 && !private_.empty() && one_thread_)  // independent iterations: a thread's own
      out_ << pad << "  for (int64_t " << k << " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
           << k << " < trips; " << k << " += (int64_t)gridDim.x * blockDim.x) {\n";
    else if (depth == 1 && !private_.empty())  // ... a block's own
      out_ << pad << "  for (int64_t " << k << " = blockIdx.x; " << k << " < trips; " << k
           << " += gridDim.x) {\n";
    else
      out_ << pad << "  for (int64_t " << k << " = 0; " << k << " < trips; ++" << k << ") {\n";
    // Every thread reads the test: the barrier after the body's last launch made it visible,
    // and the next write to it comes after the barrier below.
    if (control.condition >= 0)
      out_ << pad << "    if (!*(" << shared_read() << "const bool*)" << buffer(control.condition)
           << ") break;\n";
    // Every thread writes the index (the same value), so each reads its own write and none
    // waits for another's: the barrier that ended the last iteration kept it from readers.
    out_ << pad << "    *(int64_t*)" << buffer(control.induction) << " = start + " << k << " * "
         << control.step << "ll;\n";
    // The barrier after a call is owed to the next one, but not where only the first thread
    // touched memory since the last barrier and only it runs the next call (a row's dot
    // product, then its solution's store).
    bool owed = false, first_thread_since = false;
    for (size_t s = begin + 1; s < end; ++s) {
      const sched::Step& step = program_.steps[s];
      if (step.kind == sched::StepKind::LoopBegin) {
        if (owed) barrier(pad + "    ");
        owed = false;
        loop(s, depth + 2);
        s = static_cast<size_t>(step.loop.partner);
        continue;
      }
      const std::vector<int32_t>& arguments = arguments_.at(s);
      std::string table = "kiln_arg_table<" + std::to_string(std::max<size_t>(arguments.size(), 1)) + ">{{";
      for (size_t a = 0; a < arguments.size(); ++a) table += (a ? ", " : "") + buffer(arguments[a]);
      table += arguments.empty() ? "nullptr}}" : "}}";
      for (const LoopCall& call : calls_.at(s)) {
        const bool guarded = call.threads < threads_ && !one_thread_;
        if (owed && !(first_thread_since && call.first_thread_only)) barrier(pad + "    ");
        out_ << pad << "    " << (guarded ? "if (threadIdx.x < " + std::to_string(call.threads) + ") " : "")
             << call.symbol << "(" << table << ");\n";
        owed = true;
        first_thread_since = call.first_thread_only || call.ends_on_first_thread;
      }
    }
    if (owed) barrier(pad + "    ");
    for (const auto& [carried, next] : program_.steps[end].loop.swaps) {
      // Values, so that the words stay registers; by memcpy, which may read what a step
      // stored as a bool or a double: a read of the word as unsigned long long may not (C++'s
      // aliasing rules), and NVRTC moved it before a flag's store (a return inside a loop
      // never returned).
      if (one_thread_ && words_.count(carried)) {
        const std::string bytes = std::to_string(8 * words_.at(carried).second);
        const std::string a = "&kiln_scalars[" + std::to_string(words_.at(carried).first) + "]";
        const std::string b = "&kiln_scalars[" + std::to_string(words_.at(next).first) + "]";
        out_ << pad << "    { unsigned long long t[" << words_.at(carried).second << "]; memcpy(t, "
             << a << ", " << bytes << "); memcpy(" << a << ", " << b << ", " << bytes
             << "); memcpy(" << b << ", t, " << bytes << "); }\n";
        continue;
      }
      out_ << pad << "    { char* t = " << buffer(carried) << "; " << buffer(carried) << " = "
           << buffer(next) << "; " << buffer(next) << " = t; }\n";
    }
    out_ << pad << "  }\n" << pad << "}\n";
  }

  // The loop's 0-d buffers (but constants) move to shared memory for the loop, or to the one
  // thread's registers: a scalar recursion (a CRC's state, a DP cell) reads and writes one each
  // launch, ~30 cycles in shared memory against ~250 in L2. Each takes 8-byte words of
  // kiln_scalars, its value copied in first.
  void scalars_to_shared() {
    int64_t words = 0;
    std::ostringstream moves;
    for (const auto& entry : slot_) {
      const int32_t b = entry.first;
      const sched::Buffer& buffer = program_.buffers[static_cast<size_t>(b)];
      if (!buffer.shape.empty() || buffer.role == sched::BufferRole::Constant) continue;
      const int64_t bytes = sched::buffer_bytes(buffer);
      // (memcpy for the one thread: its words' addresses never become integers, so they
      // stay registers)
      moves << "  " << (one_thread_ ? "memcpy" : "kiln_block_copy") << "((char*)&kiln_scalars[" << words
            << "], " << this->buffer(b) << ", " << bytes << "ll);\n  " << this->buffer(b)
            << " = (char*)&kiln_scalars[" << words << "];\n";
      words_[b] = {words, (bytes + 7) / 8};
      words += (bytes + 7) / 8;
    }
    if (words == 0) return;
    out_ << "  " << (one_thread_ ? "" : "__shared__ ") << "unsigned long long kiln_scalars["
         << words << "];\n" << moves.str();
    barrier("  ");
  }

  // The values the steps after the loop or the caller read, back in their own buffers: the
  // 0-d ones from shared memory, and carried values the loop left in their partner's buffer.
  void copy_back(size_t begin) {
    const std::set<int32_t> outside = sched::buffers_used_outside(program_, begin);
    for (int32_t b : sched::buffers_written_in_loop(program_, begin)) {
      const sched::Buffer& written = program_.buffers[static_cast<size_t>(b)];
      const int64_t bytes = sched::buffer_bytes(written);
      // The caller's arrays too: an input updated in place is an output no step may list.
      const bool callers = written.role == sched::BufferRole::Input ||
                           written.role == sched::BufferRole::Output;
      if (!(outside.count(b) || callers) || bytes == 0 || private_.count(b)) continue;
      const std::string own = "kiln_args[" + std::to_string(slot_.at(b)) + "]";
      if (one_thread_ && words_.count(b))
        out_ << "  memcpy(" << own << ", " << buffer(b) << ", " << bytes << "ll);\n";
      else
        out_ << "  if (" << buffer(b) << " != " << own << ") " << copy_ << "(" << own << ", "
             << buffer(b) << ", " << bytes << "ll);\n";
    }
  }

  // A loop of a block an iteration: the iterations' own arrays at `offsets` into the block's
  // share (`bytes`) of the launch's scratch, table slot `scratch`.
  void private_arrays(const std::map<int32_t, int64_t>& offsets, int64_t bytes, size_t scratch) {
    for (const auto& [b, offset] : offsets)
      out_ << "  " << buffer(b) << " = kiln_args[" << scratch << "] + (long long)blockIdx.x * "
           << bytes << "ll + " << offset << "ll;\n";
  }

  std::string text() const { return out_.str(); }

 private:
  std::string buffer(int32_t b) const { return "b[" + std::to_string(slot_.at(b)) + "]"; }
  std::string bound(int32_t b, int64_t value) const {
    return b < 0 ? std::to_string(value) + "ll" : "*(" + shared_read() + "const int64_t*)" + buffer(b);
  }
  // Another thread wrote what the block reads before the barrier; one thread's own writes
  // need nothing.
  std::string shared_read() const { return one_thread_ ? "" : "volatile "; }
  void barrier(const std::string& pad) {
    if (!barrier_.empty()) out_ << pad << barrier_ << "\n";
  }

  const sched::Program& program_;
  const std::map<int32_t, size_t>& slot_;
  const std::map<size_t, std::vector<LoopCall>>& calls_;  // by step
  const std::map<size_t, std::vector<int32_t>>& arguments_;                   // by step
  int threads_;
  bool one_thread_;
  const std::set<int32_t>& private_;  // a loop of independent iterations: each thread's own
  std::string barrier_, copy_;
  std::map<int32_t, std::pair<int64_t, int64_t>> words_;  // 0-d buffers' first word and words
  std::ostringstream out_;
};

}  // namespace kiln::codegen::cuda_detail
