#include "sched/merge_loops.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/size_choices.h"
#include "sched/kernel_builder.h"

namespace kiln::sched {
namespace {

// How an expression depends on the variables of an outer and an inner loop: not at all, as
// outer * `outer` + inner * `inner` + (terms of neither), or in some other way.
struct Form {
  bool uses = false;
  bool affine = true;
  int64_t outer = 0, inner = 0;
};

class Merger {
 public:
  Merger(Kernel& kernel, bool reductions_only)
      : kernel_(kernel), builder_(kernel), reductions_only_(reductions_only) {}

  // Innermost loops of stores shorter than `shortest`, merged with the loop around them (from
  // the inside out) until they are not.
  bool short_inner_loops(std::vector<Stmt>& body, int64_t shortest) {
    bool changed = false;
    for (Stmt& s : body) {
      changed = short_inner_loops(s.body, shortest) || changed;
      while (s.kind == StmtKind::Loop && s.body.size() == 1 && innermost_of_stores(s.body[0]) &&
             plain(s) && plain(s.body[0]) && ir::size_choice(s.body[0].loop.extent < shortest) &&
             merge(s.loop, s.body[0].loop)) {
        Stmt inner = std::move(s.body[0]);
        s = std::move(inner);
        changed = true;
      }
    }
    return changed;
  }

  bool statements(std::vector<Stmt>& body) {
    bool changed = false;
    for (Stmt& s : body) {
      while (!reductions_only_ && s.kind == StmtKind::Loop && s.body.size() == 1 && s.body[0].kind == StmtKind::Loop &&
             plain(s) && plain(s.body[0]) && merge(s.loop, s.body[0].loop)) {
        Stmt inner = std::move(s.body[0]);
        s = std::move(inner);
        changed = true;
      }
      if (s.kind == StmtKind::Reduce && s.lanes_loop.variable < 0) {
        for (size_t k = 0; k + 1 < s.reduce_loops.size();) {
          if (merge(s.reduce_loops[k], s.reduce_loops[k + 1])) {
            s.reduce_loops.erase(s.reduce_loops.begin() + static_cast<std::ptrdiff_t>(k));
            changed = true;
            k = 0;  // the longer loop may now merge with the one before it
          } else {
            ++k;
          }
        }
      }
      changed = statements(s.body) || changed;
    }
    return changed;
  }

 private:
  const Expr& expr(ExprId id) const { return kernel_.exprs[static_cast<size_t>(id)]; }

  static bool innermost_of_stores(const Stmt& s) {
    return s.kind == StmtKind::Loop &&
           std::all_of(s.body.begin(), s.body.end(), [](const Stmt& inner) {
             return inner.kind == StmtKind::Store && !inner.accumulate && !inner.to_local_array;
           });
  }

  // Loops with constant bounds and nothing marked on them (the CPU's parallel and SIMD loops
  // are decided on the loops as they are).
  static bool plain(const Stmt& s) { return !s.parallel && !s.vectorize && bounded(s.loop); }
  static bool bounded(const Loop& loop) { return loop.begin < 0 && loop.end < 0; }

  // Merges `inner` into `outer` when every use of their variables allows it: `inner` then runs
  // over both, and `outer`'s variable reads 0.
  bool merge(const Loop& outer, Loop& inner) {
    if (!bounded(outer) || !bounded(inner) || outer.extent <= 0 || inner.extent <= 0 ||
        outer.extent > (int64_t{1} << 40) / inner.extent)
      return false;
    if (reductions_only_ && outer.extent == 1) return true;  // no variable to rewrite (loop_var)
    outer_ = outer.variable, inner_ = inner.variable, inner_extent_ = inner.extent;
    forms_.assign(kernel_.exprs.size(), std::nullopt);
    mergeable_ = true;
    for_each_root(kernel_.body, [&](ExprId& id) { check_use(form(id)); });
    if (!mergeable_) return false;
    // The extents first: the substitution simplifies by them, and (i0 * 7 + i1) % 12 is
    // i1 % 12 over the merged loop's 14 iterations, not i1 as over the inner loop's 7.
    inner.extent *= outer.extent;
    kernel_.loop_extents[static_cast<size_t>(inner_)] = inner.extent;
    kernel_.loop_extents[static_cast<size_t>(outer_)] = 1;
    const std::map<int32_t, ExprId> zero = {{outer_, builder_.index_constant(0)}};
    std::unordered_map<ExprId, ExprId> rewritten;
    for_each_root(kernel_.body, [&](ExprId& id) { id = builder_.substitute(id, zero, &rewritten); });
    for (std::vector<int32_t>& loops : kernel_.local_dependencies)
      for (int32_t& loop : loops)
        if (loop == outer_) loop = inner_;
    return true;
  }

