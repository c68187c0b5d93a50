#include "sched/cpu/mark_reduction_lanes.h"

#include <algorithm>

#include "ir/size_choices.h"

namespace kiln::sched::cpu {
namespace {

// The lanes of a split of a last loop of `last` elements: the most registers that it fills
// twice (one register of lanes chains its elements, four hide the combine's latency), or 0.
// Size choices (ir/size_choices.h): every size of a graph with size symbols splits as the
// recorded sizes do, so that their code differs in integers alone.
int64_t split_lanes(int64_t last, const Stmt& s, const target::Target& target) {
  for (int64_t lanes = reduction_lanes(s, target); lanes >= short_pass_lanes(s, target);
       lanes /= 2)
    if (ir::size_choice(last >= 2 * lanes)) return lanes;
  return 0;
}

bool mark(std::vector<Stmt>& body, const target::Target& target) {
  bool marked = false;
  for (Stmt& s : body) {
    if (s.kind == StmtKind::Reduce && !s.reduce_loops.empty()) {
      const int64_t lanes = reduction_lanes(s, target);
      const int64_t last = s.reduce_loops.back().extent;
      s.split_lanes = split_lanes(last, s, target);
      int64_t elements = 1;
      for (const Loop& loop : s.reduce_loops) elements *= loop.extent;
      // A sum over several loops whose last is short (a (N, 64) matrix's total) is blocked too,
      // its passes sharing one register of lanes: left to one SIMD reduction clause, each lane
      // chained N additions (a float32 mean of 10**7 elements came out 2% off).
      s.blocked_sum = ir::size_choice(elements >= lanes * kBlockSteps) &&
                      (s.split_lanes > 0 ||
                       (s.reduce_loops.size() > 1 && ir::size_choice(last >= lanes / 4)));
      marked = marked || s.split_lanes > 0 || s.blocked_sum;
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

int64_t short_pass_lanes(const Stmt& s, const target::Target& target) {
  return reduction_lanes(s, target) / 4;
}

bool mark_reduction_lanes(Kernel& kernel, const target::Target& target) {
  return mark(kernel.body, target);
}

}  // namespace kiln::sched::cpu
