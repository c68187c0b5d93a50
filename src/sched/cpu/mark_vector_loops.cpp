#include "sched/cpu/mark_vector_loops.h"

#include <algorithm>

namespace kiln::sched::cpu {
namespace {

// Reductions up to this many elements per iteration are unrolled by the C++ compiler.
constexpr int64_t kUnrolledReduction = 16;

// Work inside a statement's reductions and scans per iteration of its enclosing loop, or -1
// when it holds loops of its own (then it is not a SIMD candidate).
int64_t inner_reduction_work(const std::vector<Stmt>& body) {
  int64_t work = 1;
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Loop || s.kind == StmtKind::LocalArray) return -1;
    int64_t inner = inner_reduction_work(s.body);
    if (inner < 0) return -1;
    for (const Loop& l : s.reduce_loops) inner *= l.extent;
    work = std::max(work, inner);
  }
  return work;
}

bool mark(std::vector<Stmt>& body) {
  bool marked = false;
  for (Stmt& s : body) {
    if (s.kind == StmtKind::Loop && !s.vectorize) {
      int64_t work = inner_reduction_work(s.body);
      if (work >= 0 && work <= kUnrolledReduction) s.vectorize = marked = true;
    }
    marked = mark(s.body) || marked;
  }
  return marked;
}

}  // namespace

bool mark_vector_loops(Kernel& kernel, const target::Target&) { return mark(kernel.body); }

}  // namespace kiln::sched::cpu
