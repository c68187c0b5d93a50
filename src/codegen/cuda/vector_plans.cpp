// The CUDA emitter's plans for 16-byte accesses (kernel_emitter.h: LaunchPlan::vector_lanes):
// a ThreadPerIteration launch's consecutive iterations at once, a BlockPerIteration launch's
// rows in runs a thread. Internal to src/codegen/cuda; launch_plans.cpp calls them. Choices
// that compare sizes go through ir::size_choice, and those that correctness bounds are only
// narrowed by it.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "codegen/cuda/kernel_emitter.h"
#include "ir/size_choices.h"
#include "sched/kernel_builder.h"

namespace kiln::codegen::cuda_detail {

std::string vector_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float4";
    case DType::Int32: return "int4";
    case DType::UInt32: return "uint4";
    case DType::Float64: return "double2";
    case DType::Int64: return "longlong2";
    case DType::UInt64: return "ulonglong2";
    default: return "";
  }
}

// A ThreadPerIteration plan whose body only stores: the loads and stores that step by one
// element with the innermost loop, from a multiple of the vector width, become 16-byte
// accesses (LaunchPlan::vector_lanes). Four-byte scalar accesses leave the H100's memory
// system under-used (kmeans and sin+cos reached 56-63% of its copy bandwidth).
void plan_vectors(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  const std::vector<Stmt>& body = plan.chain.back()->body;
  const sched::Loop& innermost = plan.chain.back()->loop;
  if (body.empty() || !std::all_of(body.begin(), body.end(), [](const Stmt& s) {
        return s.kind == StmtKind::Store && !s.accumulate && !s.to_local_array;
      }))
    return;
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  auto element_size = [&](int32_t buffer) {
    return int64_t(dtype_size(program.buffers[static_cast<size_t>(buffer)].dtype));
  };
  // Accesses of `bytes`-wide elements that qualify at that width.
  auto vectorizable = [&](int32_t buffer, ExprId offset, int64_t bytes) {
    const int64_t lanes = 16 / bytes;
    return element_size(buffer) == bytes &&
           !vector_type(program.buffers[static_cast<size_t>(buffer)].dtype).empty() &&
           innermost.extent % lanes == 0 &&
           builder.aligned_unit_stride(offset, innermost.variable, lanes);
  };
  std::vector<ExprId> loads;
  std::set<ExprId> seen;
  std::vector<ExprId> stack;
  for (const Stmt& s : body) stack.push_back(s.value);
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    if (e.kind == ExprKind::Load) loads.push_back(id);
    if (e.kind == ExprKind::Local) return;  // a reduction's result: not a plain body
    stack.insert(stack.end(), e.operands.begin(), e.operands.end());
  }
  for (int64_t bytes : {4, 8}) {  // the narrower width first: more lanes per thread
    LaunchPlan vector = plan;
    for (ExprId id : loads) {
      const Expr& e = kernel.exprs[static_cast<size_t>(id)];
      if (vectorizable(e.buffer, e.operands[0], bytes)) vector.vector_loads.push_back(id);
    }
    for (const Stmt& s : body)
      if (vectorizable(s.buffer, s.index, bytes)) vector.vector_stores.push_back(&s);
    // Whole vectors are a condition of correctness: a size may follow another size's choice
    // not to use them, never the choice to.
    const bool any = !vector.vector_loads.empty() || !vector.vector_stores.empty();
    const bool chosen = ir::size_choice(any);
    if (!(any && chosen)) continue;
    std::set<int32_t> buffers;
    for (ExprId id : vector.vector_loads) buffers.insert(kernel.exprs[static_cast<size_t>(id)].buffer);
    for (const Stmt* s : vector.vector_stores) buffers.insert(s->buffer);
    vector.vector_buffers.assign(buffers.begin(), buffers.end());
    vector.vector_lanes = static_cast<int>(16 / bytes);
    plan = std::move(vector);
    return;
  }
}

