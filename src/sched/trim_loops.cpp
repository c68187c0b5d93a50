#include "sched/trim_loops.h"

#include <limits>
#include <optional>
#include <set>

#include "sched/kernel_builder.h"

namespace kiln::sched {
namespace {

// [begin, end) of one loop variable: expression ids, -1 where unbounded.
struct Bounds {
  ExprId begin = -1, end = -1;
  bool any() const { return begin >= 0 || end >= 0; }
};

class Trimmer {
 public:
  explicit Trimmer(Kernel& kernel) : kernel_(kernel) {}

  bool statements(std::vector<Stmt>& body) {
    bool changed = false;
    for (Stmt& s : body) {
      if (s.kind == StmtKind::Reduce) changed = reduce(s) || changed;
      if (s.kind == StmtKind::Loop) changed = masked_store(s) || changed;
      changed = statements(s.body) || changed;
    }
    return changed;
  }

 private:
  // A loop nest around one store x[i] = where(c, new, x[i]) (a masked update in place,
  // sched/in_place.h): where c fails the store writes back what is there, so each loop of the
  // nest runs only over the bounds c puts on it (a window's rows and columns).
  bool masked_store(Stmt& top) {
    std::optional<MaskedStore> masked = sched::masked_store(kernel_, top);
    if (!masked) return false;
    std::vector<Loop*>& nest = masked->nest;
    Stmt* s = masked->store;
    const Expr value = expr(s->value);  // a copy: condition() may grow the arena
    std::set<int32_t> inner;  // a loop's bounds must not read it or the loops inside it
    for (const Loop* loop : nest) inner.insert(loop->variable);
    bool changed = false;
    std::set<ExprId> used;  // the conjuncts that became bounds
    for (Loop* loop : nest) {
      if (loop->extent > 1 && loop->begin < 0 && loop->end < 0) {
        Bounds bounds;
        condition(value.operands[0], loop->variable, inner, bounds, &used);
        loop->begin = bounds.begin;
        loop->end = bounds.end;
        changed = changed || bounds.any();
      }
      inner.erase(loop->variable);
    }
    // Every conjunct of c a bound of the nest: c holds wherever the nest now runs, and the
    // store is x[i] = new. Left as a where, the mask costs more than the update (LU's trailing
    // block: 10x, its loop no longer vectorised).
    if (changed && all_used(value.operands[0], used)) s->value = value.operands[1];
    return changed;
  }

  bool all_used(ExprId id, const std::set<ExprId>& used) const {
    const Expr& e = expr(id);
    if (e.kind == ExprKind::Elementwise && e.op == Op::logical_and)
      return all_used(e.operands[0], used) && all_used(e.operands[1], used);
    return used.count(id) != 0;
  }

  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }

  bool reduce(Stmt& s) {
    if (s.reduce_loops.empty() || !s.body.empty() || s.lanes_loop.variable >= 0) return false;
    Loop& last = s.reduce_loops.back();
    if (last.begin >= 0 || last.end >= 0) return false;
    std::set<int32_t> inner;  // what the bounds must not read: the reduction's own loops
    for (const Loop& l : s.reduce_loops) inner.insert(l.variable);
    std::optional<Bounds> common;
    for (const Accumulation& a : s.accumulations) {
      std::optional<Scalar> identity = identity_of(a.op);
      if (!identity) return false;
      std::optional<Bounds> bounds =
          guarded(a.value, last.variable, *identity, a.op == Op::sum, inner);
      if (!bounds || !bounds->any() || (common && !same(*common, *bounds))) return false;
      common = bounds;
    }
    if (!common) return false;
    last.begin = common->begin;
    last.end = common->end;
    return true;
  }

  static std::optional<Scalar> identity_of(Op op) {
    switch (op) {
      case Op::sum:
        return Scalar::of_int(0);
      case Op::prod:
        return Scalar::of_int(1);
      case Op::any:
        return Scalar::of_int(0);
      case Op::all:
        return Scalar::of_int(1);
      case Op::max:  // a masked maximum (attention's causal rows); integers' lowest is no float
        return Scalar::of(-std::numeric_limits<double>::infinity());
      case Op::min:
        return Scalar::of(std::numeric_limits<double>::infinity());
      default:
        return std::nullopt;
    }
  }

