#include "sched/buffer_plan.h"

#include <algorithm>

#include "ir/shape.h"

namespace kiln::sched {
namespace {

constexpr int64_t kAlignment = 64;

// Inside a loop every iteration runs the body again: a buffer used in the body and also before
// it stays live to the loop's end, and the two buffers of a swap share one live range (after
// the loop either may hold the result).
void extend_over_loops(const Program& program, std::vector<int>& first, std::vector<int>& last) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t e = 0; e < program.steps.size(); ++e) {
      const Step& end = program.steps[e];
      if (end.kind != StepKind::LoopEnd) continue;
      int begin = end.loop.partner, finish = static_cast<int>(e);
      for (size_t b = 0; b < first.size(); ++b) {
        if (first[b] < 0 || first[b] >= begin || last[b] < begin || last[b] >= finish) continue;
        last[b] = finish;
        changed = true;
      }
      for (const auto& [carried, next] : end.loop.swaps) {
        auto c = static_cast<size_t>(carried), n = static_cast<size_t>(next);
        int low = std::min(first[c], first[n]), high = std::max(last[c], last[n]);
        if (first[c] != low || first[n] != low || last[c] != high || last[n] != high)
          changed = true;
        first[c] = first[n] = low;
        last[c] = last[n] = high;
      }
    }
  }
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
  extend_over_loops(program, first, last);
  struct Placed {
    int64_t offset, bytes;
    int last_step;
  };
  // Buffers by the step they start at; the live ones (sorted by offset) are the only ones a new
  // buffer must avoid: linear in the steps and buffers, times the few live at once.
  std::vector<std::vector<size_t>> starting(program.steps.size());
  for (size_t b = 0; b < n; ++b)
    if (program.buffers[b].role == BufferRole::Intermediate && first[b] >= 0)
      starting[static_cast<size_t>(first[b])].push_back(b);
  std::vector<Placed> live;
  int64_t arena = 0;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    std::erase_if(live, [&](const Placed& p) { return p.last_step < static_cast<int>(s); });
    for (size_t b : starting[s]) {
      Buffer& buffer = program.buffers[b];
      int64_t bytes = 1;
      for (int64_t e : buffer.shape) bytes *= e;
      bytes = (std::max<int64_t>(bytes * dtype_size(buffer.dtype), 1) + kAlignment - 1) /
              kAlignment * kAlignment;
      // First fit between the live buffers.
      int64_t offset = 0;
      for (const Placed& p : live) {
        if (offset + bytes <= p.offset) break;
        offset = std::max(offset, p.offset + p.bytes);
      }
      buffer.arena_offset = offset;
      Placed placed{offset, bytes, last[b]};
      live.insert(
          std::upper_bound(live.begin(), live.end(), placed,
                           [](const Placed& a, const Placed& c) { return a.offset < c.offset; }),
          placed);
      arena = std::max(arena, offset + bytes);
    }
  }
  program.arena_bytes = arena;
}

}  // namespace kiln::sched
