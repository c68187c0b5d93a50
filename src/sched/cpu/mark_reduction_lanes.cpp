#include "sched/cpu/mark_reduction_lanes.h"

#include <algorithm>

namespace kiln::sched::cpu {
namespace {

bool mark(std::vector<Stmt>& body, const target::Target& target) {
  bool marked = false;
  for (Stmt& s : body) {
    if (s.kind == StmtKind::Reduce && !s.reduce_loops.empty()) {
      const int64_t lanes = reduction_lanes(s, target);
      s.split_lanes = s.reduce_loops.back().extent >= 2 * lanes;
      int64_t elements = 1;
      for (const Loop& loop : s.reduce_loops) elements *= loop.extent;
      s.blocked_sum = s.split_lanes && elements >= lanes * kBlockSteps;
      marked = marked || s.split_lanes;
    }
    marked = mark(s.body, target) || marked;
  }
  return marked;
}

}  // namespace

int64_t reduction_lanes(const Stmt& s, const target::Target& target) {
  int widest = 1;
  for (const Accumulation& a : s.accumulations)
    widest = std::max(widest, dtype_size(a.dtype) > 2 ? dtype_size(a.dtype) : 4);
  return 4 * (target.vector_bits / 8) / widest;
}

bool mark_reduction_lanes(Kernel& kernel, const target::Target& target) {
  return mark(kernel.body, target);
}

}  // namespace kiln::sched::cpu
