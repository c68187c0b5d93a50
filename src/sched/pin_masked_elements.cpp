#include "sched/pin_masked_elements.h"

#include <map>
#include <set>

#include "sched/kernel_builder.h"
#include "sched/trim_loops.h"

namespace kiln::sched {
namespace {

class Pinner {
 public:
  explicit Pinner(Kernel& kernel) : kernel_(kernel), builder_(kernel) {}

  bool statements(std::vector<Stmt>& body) {
    bool changed = false;
    for (Stmt& s : body) {
      if (s.kind == StmtKind::Loop) changed = masked_store(s) || changed;
      changed = statements(s.body) || changed;
    }
    return changed;
  }

 private:
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }

  bool masked_store(Stmt& top) {
    std::optional<MaskedStore> masked = sched::masked_store(kernel_, top);
    if (!masked) return false;
    const std::vector<Loop*>& nest = masked->nest;
    Stmt* s = masked->store;
    const ExprId condition = masked->condition;
    std::set<int32_t> inner;  // the loop and those inside it: the position must not read them
    for (const Loop* loop : nest) inner.insert(loop->variable);
    std::map<int32_t, ExprId> pinned;
    for (Loop* loop : nest) {
      if (loop->extent > 1 && loop->begin < 0 && loop->end < 0) {
        const ExprId position = equal_to(condition, loop->variable, inner);
        if (position >= 0) {
          pinned[loop->variable] = builder_.minimum(
              builder_.maximum(position, builder_.index_constant(0)),
              builder_.index_constant(loop->extent - 1));
        }
      }
      inner.erase(loop->variable);
    }
    if (pinned.empty()) return false;
    std::unordered_map<ExprId, ExprId> memo;
    s->index = builder_.substitute(s->index, pinned, &memo);
    s->value = builder_.substitute(s->value, pinned, &memo);
    for (Loop* loop : nest) {
      if (!pinned.count(loop->variable)) continue;
      loop->extent = 1;
      kernel_.loop_extents[static_cast<size_t>(loop->variable)] = 1;
    }
    return true;
  }

  // x where a conjunct of `condition` is `variable == x` (or x == variable), x an int64 that
  // reads none of `inner`; else -1.
  ExprId equal_to(ExprId condition, int32_t variable, const std::set<int32_t>& inner) const {
    const Expr& e = expr(condition);
    if (e.kind == ExprKind::Elementwise && e.op == Op::logical_and) {
      const ExprId left = equal_to(e.operands[0], variable, inner);
      return left >= 0 ? left : equal_to(e.operands[1], variable, inner);
    }
    if (e.kind != ExprKind::Elementwise || e.op != Op::eq) return -1;
    const bool left_is_variable = is_loop_variable(kernel_, e.operands[0], variable),
               right_is_variable = is_loop_variable(kernel_, e.operands[1], variable);
    if (left_is_variable == right_is_variable) return -1;
    const ExprId other = left_is_variable ? e.operands[1] : e.operands[0];
    if (expr(other).dtype != DType::Int64 || reads_loops(kernel_, other, inner)) return -1;
    return other;
  }

  Kernel& kernel_;
  KernelBuilder builder_;
};

}  // namespace

bool pin_masked_elements(Kernel& kernel, const target::Target&) {
  return Pinner(kernel).statements(kernel.body);
}

}  // namespace kiln::sched