  // The bounds outside which `id` equals `identity` along loop `variable`, or nullopt.
  std::optional<Bounds> guarded(ExprId id, int32_t variable, const Scalar& identity, bool sum,
                                const std::set<int32_t>& inner) const {
    const Expr e = expr(id);  // a copy: condition() may grow the arena
    if (e.kind == ExprKind::Cast) return guarded(e.operands[0], variable, identity, sum, inner);
    bool where =
        (e.kind == ExprKind::Elementwise && e.op == Op::where) || e.kind == ExprKind::Select;
    if (where && is_constant_expr(kernel_, e.operands[2], identity.as_double())) {
      Bounds bounds;
      condition(e.operands[0], variable, inner, bounds);
      // A condition on other loops only: outside the selected value's own bounds the where
      // picks the identity either way.
      if (!bounds.any()) return guarded(e.operands[1], variable, identity, sum, inner);
      return bounds;
    }
    if (sum && e.kind == ExprKind::Elementwise && e.op == Op::mul) {
      std::optional<Bounds> left = guarded(e.operands[0], variable, identity, sum, inner);
      std::optional<Bounds> right = guarded(e.operands[1], variable, identity, sum, inner);
      if (left && right && same(*left, *right)) return left;
    }
    return std::nullopt;
  }

  // Narrows `bounds` by the conjuncts of `id` that compare `variable` with an invariant. Other
  // conjuncts only remove more positions, so leaving them out keeps the bounds wide enough.
  // `used` gets the conjuncts that the bounds decide exactly: integers compared with the loop
  // variable itself (a float bound or a narrowing cast may differ from the bound as an index).
  void condition(ExprId id, int32_t variable, const std::set<int32_t>& inner, Bounds& bounds,
                 std::set<ExprId>* used = nullptr) const {
    const Expr e = expr(id);  // a copy: combine() below may grow the arena
    if (e.kind == ExprKind::Elementwise && e.op == Op::logical_and) {
      condition(e.operands[0], variable, inner, bounds, used);
      condition(e.operands[1], variable, inner, bounds, used);
      return;
    }
    bool compare = e.kind == ExprKind::IndexLess ||
                   (e.kind == ExprKind::Elementwise &&
                    (e.op == Op::ge || e.op == Op::lt || e.op == Op::gt || e.op == Op::le ||
                     e.op == Op::eq));
    if (!compare) return;
    Op op = e.kind == ExprKind::IndexLess ? Op::lt : e.op;
    ExprId left = e.operands[0], right = e.operands[1];
    bool left_is_variable = is_variable(left, variable),
         right_is_variable = is_variable(right, variable);
    if (left_is_variable == right_is_variable) return;
    ExprId other = left_is_variable ? right : left;
    if (reads(other, inner)) return;
    // variable == x, an integer x (x[i, j] = v set as where(column == j, v, x[i])): variable >=
    // x and variable < x', x' = min(x, extent) + 1 as for <= below.
    if (op == Op::eq) {
      if (expr(other).dtype != DType::Int64) return;
      KernelBuilder b(kernel_);
      ExprId next = b.add(b.minimum(other, b.index_constant(b.loop_extent(variable))),
                          b.index_constant(1));
      bounds.begin = bounds.begin < 0 ? other : combine(ExprKind::IndexMax, bounds.begin, other);
      bounds.end = bounds.end < 0 ? next : combine(ExprKind::IndexMin, bounds.end, next);
      const Expr& side = expr(left_is_variable ? left : right);
      bool exact = side.kind == ExprKind::LoopVar ||
                   (side.dtype == DType::Int64 &&
                    expr(side.operands[0]).kind == ExprKind::LoopVar);
      if (used && exact) used->insert(id);
      return;
    }
    if (!left_is_variable)
      op = op == Op::lt ? Op::gt : op == Op::gt ? Op::lt : op == Op::le ? Op::ge : Op::le;
    // An integer x: variable <= x is variable < x' and variable > x is variable >= x', with
    // x' = min(x, extent) + 1 (no overflow; the bounds are clamped to the loop anyway). A
    // causal mask's `column <= row`.
    if (op == Op::le || op == Op::gt) {
      if (expr(other).dtype != DType::Int64) return;  // a float bound's next index: left alone
      KernelBuilder b(kernel_);  // (a loop index's min with the extent simplifies away)
      other = b.add(b.minimum(other, b.index_constant(b.loop_extent(variable))),
                    b.index_constant(1));
      op = op == Op::le ? Op::lt : Op::ge;
    }
    // variable >= x: begin x; variable < x: end x. Two of a kind: the tighter one, at run time.
    if (op == Op::ge)
      bounds.begin = bounds.begin < 0 ? other : combine(ExprKind::IndexMax, bounds.begin, other);
    if (op == Op::lt)
      bounds.end = bounds.end < 0 ? other : combine(ExprKind::IndexMin, bounds.end, other);
    const Expr& side = expr(left_is_variable ? left : right);
    bool exact = expr(other).dtype == DType::Int64 &&
                 (side.kind == ExprKind::LoopVar ||
                  (side.dtype == DType::Int64 && expr(side.operands[0]).kind == ExprKind::LoopVar));
    if (used && exact && (op == Op::ge || op == Op::lt)) used->insert(id);
  }

