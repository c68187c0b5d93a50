// The CUDA emitter's plans for values a thread holds in registers across loops it would
// otherwise load them in again (kernel_emitter.h: LaunchPlan::shared_loads, row_registers).
// Internal to src/codegen/cuda; launch_plans.cpp calls them. Choices that compare sizes go
// through ir::size_choice, and those that correctness bounds are only narrowed by it.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "codegen/cuda/kernel_emitter.h"
#include "ir/size_choices.h"

namespace kiln::codegen::cuda_detail {
namespace {

// Whether load `id` may be held in a register for the steps of loop `variable`: 32- or 64-bit
// elements of a buffer the kernel does not write, at an index of `allowed` variables (`used`
// collects them) that steps with that loop.
bool register_load(const Program& program, const Kernel& kernel, ExprId id,
                   const std::set<int32_t>& allowed, int32_t variable, std::set<int32_t>& used) {
  const Expr& load = kernel.exprs[static_cast<size_t>(id)];
  const int64_t size = dtype_size(program.buffers[static_cast<size_t>(load.buffer)].dtype);
  const bool written = std::find(kernel.buffers_written.begin(), kernel.buffers_written.end(),
                                 load.buffer) != kernel.buffers_written.end();
  return (size == 4 || size == 8) && !written &&
         index_of_variables(kernel, load.operands[0], allowed, used) && used.count(variable) > 0;
}

// The text of index `id` with loop variable `variable` as '@' (equal texts: the same element at
// each step of that loop).
std::string index_shape(const Kernel& kernel, ExprId id, int32_t variable) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  switch (e.kind) {
    case ExprKind::Constant:
      return e.constant.is_integer ? std::to_string(e.constant.i) : "?" + std::to_string(id);
    case ExprKind::LoopVar: return e.variable == variable ? "@" : "v" + std::to_string(e.variable);
    default: break;
  }
  if (!sched::is_index_arithmetic(e.kind)) return "?" + std::to_string(id);
  std::string text = "(" + std::to_string(static_cast<int>(e.kind));
  for (ExprId operand : e.operands) text += " " + index_shape(kernel, operand, variable);
  return text + ")";
}

// At most this many registers of 32 bits a thread holds rows in (LaunchPlan::row_registers).
constexpr int64_t kMostRowRegisterWords = 64;

// LaunchPlan::row_registers. H200, rows of 1024 floats at 128 threads (CuPy-launched variants):
// softmax 12.8 -> 11.5 us with each element loaded once, not in each of its three loops.
}  // namespace

void plan_row_registers(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  if (plan.kind != LaunchKind::BlockPerIteration || plan.block_splits > 1) return;
  const int64_t team = plan.warp_iterations ? kWarp : plan.threads;
  std::set<int32_t> chain;
  for (const Stmt* c : plan.chain) chain.insert(c->loop.variable);
  std::map<std::string, LaunchPlan::RowRegisters> groups;  // by buffer and index shape
  std::map<std::string, std::set<size_t>> statements_of;
  const std::vector<Stmt>& body = plan.chain.back()->body;
  for (size_t k = 0; k < body.size(); ++k) {
    const Stmt& s = body[k];
    const sched::Loop* loop = nullptr;
    if (s.kind == StmtKind::Loop && s.loop.extent > 1) loop = &s.loop;
    if (s.kind == StmtKind::Reduce && s.reduce_loops.size() == 1 && s.guard < 0)
      loop = &s.reduce_loops[0];
    if (loop == nullptr || loop->begin >= 0 || loop->end >= 0) continue;
    // At most plan.most_steps a thread (the registers' length) is a condition of correctness.
    const bool fits = loop->extent <= plan.most_steps * team;
    const bool chosen = ir::size_choice(fits);
    if (!(fits && chosen)) continue;
    std::vector<ExprId> loads;
    for (ExprId id : {s.index, s.value}) collect_unconditional_loads(kernel, id, loads);
    for (const sched::Accumulation& a : s.accumulations)
      collect_unconditional_loads(kernel, a.value, loads);
    for (const Stmt& child : s.body)
      if (child.kind == StmtKind::Store) collect_unconditional_loads(kernel, child.value, loads);
    std::set<int32_t> allowed = chain;
    allowed.insert(loop->variable);
    for (ExprId id : loads) {
      std::set<int32_t> used;
      if (!register_load(program, kernel, id, allowed, loop->variable, used)) continue;
      const Expr& load = kernel.exprs[static_cast<size_t>(id)];
      const std::string key =
          std::to_string(load.buffer) + ":" + index_shape(kernel, load.operands[0], loop->variable);
      LaunchPlan::RowRegisters& group = groups[key];
      if (group.loads.empty()) group.extent = loop->extent;
      if (group.extent != loop->extent) group.extent = -1;  // loops of other extents: none
      group.loads.emplace_back(id, loop->variable);
      statements_of[key].insert(k);
    }
  }
  // Registers for the most steps a thread may unroll (a size-generic kernel's array length must
  // not depend on its sizes).
  int64_t words = 0;
  for (auto& [key, group] : groups) {
    // One extent is a condition of correctness (the registers hold the first loop's elements):
    // a size may follow another size's choice not to hold them, never the choice to.
    const bool one_extent = group.extent >= 0;
    const bool chosen = ir::size_choice(one_extent);
    if (statements_of[key].size() < 2 || !(one_extent && chosen)) continue;
    const Expr& first = kernel.exprs[static_cast<size_t>(group.loads[0].first)];
    const DType dtype = program.buffers[static_cast<size_t>(first.buffer)].dtype;
    words += plan.most_steps * int64_t(dtype_size(dtype) / 4);
    if (words > kMostRowRegisterWords) break;
    plan.row_registers.push_back(std::move(group));
  }
}


