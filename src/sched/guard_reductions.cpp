#include "sched/guard_reductions.h"

#include <set>

#include "sched/kernel_builder.h"

namespace kiln::sched {
namespace {

class Guarder {
 public:
  explicit Guarder(Kernel& kernel) : kernel_(kernel), builder_(kernel) {}

  // `scope`: the loop variables bound around `body`.
  bool statements(std::vector<Stmt>& body, std::set<int32_t>& scope) {
    bool changed = false;
    for (size_t k = 0; k < body.size(); ++k) {
      Stmt& s = body[k];
      if (s.kind == StmtKind::Reduce && s.guard < 0 && s.lanes_loop.variable < 0)
        changed = guard(s, body, k + 1, scope) || changed;
      if (s.kind == StmtKind::Loop) {
        scope.insert(s.loop.variable);
        changed = statements(s.body, scope) || changed;
        scope.erase(s.loop.variable);
      } else {
        changed = statements(s.body, scope) || changed;
      }
    }
    return changed;
  }

 private:
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }

  bool guard(Stmt& reduce, const std::vector<Stmt>& body, size_t after,
             const std::set<int32_t>& scope) {
    ExprId by_element = element_guard(reduce, scope), by_use = use_guard(reduce, body, after, scope);
    if (by_element >= 0 && by_use >= 0 && same(by_element, by_use)) {
      // Read only where it holds, and run only there: the elements' masks are true wherever
      // they are computed (a window's product: A[j+1:, :j] @ x).
      for (Accumulation& a : reduce.accumulations) a.value = unmasked(a.value, by_element);
    }
    reduce.guard = by_element >= 0 ? by_element : by_use;
    return reduce.guard >= 0;
  }

  // `id` with every where(condition, x, y) on its path from the root replaced by x.
  ExprId unmasked(ExprId id, ExprId condition) {
    const Expr e = expr(id);  // a copy: the builder grows the arena
    bool where =
        (e.kind == ExprKind::Elementwise && e.op == Op::where) || e.kind == ExprKind::Select;
    if (where && same(e.operands[0], condition)) return unmasked(e.operands[1], condition);
    if (e.kind == ExprKind::Cast) {
      ExprId operand = unmasked(e.operands[0], condition);
      return operand == e.operands[0] ? id : builder_.cast(operand, e.dtype);
    }
    if (e.kind != ExprKind::Elementwise || e.op != Op::mul) return id;
    ExprId left = unmasked(e.operands[0], condition), right = unmasked(e.operands[1], condition);
    if (left == e.operands[0] && right == e.operands[1]) return id;
    return builder_.elementwise(e.op, e.dtype, {left, right});
  }

  // A condition, computable before the reduction, outside which every element is exactly the
  // identity (where(c, x, 0), or for sums where(c, x, 0) * where(c, y, 0)): the reduction is
  // the identity there without running. -1: none.
  ExprId element_guard(const Stmt& reduce, const std::set<int32_t>& scope) const {
    ExprId common = -1;
    for (const Accumulation& a : reduce.accumulations) {
      bool sum = a.op == Op::sum;
      if (!sum && a.op != Op::prod && a.op != Op::any && a.op != Op::all) return -1;
      double identity = a.op == Op::prod || a.op == Op::all ? 1 : 0;
      ExprId condition = element_condition(a.value, identity, sum);
      if (condition < 0 || !invariant(condition, scope) ||
          (common >= 0 && !same(common, condition)))
        return -1;
      common = condition;
    }
    return common;
  }

  ExprId element_condition(ExprId id, double identity, bool sum) const {
    const Expr& e = expr(id);
    if (e.kind == ExprKind::Cast) return element_condition(e.operands[0], identity, sum);
    bool where =
        (e.kind == ExprKind::Elementwise && e.op == Op::where) || e.kind == ExprKind::Select;
    if (where && is_constant_expr(kernel_, e.operands[2], identity)) return e.operands[0];
    if (sum && e.kind == ExprKind::Elementwise && e.op == Op::mul) {
      ExprId left = element_condition(e.operands[0], identity, sum);
      ExprId right = element_condition(e.operands[1], identity, sum);
      if (left >= 0 && right >= 0 && same(left, right)) return left;
    }
    return -1;
  }

  // The condition the reduction's results are read only under (where(c, f(r), ...) in every
  // statement after it), computable before it; -1: none.
  ExprId use_guard(const Stmt& reduce, const std::vector<Stmt>& body, size_t after,
                   const std::set<int32_t>& scope) const {
    std::set<int32_t> locals;
    for (const Accumulation& a : reduce.accumulations) locals.insert(a.local);
    ExprId condition = -1;
    for (size_t k = after; k < body.size(); ++k)
      if (!uses_only_selected(body[k], locals, condition)) return -1;
    if (condition < 0 || !invariant(condition, scope)) return -1;
    return condition;
  }

  // Whether every use of `locals` in `s` is in the selected side of where(condition, ...),
  // one condition for all (set on the first).
  bool uses_only_selected(const Stmt& s, const std::set<int32_t>& locals, ExprId& condition) const {
    if (s.kind == StmtKind::Store) {
      if (s.index >= 0 && reads_local(s.index, locals)) return false;
      return selected(s.value, locals, condition);
    }
    if (s.kind == StmtKind::Loop || s.kind == StmtKind::LocalArray) {
      for (const Stmt& inner : s.body)
        if (!uses_only_selected(inner, locals, condition)) return false;
      return true;
    }
    for (const Accumulation& a : s.accumulations)
      if (reads_local(a.value, locals) || (a.position >= 0 && reads_local(a.position, locals)))
        return false;
    for (const Stmt& inner : s.body)
      if (!uses_only_selected(inner, locals, condition)) return false;
    return s.index < 0 || !reads_local(s.index, locals);
  }

  bool selected(ExprId id, const std::set<int32_t>& locals, ExprId& condition) const {
    if (!reads_local(id, locals)) return true;
    const Expr& e = expr(id);
    if (e.kind == ExprKind::Cast) return selected(e.operands[0], locals, condition);
    bool where =
        (e.kind == ExprKind::Elementwise && e.op == Op::where) || e.kind == ExprKind::Select;
    if (!where || reads_local(e.operands[0], locals) || reads_local(e.operands[2], locals))
      return false;
    if (condition < 0) condition = e.operands[0];
    return same(condition, e.operands[0]);
  }

  bool reads_local(ExprId id, const std::set<int32_t>& locals) const {
    return any_subexpr(kernel_, id, [&](const Expr& e) {
      return e.kind == ExprKind::Local && locals.count(e.variable) != 0;
    });
  }

  // Computable before the reduction: loop variables of `scope`, loads, constants.
  bool invariant(ExprId id, const std::set<int32_t>& scope) const {
    return !any_subexpr(kernel_, id, [&](const Expr& e) {
      return (e.kind == ExprKind::LoopVar && !scope.count(e.variable)) ||
             e.kind == ExprKind::Local || e.kind == ExprKind::ArrayLoad;
    });
  }

  bool same(ExprId a, ExprId b) const { return same_expr(kernel_, a, b); }

  Kernel& kernel_;
  KernelBuilder builder_;
};

}  // namespace

bool guard_reductions(Kernel& kernel, const target::Target&) {
  std::set<int32_t> scope;
  return Guarder(kernel).statements(kernel.body, scope);
}

}  // namespace kiln::sched