  ExprId combine(ExprKind kind, ExprId a, ExprId b) const {
    Expr e;
    e.kind = kind;
    e.dtype = DType::Int64;
    e.operands = {a, b};
    kernel_.exprs.push_back(std::move(e));
    return static_cast<ExprId>(kernel_.exprs.size() - 1);
  }

  bool same(ExprId a, ExprId b) const { return same_expr(kernel_, a, b); }
  bool same(const Bounds& a, const Bounds& b) const {
    return same(a.begin, b.begin) && same(a.end, b.end);
  }

  bool is_variable(ExprId id, int32_t variable) const {
    return is_loop_variable(kernel_, id, variable);
  }
  bool reads(ExprId id, const std::set<int32_t>& loops) const {
    return reads_loops(kernel_, id, loops);
  }

  Kernel& kernel_;
};

}  // namespace

std::optional<MaskedStore> masked_store(const Kernel& kernel, Stmt& top) {
  MaskedStore masked;
  Stmt* s = &top;
  while (s->kind == StmtKind::Loop && s->body.size() == 1) {
    masked.nest.push_back(&s->loop);
    s = &s->body[0];
  }
  if (s->kind != StmtKind::Store || s->accumulate || s->to_local_array) return std::nullopt;
  const Expr& value = kernel.exprs[static_cast<size_t>(s->value)];
  const bool where = (value.kind == ExprKind::Elementwise && value.op == Op::where) ||
                     value.kind == ExprKind::Select;
  if (!where) return std::nullopt;
  const Expr& old = kernel.exprs[static_cast<size_t>(value.operands[2])];
  if (old.kind != ExprKind::Load || old.buffer != s->buffer ||
      !same_expr(kernel, old.operands[0], s->index))
    return std::nullopt;
  masked.store = s;
  masked.condition = value.operands[0];
  return masked;
}

bool is_loop_variable(const Kernel& kernel, ExprId id, int32_t variable) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::Cast) return is_loop_variable(kernel, e.operands[0], variable);
  return e.kind == ExprKind::LoopVar && e.variable == variable;
}

bool reads_loops(const Kernel& kernel, ExprId id, const std::set<int32_t>& loops) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == ExprKind::LoopVar) return loops.count(e.variable) != 0;
  if (e.kind == ExprKind::Local || e.kind == ExprKind::ArrayLoad || e.kind == ExprKind::Random)
    return true;
  for (ExprId operand : e.operands)
    if (reads_loops(kernel, operand, loops)) return true;
  return false;
}

bool trim_loops(Kernel& kernel, const target::Target&) {
  return Trimmer(kernel).statements(kernel.body);
}

}  // namespace kiln::sched