  // Every expression a statement refers to directly.
  template <class Visit>
  static void for_each_root(std::vector<Stmt>& body, const Visit& visit) {
    auto each = [&](ExprId& id) {
      if (id >= 0) visit(id);
    };
    for (Stmt& s : body) {
      each(s.loop.begin), each(s.loop.end), each(s.lanes_loop.begin), each(s.lanes_loop.end);
      for (Loop& loop : s.reduce_loops) each(loop.begin), each(loop.end);
      for (Accumulation& a : s.accumulations) each(a.value), each(a.position);
      each(s.guard), each(s.index), each(s.value);
      for_each_root(s.body, visit);
    }
  }

  // A use that needs the two variables apart (an iota, a division, a comparison) or weighs
  // them unlike one loop would forbids the merge.
  void check_use(const Form& f) {
    if (f.uses && (!f.affine || f.outer != f.inner * inner_extent_)) mergeable_ = false;
  }

  Form form(ExprId id) {
    std::optional<Form>& memo = forms_[static_cast<size_t>(id)];
    if (memo) return *memo;
    const Expr e = expr(id);
    Form f;
    if (e.kind == ExprKind::LoopVar) {
      f.uses = e.variable == outer_ || e.variable == inner_;
      f.outer = e.variable == outer_, f.inner = e.variable == inner_;
    } else if (e.kind == ExprKind::IndexAdd) {
      for (ExprId operand : e.operands) {
        Form o = form(operand);
        f.uses = f.uses || o.uses, f.affine = f.affine && o.affine;
        f.outer += o.outer, f.inner += o.inner;
      }
    } else if (e.kind == ExprKind::IndexMul) {
      Form left = form(e.operands[0]), right = form(e.operands[1]);
      int64_t factor = 0;
      const Form* scaled = !left.uses ? &right : &left;
      ExprId other = !left.uses ? e.operands[0] : e.operands[1];
      f.uses = left.uses || right.uses;
      if (f.uses && (left.uses == right.uses || !builder_.is_constant(other, &factor) ||
                     !scaled->affine || __builtin_mul_overflow(scaled->outer, factor, &f.outer) ||
                     __builtin_mul_overflow(scaled->inner, factor, &f.inner)))
        f.affine = false;
    } else {
      // Any other expression is a use of its operands; its own value (a load, an arithmetic
      // result) is no index and carries no weights on.
      for (ExprId operand : e.operands) check_use(form(operand));
    }
    memo = f;
    return f;
  }

  Kernel& kernel_;
  KernelBuilder builder_;
  int32_t outer_ = -1, inner_ = -1;
  int64_t inner_extent_ = 0;
  std::vector<std::optional<Form>> forms_;
  bool mergeable_ = true;
  const bool reductions_only_;
};

}  // namespace

bool merge_loops(Kernel& kernel, const target::Target&) {
  return Merger(kernel, /*reductions_only=*/false).statements(kernel.body);
}

bool merge_reduction_loops(Kernel& kernel, const target::Target&) {
  return Merger(kernel, /*reductions_only=*/true).statements(kernel.body);
}

bool merge_short_inner_loops(Kernel& kernel, const target::Target& target) {
  const int64_t shortest = 4 * std::max<int64_t>(target.lanes(DType::Float32), 1);
  return Merger(kernel, /*reductions_only=*/false).short_inner_loops(kernel.body, shortest);
}

}  // namespace kiln::sched
