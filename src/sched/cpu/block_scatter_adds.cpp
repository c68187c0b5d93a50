#include "sched/cpu/block_scatter_adds.h"

#include <map>
#include <unordered_map>

#include "ir/size_choices.h"
#include "sched/kernel_builder.h"

namespace kiln::sched::cpu {
namespace {

// Whether `id` reads buffer `buffer` (a block computes its values before any of its adds), a
// reduction's local (a lane reduction's may only be read inside its lane loop) or a local
// array (the adds of a block).
bool reads_state(const Kernel& kernel, ExprId id, int32_t buffer, std::map<ExprId, bool>& memo) {
  if (auto found = memo.find(id); found != memo.end()) return found->second;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  bool result = e.kind == ExprKind::Local || e.kind == ExprKind::ArrayLoad ||
                (e.kind == ExprKind::Load && e.buffer == buffer);
  for (ExprId operand : e.operands) result = result || reads_state(kernel, operand, buffer, memo);
  return memo[id] = result;
}

// A loop of one scatter-add whose index and value read none of these.
bool blockable(const Kernel& kernel, const Stmt& s) {
  if (s.kind != StmtKind::Loop || s.body.size() != 1 || s.loop.begin >= 0 || s.loop.end >= 0)
    return false;
  const Stmt& store = s.body[0];
  if (store.kind != StmtKind::Store || !store.accumulate || store.to_local_array) return false;
  std::map<ExprId, bool> memo;
  if (reads_state(kernel, store.index, store.buffer, memo) ||
      reads_state(kernel, store.value, store.buffer, memo))
    return false;
  // (Asked of every such loop, so that every size asks as often: ir/size_choices.h.)
  return ir::size_choice(s.loop.extent >= 2 * kScatterBlock);
}

Stmt local_array(int32_t array) {
  Stmt declare;
  declare.kind = StmtKind::LocalArray;
  declare.buffer = array;
  return declare;
}

Stmt loop_of(int32_t variable, int64_t extent, std::vector<Stmt> body) {
  Stmt loop;
  loop.kind = StmtKind::Loop;
  loop.loop = Loop{variable, extent};
  loop.body = std::move(body);
  return loop;
}

Stmt local_store(int32_t array, ExprId index, ExprId value) {
  Stmt store;
  store.kind = StmtKind::Store;
  store.to_local_array = true;
  store.buffer = array;
  store.index = index;
  store.value = value;
  return store;
}

// The blocks of `s` (and its leftover iterations, when there are any).
std::vector<Stmt> blocked(KernelBuilder& b, const Stmt& s) {
  const Stmt& store = s.body[0];
  const int32_t variable = s.loop.variable;
  const int64_t blocks = s.loop.extent / kScatterBlock, rest = s.loop.extent % kScatterBlock;
  Kernel& kernel = b.kernel();
  const DType index_dtype = b.expr(store.index).dtype, value_dtype = b.expr(store.value).dtype;
  const int32_t indices = static_cast<int32_t>(kernel.local_arrays.size());
  kernel.local_arrays.push_back({index_dtype, kScatterBlock});
  const int32_t values = indices + 1;
  kernel.local_arrays.push_back({value_dtype, kScatterBlock});

  const int32_t block = b.new_loop(blocks), fill = b.new_loop(kScatterBlock),
                adding = b.new_loop(kScatterBlock);
  std::map<int32_t, ExprId> at{{variable, b.add(b.mul(b.loop_var(block), kScatterBlock),
                                                b.loop_var(fill))}};
  std::unordered_map<ExprId, ExprId> memo;  // index and value share subexpressions
  Stmt fill_loop =
      loop_of(fill, kScatterBlock,
              {local_store(indices, b.loop_var(fill), b.substitute(store.index, at, &memo)),
               local_store(values, b.loop_var(fill), b.substitute(store.value, at, &memo))});
  fill_loop.vectorize = true;
  Stmt add = store;
  add.index = b.array_load(indices, index_dtype, b.loop_var(adding));
  add.value = b.array_load(values, value_dtype, b.loop_var(adding));
  Stmt outer = loop_of(block, blocks,
                       {local_array(indices), local_array(values), std::move(fill_loop),
                        loop_of(adding, kScatterBlock, {add})});
  outer.parallel = s.parallel;
  std::vector<Stmt> result{std::move(outer)};
  if (rest > 0) {
    const int32_t tail = b.new_loop(rest);
    std::map<int32_t, ExprId> after{{variable, b.add(b.index_constant(blocks * kScatterBlock),
                                                     b.loop_var(tail))}};
    std::unordered_map<ExprId, ExprId> tail_memo;
    Stmt leftover = store;
    leftover.index = b.substitute(store.index, after, &tail_memo);
    leftover.value = b.substitute(store.value, after, &tail_memo);
    result.push_back(loop_of(tail, rest, {std::move(leftover)}));
  }
  return result;
}

// Splits the blockable loops of `body`; returns how many statements were added before
// position `limit` (the kernel's ordered_from, at the top level).
size_t block_loops(KernelBuilder& b, std::vector<Stmt>& body, size_t limit, bool& changed) {
  size_t added_before = 0;
  for (size_t k = 0; k < body.size(); ++k) {
    if (!blockable(b.kernel(), body[k])) {
      size_t ignored = 0;
      block_loops(b, body[k].body, ignored, changed);
      continue;
    }
    std::vector<Stmt> replacement = blocked(b, body[k]);
    if (k < limit) added_before += replacement.size() - 1;
    body.erase(body.begin() + static_cast<long>(k));
    body.insert(body.begin() + static_cast<long>(k), std::make_move_iterator(replacement.begin()),
                std::make_move_iterator(replacement.end()));
    k += replacement.size() - 1;
    changed = true;
  }
  return added_before;
}

}  // namespace

bool block_scatter_adds(Kernel& kernel, const target::Target&) {
  KernelBuilder builder(kernel);
  bool changed = false;
  size_t limit = kernel.ordered_from < 0 ? kernel.body.size()
                                         : static_cast<size_t>(kernel.ordered_from);
  size_t added = block_loops(builder, kernel.body, limit, changed);
  if (kernel.ordered_from >= 0) kernel.ordered_from += static_cast<int32_t>(added);
  return changed;
}

}  // namespace kiln::sched::cpu
