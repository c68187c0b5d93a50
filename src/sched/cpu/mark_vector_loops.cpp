#include "sched/cpu/mark_vector_loops.h"

#include <algorithm>

#include "ir/size_choices.h"

namespace kiln::sched::cpu {
namespace {

// Reductions up to this many elements per iteration are unrolled by the C++ compiler.
constexpr int64_t kUnrolledReduction = 16;

// A loop of one iteration (an extent-1 dimension, as in a (64, 32, 1, 1) array): no lanes of
// its own, and its body is its enclosing loop's (the C++ compiler removes it).
bool runs_once(const Stmt& s) {
  return s.kind == StmtKind::Loop && s.loop.begin < 0 && s.loop.end < 0 &&
         ir::size_choice(s.loop.extent == 1);
}

// Work inside a statement's reductions and scans per iteration of its enclosing loop, or -1
// when it holds loops of its own (then it is not a SIMD candidate).
int64_t inner_reduction_work(const std::vector<Stmt>& body) {
  int64_t work = 1;
  for (const Stmt& s : body) {
    if ((s.kind == StmtKind::Loop && !runs_once(s)) || s.kind == StmtKind::LocalArray) return -1;
    if (s.kind == StmtKind::Scan && s.lanes_loop.variable >= 0) return -1;  // SIMD of its own
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
    if (s.kind == StmtKind::Loop && !s.vectorize && !runs_once(s)) {
      int64_t work = inner_reduction_work(s.body);
      if (work >= 0 && ir::size_choice(work <= kUnrolledReduction)) s.vectorize = marked = true;
    }
    marked = mark(s.body) || marked;
  }
  return marked;
}

}  // namespace

bool mark_vector_loops(Kernel& kernel, const target::Target&) {
  // A scatter's statements (from ordered_from on) stay scalar: two lanes of one SIMD step may
  // store into one element (a duplicate index), and `omp simd` would say they cannot.
  const size_t end =
      kernel.ordered_from < 0 ? kernel.body.size() : static_cast<size_t>(kernel.ordered_from);
  std::vector<Stmt> ordered(std::make_move_iterator(kernel.body.begin() + static_cast<ptrdiff_t>(end)),
                            std::make_move_iterator(kernel.body.end()));
  kernel.body.resize(end);
  const bool marked = mark(kernel.body);
  for (Stmt& s : ordered) kernel.body.push_back(std::move(s));
  return marked;
}

}  // namespace kiln::sched::cpu