// LaunchPlan::unroll_axis and shared_loads: a body of plain stores and one reduction over one
// short loop of constant extent, whose unconditional loads of 32- or 64-bit elements at indices
// of the chain and that loop include some that an outer chain loop, of an extent the steps
// divide, does not move. H200, distances of 2048x2048 points in 8 dimensions: 80 us with a
// thread's steps a block apart, 33 us with four rows of A a thread sharing B's (a CuPy-launched
// variant; unrolled steps alone left the loads to the compiler, which kept all 64, 80 us).
void plan_shared_loads(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  if (plan.unroll < 2 || plan.chain.size() < 2 || plan.vector_lanes > 1 || !plan.serial.empty())
    return;
  const Stmt* reduction = nullptr;
  for (const Stmt& s : plan.chain.back()->body) {
    if (s.kind == StmtKind::Store && !s.accumulate && !s.to_local_array) continue;
    if (s.kind != StmtKind::Reduce || reduction != nullptr) return;
    reduction = &s;
  }
  if (reduction == nullptr || reduction->reduce_loops.size() != 1 || reduction->guard >= 0 ||
      !reduction->body.empty() || reduction->lanes_loop.variable >= 0)
    return;
  const sched::Loop& loop = reduction->reduce_loops[0];
  if (loop.begin >= 0 || loop.end >= 0) return;
  // The registers hold kMostSharedSteps (a size-generic kernel's array length must not depend on
  // its sizes): at most that many steps is a condition of correctness.
  const bool fits = loop.extent <= kMostSharedSteps;
  const bool chosen = ir::size_choice(fits);
  if (!(fits && chosen)) return;
  std::set<int32_t> allowed{loop.variable};
  for (const Stmt* c : plan.chain) allowed.insert(c->loop.variable);
  std::vector<std::pair<ExprId, std::set<int32_t>>> candidates;  // loads and their variables
  std::vector<ExprId> loads;
  for (const sched::Accumulation& a : reduction->accumulations) {
    collect_unconditional_loads(kernel, a.value, loads);
    collect_unconditional_loads(kernel, a.position, loads);
  }
  for (ExprId id : loads) {
    std::set<int32_t> used;
    if (register_load(program, kernel, id, allowed, loop.variable, used))
      candidates.emplace_back(id, std::move(used));
  }
  for (size_t k = 0; k + 1 < plan.chain.size(); ++k) {
    const int32_t axis = plan.chain[k]->loop.variable;
    std::vector<ExprId> shared;
    for (const auto& [id, used] : candidates)
      if (!used.count(axis) && std::find(shared.begin(), shared.end(), id) == shared.end())
        shared.push_back(id);
    // Whole steps along the loop are a condition of correctness: a size may follow another
    // size's choice not to unroll along it, never the choice to.
    const bool divides = plan.chain[k]->loop.extent % plan.unroll == 0;
    const bool chosen = ir::size_choice(divides && !shared.empty());
    if (divides && !shared.empty() && chosen) {
      plan.unroll_axis = static_cast<int>(k);
      plan.shared_loads = std::move(shared);
      plan.shared_loop = loop;
      return;
    }
  }
}

}  // namespace kiln::codegen::cuda_detail
