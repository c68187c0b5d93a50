// LaunchPlan::unroll of a ThreadPerIteration launch: how many iterations a thread runs per step
// of its run (size_small_launch may still halve it for a launch of less than a wave). Internal
// to src/codegen/cuda; launch_plans.cpp calls it after the vector plan.
#include <set>
#include <vector>

#include "codegen/cuda/kernel_emitter.h"
#include "ir/size_choices.h"

namespace kiln::codegen::cuda_detail {

namespace {

// A light loop body (at most kUnrolledWork elements): a thread runs target.thread_steps
// iterations per run.
constexpr int64_t kUnrolledWork = 64;

// A step of stores that computes more values than this (its loads and operations, each lane's
// counted) runs one iteration a thread. Unrolled, the emitter prints it twice over: `unroll`
// copies for the runs wholly in range and `unroll` guarded ones for the last (step_emitter.cpp),
// a run of several copies that NVRTC takes time superlinear in. resnet18's stem (batch norm,
// ReLU and the 3x3 max pool, ~90 values a lane, 4 lanes) was 1234 lines and 938 ms of NVRTC;
// one copy a path, 667 lines and 169 ms. What unrolling buys, loads in flight, such a step
// already has: each of its nine taps is a 16-byte load (144 bytes a thread, against the 4 to
// 20 of the light steps unrolling is for: a 5-point stencil's 4 loads in flight a thread
// instead of 16), and size_small_launch keeps a thread's single step only where the launch
// fills every multiprocessor's resident threads.
constexpr int64_t kMostUnrolledStepValues = 256;

bool stores_only(const std::vector<Stmt>& body) {
  for (const Stmt& s : body)
    if (s.kind != StmtKind::Store || s.to_local_array) return false;
  return !body.empty();
}

// The values a step of `plan` computes: the distinct loads, operations, casts, selects and
// random draws under its stores (the emitter names each once a lane), times its lanes.
int64_t step_values(const Kernel& kernel, const LaunchPlan& plan) {
  std::set<ExprId> seen;
  std::vector<ExprId> pending;
  for (const Stmt& s : plan.chain.back()->body) pending.push_back(s.value);
  int64_t values = 0;
  while (!pending.empty()) {
    const ExprId id = pending.back();
    pending.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    const Expr& e = kernel.exprs[static_cast<size_t>(id)];
    values += e.kind == ExprKind::Load || e.kind == ExprKind::Elementwise ||
              e.kind == ExprKind::Cast || e.kind == ExprKind::Select ||
              e.kind == ExprKind::Random || e.kind == ExprKind::ArrayLoad;
    if (e.kind != ExprKind::Load) pending.insert(pending.end(), e.operands.begin(), e.operands.end());
  }
  return values * plan.vector_lanes;
}

}  // namespace

void plan_step_unrolling(const Kernel& kernel, const target::Target& target, int64_t inner_work,
                         LaunchPlan& plan) {
  plan.unroll = ir::size_choice(inner_work <= kUnrolledWork) ? target.thread_steps : 1;
  if (plan.unroll > 1 && plan.serial.empty() && stores_only(plan.chain.back()->body) &&
      step_values(kernel, plan) > kMostUnrolledStepValues)
    plan.unroll = 1;
}

}  // namespace kiln::codegen::cuda_detail
