#include "sched/cpu/parallel_scatter_adds.h"

#include "sched/cpu/mark_parallel.h"
#include "sched/disjoint_slices.h"
#include "sched/scatter_adds.h"

namespace kiln::sched::cpu {

bool parallel_scatter_adds(Program& program, const target::Target& target) {
  if (target.threads <= 1) return false;
  bool marked = false;
  for (Kernel& kernel : program.kernels) {
    if (kernel.ordered_from < 0) continue;
    for (size_t k = static_cast<size_t>(kernel.ordered_from); k < kernel.body.size(); ++k) {
      Stmt& s = kernel.body[k];
      if (s.kind == StmtKind::Loop && statement_work(kernel, s) >= target.parallel_threshold &&
          adds_in_any_order(s, program.buffers)) {
        s.parallel = marked = true;
        s.disjoint_adds = adds_into_disjoint_slices(kernel, s);
      }
    }
  }
  return marked;
}

}  // namespace kiln::sched::cpu
