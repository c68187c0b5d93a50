#include "sched/cpu/peel_clamps.h"

#include <map>
#include <unordered_map>
#include <vector>

#include "sched/kernel_builder.h"

namespace kiln::sched::cpu {
namespace {

// Loops shorter than this are not worth two copies of their body.
constexpr int64_t kShortestSplit = 16;
// At most this many splits of one loop (a body with clamps at both ends is split twice).
constexpr int kMostSplits = 4;

class Peeler {
 public:
  explicit Peeler(Kernel& kernel) : builder_(kernel) {}

  bool statements(std::vector<Stmt>& body, int splits_left) {
    bool changed = false;
    for (size_t k = 0; k < body.size(); ++k) {
      if (body[k].kind != StmtKind::Loop) continue;
      if (!innermost(body[k])) {
        changed = statements(body[k].body, splits_left) || changed;
        continue;
      }
      int64_t at = split_point(body[k]);
      if (at <= 0 || splits_left == 0) continue;
      std::vector<Stmt> parts = {part(body[k], 0, at), part(body[k], at, body[k].loop.extent)};
      statements(parts, splits_left - 1);  // a clamp at the other end
      body.erase(body.begin() + static_cast<std::ptrdiff_t>(k));
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(k), parts.begin(), parts.end());
      k += parts.size() - 1;
      changed = true;
    }
    return changed;
  }

 private:
  // A loop over plain stores, its whole range (not trimmed at run time), long enough.
  static bool innermost(const Stmt& loop) {
    if (loop.loop.begin >= 0 || loop.loop.end >= 0 || loop.loop.extent < kShortestSplit)
      return false;
    for (const Stmt& s : loop.body)
      if (s.kind != StmtKind::Store || s.accumulate || s.to_local_array) return false;
    return !loop.body.empty();
  }

  // Where, inside (0, extent), a clamp min(v + c, K) or max(v + c, K) of the loop's variable v
  // changes the operand it takes; 0 when there is none.
  int64_t split_point(const Stmt& loop) {
    const int32_t v = loop.loop.variable;
    std::vector<ExprId> stack;
    std::unordered_map<ExprId, bool> seen;
    for (const Stmt& s : loop.body) stack.insert(stack.end(), {s.index, s.value});
    while (!stack.empty()) {
      ExprId id = stack.back();
      stack.pop_back();
      if (id < 0 || seen[id]) continue;
      seen[id] = true;
      const Expr e = builder_.expr(id);
      stack.insert(stack.end(), e.operands.begin(), e.operands.end());
      if (e.kind != ExprKind::IndexMin && e.kind != ExprKind::IndexMax) continue;
      for (int side = 0; side < 2; ++side) {
        ExprId moving = e.operands[static_cast<size_t>(side)];
        int64_t bound, offset;
        if (!builder_.is_constant(e.operands[static_cast<size_t>(1 - side)], &bound) ||
            builder_.coefficient(moving, v) != 1 || !offset_of(moving, v, &offset))
          continue;
        // min(v + c, K) is v + c up to v = K - c; max(v + c, K) is K below v = K - c.
        int64_t at = e.kind == ExprKind::IndexMin ? bound - offset + 1 : bound - offset;
        if (at > 0 && at < loop.loop.extent) return at;
      }
    }
    return 0;
  }

  // c where `id` is v + c (nothing else varies in it).
  bool offset_of(ExprId id, int32_t v, int64_t* offset) {
    std::unordered_map<ExprId, ExprId> memo;
    ExprId at_zero = builder_.substitute(id, {{v, builder_.index_constant(0)}}, &memo);
    return builder_.is_constant(at_zero, offset);
  }

  // The loop over [begin, end) of its range: a loop of its own over end - begin iterations,
  // its body's expressions rewritten with v = begin + the new variable (and simplified).
  Stmt part(const Stmt& loop, int64_t begin, int64_t end) {
    Stmt result = loop;
    int32_t variable = builder_.new_loop(end - begin);
    result.loop.variable = variable;
    result.loop.extent = end - begin;
    ExprId value = builder_.loop_var(variable);
    if (begin != 0) value = builder_.add(value, builder_.index_constant(begin));
    std::map<int32_t, ExprId> substitution = {{loop.loop.variable, value}};
    std::unordered_map<ExprId, ExprId> memo;
    for (Stmt& s : result.body) {
      s.index = builder_.substitute(s.index, substitution, &memo);
      s.value = builder_.substitute(s.value, substitution, &memo);
    }
    return result;
  }

  KernelBuilder builder_;
};

}  // namespace

bool peel_clamps(Kernel& kernel, const target::Target&) {
  if (kernel.ordered_from >= 0) return false;  // top-level statement numbers must not move
  return Peeler(kernel).statements(kernel.body, kMostSplits);
}

}  // namespace kiln::sched::cpu
