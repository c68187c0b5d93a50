#include "sched/buffer_plan.h"

#include <algorithm>

#include "ir/shape.h"

namespace kiln::sched {
namespace {

constexpr int64_t kAlignment = 64;

std::vector<int32_t> step_buffers(const Program& program, const Step& step, bool written) {
  if (step.is_kernel) {
    const Kernel& k = program.kernels[static_cast<size_t>(step.kernel)];
    return written ? k.buffers_written : k.buffers_read;
  }
  return written ? std::vector<int32_t>{step.call.output} : step.call.inputs;
}

}  // namespace

void plan_buffers(Program& program) {
  const size_t n = program.buffers.size();
  std::vector<int> first(n, -1), last(n, -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    for (bool written : {true, false}) {
      for (int32_t b : step_buffers(program, program.steps[s], written)) {
        if (first[static_cast<size_t>(b)] < 0) first[static_cast<size_t>(b)] = static_cast<int>(s);
        last[static_cast<size_t>(b)] = static_cast<int>(s);
      }
    }
  }
  struct Placed {
    int64_t offset, bytes;
    int last_step;
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    for (size_t b = 0; b < n; ++b) {
      Buffer& buffer = program.buffers[b];
      if (buffer.role != BufferRole::Intermediate || first[b] != static_cast<int>(s)) continue;
      int64_t bytes = 1;
      for (int64_t e : buffer.shape) bytes *= e;
      bytes = (std::max<int64_t>(bytes * dtype_size(buffer.dtype), 1) + kAlignment - 1) / kAlignment * kAlignment;
      // Live ranges still open at step s block their slots; take the first gap that fits.
      std::vector<Placed> live;
      for (const Placed& p : placed)
        if (p.last_step >= static_cast<int>(s)) live.push_back(p);
      std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& c) { return a.offset < c.offset; });
      int64_t offset = 0;
      for (const Placed& p : live) {
        if (offset + bytes <= p.offset) break;
        offset = std::max(offset, p.offset + p.bytes);
      }
      buffer.arena_offset = offset;
      placed.push_back({offset, bytes, last[b]});
      arena = std::max(arena, offset + bytes);
    }
  }
  program.arena_bytes = arena;
}

}  // namespace kiln::sched