// LaunchPlan::vector_lanes of a BlockPerIteration plan holding rows in registers: every
// statement one loop over the row (a reduction, or stores), a whole number of 16-byte runs a
// thread, every row register's load stepping by one element from a multiple of the run. Then
// the rows' loads, and the loads and stores of the loops of stores that step by one element
// with them (a layer norm's scale, shift and output), move 16 bytes at a time. H200, layer
// norm of 8192 rows of 1024 floats in a CuPy-launched variant of kiln's kernel: 23.1 -> 20.2 us.
void plan_row_vectors(const Program& program, const Kernel& kernel, LaunchPlan& plan) {
  if (plan.row_registers.empty()) return;
  const int64_t team = plan.warp_iterations ? kWarp : plan.threads;
  auto buffer_of = [&](ExprId id) { return kernel.exprs[static_cast<size_t>(id)].buffer; };
  auto dtype_of = [&](int32_t buffer) { return program.buffers[static_cast<size_t>(buffer)].dtype; };
  const DType dtype = dtype_of(buffer_of(plan.row_registers[0].loads[0].first));
  if (vector_type(dtype).empty()) return;
  const int64_t lanes = 16 / dtype_size(dtype);
  const int64_t extent = plan.row_registers[0].extent;
  Kernel copy = kernel;  // the index analysis lives in a KernelBuilder
  sched::KernelBuilder builder(copy);
  auto steps_by_one = [&](int32_t buffer, ExprId index, int32_t variable) {
    return dtype_of(buffer) == dtype && builder.aligned_unit_stride(index, variable, lanes);
  };
  // Whole runs at every step and aligned rows are conditions of correctness: a size may follow
  // another size's choice not to use them, never the choice to.
  bool fits = extent % (team * lanes) == 0 && extent <= plan.most_steps * team;
  for (const LaunchPlan::RowRegisters& row : plan.row_registers)
    for (const auto& [id, variable] : row.loads)
      fits = fits && steps_by_one(buffer_of(id), kernel.exprs[static_cast<size_t>(id)].operands[0],
                                  variable);
  std::set<ExprId> in_registers;
  for (const LaunchPlan::RowRegisters& row : plan.row_registers)
    for (const auto& [id, variable] : row.loads) in_registers.insert(id);
  std::vector<ExprId> loads;
  std::vector<const Stmt*> stores;
  for (const Stmt& s : plan.chain.back()->body) {
    const bool stores_only = s.kind == StmtKind::Loop && !s.body.empty() &&
                             std::all_of(s.body.begin(), s.body.end(), [](const Stmt& c) {
                               return c.kind == StmtKind::Store && !c.accumulate && !c.to_local_array;
                             });
    const sched::Loop* loop = stores_only ? &s.loop : nullptr;
    if (s.kind == StmtKind::Reduce && s.reduce_loops.size() == 1 && s.guard < 0)
      loop = &s.reduce_loops[0];
    if (loop == nullptr || loop->begin >= 0 || loop->end >= 0) return;
    fits = fits && loop->extent == extent;
    if (!stores_only) continue;
    for (const Stmt& store : s.body) {
      if (steps_by_one(store.buffer, store.index, loop->variable)) stores.push_back(&store);
      std::vector<ExprId> found;
      collect_unconditional_loads(kernel, store.value, found);
      for (ExprId id : found) {
        const ExprId index = kernel.exprs[static_cast<size_t>(id)].operands[0];
        if (!in_registers.count(id) && std::find(loads.begin(), loads.end(), id) == loads.end() &&
            steps_by_one(buffer_of(id), index, loop->variable))
          loads.push_back(id);
      }
    }
  }
  const bool chosen = ir::size_choice(fits);
  if (!(fits && chosen)) return;
  std::set<int32_t> buffers;
  for (ExprId id : in_registers) buffers.insert(buffer_of(id));
  for (ExprId id : loads) buffers.insert(buffer_of(id));
  for (const Stmt* store : stores) buffers.insert(store->buffer);
  plan.vector_lanes = static_cast<int>(lanes);
  plan.vector_loads = std::move(loads);
  plan.vector_stores = std::move(stores);
  plan.vector_buffers.assign(buffers.begin(), buffers.end());
}

}  // namespace kiln::codegen::cuda_detail
