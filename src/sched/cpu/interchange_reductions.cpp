#include "sched/cpu/interchange_reductions.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "sched/kernel_builder.h"

namespace kiln::sched::cpu {
namespace {

constexpr int64_t kMaxBlock = 512;     // accumulators per block (several arrays of these)
constexpr int64_t kMinOutputs = 16;    // fewer outputs: the split-reduction path is better

// Loads inside `id` whose offset moves by 1 along `outer` and by more along `inner`.
bool reads_across(KernelBuilder& builder, ExprId id, int32_t outer, int32_t inner) {
  const Expr e = builder.expr(id);
  if (e.kind == ExprKind::Load) {
    int64_t along_outer = builder.coefficient(e.operands[0], outer);
    int64_t along_inner = builder.coefficient(e.operands[0], inner);
    if (along_outer == 1 && (along_inner > 1 || along_inner < -1)) return true;
  }
  for (ExprId operand : e.operands)
    if (reads_across(builder, operand, outer, inner)) return true;
  return false;
}

// A store, or a loop of one iteration around stores (a (n, 1) result).
bool stores_only(const Stmt& s) {
  if (s.kind == StmtKind::Store) return true;
  if (s.kind != StmtKind::Loop || s.loop.extent != 1) return false;
  return std::all_of(s.body.begin(), s.body.end(), stores_only);
}

void substitute_stores(KernelBuilder& builder, Stmt& s, const std::map<int32_t, ExprId>& substitution) {
  if (s.kind == StmtKind::Store) {
    s.index = builder.substitute(s.index, substitution);
    s.value = builder.substitute(s.value, substitution);
  }
  for (Stmt& inner : s.body) substitute_stores(builder, inner, substitution);
}

// The bounds `guard` puts on output variable `a`: its conjuncts a >= low and a < high with low
// and high read before the reduction (not from its loops); -1 where none.
std::pair<ExprId, ExprId> output_range(KernelBuilder& builder, ExprId guard, int32_t a,
                                       const std::vector<Loop>& reduce_loops) {
  const Expr e = builder.expr(guard);
  if (e.kind == ExprKind::Elementwise && e.op == Op::logical_and) {
    auto [low0, high0] = output_range(builder, e.operands[0], a, reduce_loops);
    auto [low1, high1] = output_range(builder, e.operands[1], a, reduce_loops);
    if (low0 >= 0 && low1 >= 0) low0 = builder.maximum(low0, low1);
    if (high0 >= 0 && high1 >= 0) high0 = builder.minimum(high0, high1);
    return {low0 >= 0 ? low0 : low1, high0 >= 0 ? high0 : high1};
  }
  bool ge = e.kind == ExprKind::Elementwise && e.op == Op::ge;
  bool lt = e.kind == ExprKind::IndexLess || (e.kind == ExprKind::Elementwise && e.op == Op::lt);
  if (!ge && !lt) return {-1, -1};
  const Expr& left = builder.expr(e.operands[0]);
  if (left.kind != ExprKind::LoopVar || left.variable != a) return {-1, -1};
  std::set<int32_t> bound = builder.dependencies(e.operands[1]);
  for (const Loop& l : reduce_loops)
    if (bound.count(l.variable)) return {-1, -1};
  if (bound.count(a)) return {-1, -1};
  return ge ? std::pair<ExprId, ExprId>{e.operands[1], -1} : std::pair<ExprId, ExprId>{-1, e.operands[1]};
}

// Blocks of the output loop: each at most kMaxBlock wide, and at least two when there are
// enough outputs so both threads get work.
int64_t choose_block_count(int64_t extent) {
  for (int64_t blocks = extent >= 64 ? 2 : 1; blocks <= extent; ++blocks)
    if (extent % blocks == 0 && extent / blocks <= kMaxBlock) return blocks;
  return 0;
}

// The Local ids (reduce results) that `id` reads.
void locals_read(const KernelBuilder& builder, ExprId id, std::set<int32_t>& locals) {
  if (id < 0) return;
  const Expr& e = builder.expr(id);
  if (e.kind == ExprKind::Local) locals.insert(e.variable);
  for (ExprId operand : e.operands) locals_read(builder, operand, locals);
}

// What statement `s` (a store, or a loop of stores) reads and writes: Local ids, the
// expressions it computes, and buffers.
void statement_uses(const KernelBuilder& builder, const Stmt& s, std::set<int32_t>& locals,
                    std::vector<ExprId>& computed, std::set<int32_t>& written) {
  if (s.kind == StmtKind::Store) {
    locals_read(builder, s.index, locals);
    locals_read(builder, s.value, locals);
    computed.insert(computed.end(), {s.index, s.value});
    written.insert(s.buffer);
  }
  for (const Stmt& inner : s.body) statement_uses(builder, inner, locals, computed, written);
}

bool loads_any(const KernelBuilder& builder, ExprId id, const std::set<int32_t>& buffers) {
  if (id < 0) return false;
  const Expr& e = builder.expr(id);
  if (e.kind == ExprKind::Load && buffers.count(e.buffer)) return true;
  for (ExprId operand : e.operands)
    if (loads_any(builder, operand, buffers)) return true;
  return false;
}

// Reductions merged into one pass (merge_reduction_loops) where only some read across the
// outputs (mvt: A @ y reads along its row, y @ A down a column): the others, which the lanes
// would make read down a column each, and the stores that read only them, move out into a loop
// of their own over the same outputs, left as it was; `outer` keeps the rest and `reduces`
// their count. nullopt where a store or a reduction reads both kinds, or a load reads what the
// kernel stores (two loops would reorder them).
std::optional<Stmt> split_along(KernelBuilder& builder, Stmt& outer, size_t& reduces,
                                const std::set<int32_t>& across) {
  // Whether these locals are all of one kind; `is_across` set to theirs (none: false).
  auto one_kind = [&](const std::set<int32_t>& locals, bool& is_across) {
    const auto n = std::count_if(locals.begin(), locals.end(),
                                 [&](int32_t local) { return across.count(local) > 0; });
    is_across = n > 0;
    return n == 0 || n == static_cast<std::ptrdiff_t>(locals.size());
  };
  std::set<int32_t> written;
  std::vector<ExprId> computed;
  std::vector<bool> plain_store(outer.body.size(), false);
  for (size_t k = reduces; k < outer.body.size(); ++k) {
    std::set<int32_t> locals;
    statement_uses(builder, outer.body[k], locals, computed, written);
    bool is_across = false;
    if (!one_kind(locals, is_across)) return std::nullopt;
    plain_store[k] = !locals.empty() && !is_across;
  }
  for (size_t k = 0; k < reduces; ++k) {
    std::set<int32_t> guard_locals;
    locals_read(builder, outer.body[k].guard, guard_locals);
    if (!guard_locals.empty()) return std::nullopt;
    computed.push_back(outer.body[k].guard);
    for (const Accumulation& acc : outer.body[k].accumulations) {
      std::set<int32_t> locals{acc.local};
      locals_read(builder, acc.value, locals);
      locals_read(builder, acc.position, locals);
      bool is_across = false;
      if (!one_kind(locals, is_across)) return std::nullopt;
      computed.insert(computed.end(), {acc.value, acc.position});
    }
  }
  for (ExprId id : computed)
    if (loads_any(builder, id, written)) return std::nullopt;
  Stmt plain = outer;
  plain.body.clear();
  std::vector<Stmt> kept;
  size_t kept_reduces = 0;
  for (size_t k = 0; k < outer.body.size(); ++k) {
    Stmt& s = outer.body[k];
    if (k >= reduces) {
      (plain_store[k] ? plain.body : kept).push_back(std::move(s));
      continue;
    }
    Stmt along_part = s;
    along_part.accumulations.clear();
    s.accumulations.erase(std::remove_if(s.accumulations.begin(), s.accumulations.end(),
                                         [&](const Accumulation& acc) {
                                           if (across.count(acc.local)) return false;
                                           along_part.accumulations.push_back(acc);
                                           return true;
                                         }),
                          s.accumulations.end());
    if (!along_part.accumulations.empty()) plain.body.push_back(std::move(along_part));
    if (!s.accumulations.empty()) kept.push_back(std::move(s)), ++kept_reduces;
  }
  outer.body = std::move(kept);
  reduces = kept_reduces;
  return plain;
}

}  // namespace

bool interchange_reductions(Kernel& kernel, const target::Target&) {
  if (kernel.body.size() != 1 || kernel.body[0].kind != StmtKind::Loop) return false;
  // Loops of one iteration (a (1, n) result) around the output loop change nothing.
  Stmt* around = &kernel.body[0];
  while (around->loop.extent == 1 && around->body.size() == 1 &&
         around->body[0].kind == StmtKind::Loop)
    around = &around->body[0];
  Stmt& outer = *around;
  const int64_t extent = outer.loop.extent;
  if (extent < kMinOutputs) return false;
  size_t reduces = 0;
  while (reduces < outer.body.size() && outer.body[reduces].kind == StmtKind::Reduce) ++reduces;
  if (reduces == 0) return false;
  for (size_t k = 0; k < outer.body.size(); ++k) {
    const Stmt& s = outer.body[k];
    if (k < reduces ? !s.body.empty() : !stores_only(s)) return false;
    // Trimmed reductions (sched/trim_loops.h) keep their loops: their bounds name them.
    if (k < reduces && (s.reduce_loops.back().begin >= 0 || s.reduce_loops.back().end >= 0))
      return false;
  }
  KernelBuilder builder(kernel);
  const int32_t a = outer.loop.variable;
  std::set<int32_t> across;  // the accumulations (Local ids) the interchange is for
  bool along = false;
  for (size_t k = 0; k < reduces; ++k)
    for (const Accumulation& acc : outer.body[k].accumulations) {
      if (reads_across(builder, acc.value, a, outer.body[k].reduce_loops.back().variable))
        across.insert(acc.local);
      else
        along = true;
    }
  if (across.empty()) return false;
  const int64_t blocks = choose_block_count(extent);
  if (blocks == 0) return false;
  // Not inside wrapping loops of one iteration: they would hold both loops, and mark_parallel
  // looks through a wrapper of one statement only.
  std::optional<Stmt> plain;
  if (along && &outer == &kernel.body[0]) plain = split_along(builder, outer, reduces, across);
  const int64_t width = extent / blocks;

  int32_t block_loop = builder.new_loop(blocks), lane_loop = builder.new_loop(width);
  std::map<int32_t, ExprId> substitution{
      {a, builder.add(builder.mul(builder.loop_var(block_loop), width), builder.loop_var(lane_loop))}};
  Stmt block;
  block.kind = StmtKind::Loop;
  block.loop = Loop{block_loop, blocks};
  Stmt stores;
  stores.kind = StmtKind::Loop;
  stores.loop = Loop{lane_loop, width};
  stores.vectorize = true;
  for (size_t k = 0; k < outer.body.size(); ++k) {
    Stmt s = std::move(outer.body[k]);
    if (k < reduces) {
      for (Accumulation& acc : s.accumulations) {
        acc.value = builder.substitute(acc.value, substitution);
        if (acc.position >= 0) acc.position = builder.substitute(acc.position, substitution);
      }
      s.parallel = false;
      s.lanes_loop = Loop{lane_loop, width};
      // A guard (sched/guard_reductions.h) spares work only: outside it the reduction's value
      // is its identity or unread. Its bounds on the output (a window's lo <= a < hi) become
      // the lanes' run-time range, the rest of it is dropped: those lanes are computed.
      if (s.guard >= 0) {
        auto [low, high] = output_range(builder, s.guard, a, s.reduce_loops);
        ExprId offset = builder.mul(builder.loop_var(block_loop), width);
        if (low >= 0) s.lanes_loop.begin = builder.add(low, builder.mul(offset, -1));
        if (high >= 0) s.lanes_loop.end = builder.add(high, builder.mul(offset, -1));
        s.guard = -1;
      }
      block.body.push_back(std::move(s));
    } else {
      substitute_stores(builder, s, substitution);
      stores.body.push_back(std::move(s));
    }
  }
  block.body.push_back(std::move(stores));
  outer = std::move(block);
  if (plain) kernel.body.insert(kernel.body.begin(), std::move(*plain));
  return true;
}

}  // namespace kiln::sched::cpu
