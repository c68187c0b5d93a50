#include "sched/cpu/mark_parallel.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ir/ops.h"
#include "ir/size_choices.h"

namespace kiln::sched::cpu {
namespace {

// Below this many iterations an outer loop cannot keep the threads busy.
constexpr int64_t kFewOutputs = 16;

bool is_lanes_reduction(const Stmt& s) {
  return s.kind == StmtKind::Reduce && s.lanes_loop.variable >= 0;
}

// Lanes of a reduction or of a scan (sched/cpu/interleave_scans.h): work per iteration.
bool has_lanes(const Stmt& s) {
  return (s.kind == StmtKind::Reduce || s.kind == StmtKind::Scan) && s.lanes_loop.variable >= 0;
}

// The expressions statement `s` itself computes per iteration (not its children's).
std::vector<ExprId> own_exprs(const Stmt& s) {
  std::vector<ExprId> roots{s.index, s.value, s.guard};
  for (const Accumulation& a : s.accumulations) roots.insert(roots.end(), {a.value, a.position});
  std::erase(roots, -1);
  return roots;
}

}  // namespace

int64_t element_work(const Kernel& kernel, const Stmt& s) {
  std::unordered_set<ExprId> seen;  // what this statement reaches, not the whole kernel's
  std::vector<ExprId> stack = own_exprs(s);
  int64_t calls = 0;
  while (!stack.empty()) {  // each expression once: they form a DAG
    const ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    calls += e.kind == ExprKind::Random ||
             (e.kind == ExprKind::Elementwise && ir::op_info(e.op).cost == ir::Cost::Call);
    stack.insert(stack.end(), e.operands.begin(), e.operands.end());
  }
  return 1 + kCallWork * calls;
}

// Its extents times the most work of its own elements or of one child.
int64_t statement_work(const Kernel& kernel, const Stmt& s) {
  int64_t inner = element_work(kernel, s);
  for (const Stmt& child : s.body) inner = std::max(inner, statement_work(kernel, child));
  int64_t extent = 1;
  if (s.kind == StmtKind::Loop) extent = s.loop.extent;
  for (const Loop& l : s.reduce_loops) extent *= l.extent;
  if (has_lanes(s)) extent *= s.lanes_loop.extent;
  return extent * inner;
}

bool mark_parallel(Kernel& kernel, const target::Target& target) {
  if (target.threads <= 1) return false;
  bool marked = false;
  size_t statements =
      kernel.ordered_from < 0 ? kernel.body.size() : static_cast<size_t>(kernel.ordered_from);
  for (size_t k = 0; k < kernel.body.size() && k < statements; ++k) {
    // A loop of one iteration around the rest (torch's instance norm views (N, C, H, W) as
    // (1, N * C, H, W)) is no loop to share: the choice is made on what it holds.
    Stmt* unit = &kernel.body[k];
    while (unit->kind == StmtKind::Loop && unit->loop.extent == 1 && unit->body.size() == 1)
      unit = &unit->body[0];
    Stmt& s = *unit;
    bool big = ir::size_choice(statement_work(kernel, s) >= target.parallel_threshold);
    if (s.kind == StmtKind::Reduce && big && !is_lanes_reduction(s)) s.parallel = true;
    if (s.kind == StmtKind::Loop && big) {
      bool few_outputs = ir::size_choice(s.loop.extent < kFewOutputs);
      for (Stmt& child : s.body)
        if (few_outputs && child.kind == StmtKind::Reduce && !is_lanes_reduction(child) &&
            ir::size_choice(statement_work(kernel, child) >= target.parallel_threshold))
          child.parallel = marked = true;
      if (!few_outputs)
        s.parallel = true;
      else if (std::none_of(s.body.begin(), s.body.end(), [](const Stmt& c) { return c.parallel; }))
        s.parallel = s.loop.extent >= 2;
    }
    marked = marked || s.parallel;
  }
  return marked;
}

}  // namespace kiln::sched::cpu
