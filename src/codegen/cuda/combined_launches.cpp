// Combined launches (kernel_emitter.h): independent ThreadPerIteration launches of one kernel
// as one function, each part taking its own range of the grid's blocks (Inductor's combo
// kernels): a compiled optimizer step's 46 small updates were 46 launches.
#include <functional>
#include <optional>
#include <set>

#include "codegen/cuda/kernel_emitter.h"
#include "sched/independent_kernels.h"

namespace kiln::codegen::cuda_detail {

namespace {

// The buffers statements of `kernel` load from and store into.
struct LaunchBuffers {
  std::set<int32_t> read, written;
};

LaunchBuffers launch_buffers(const Kernel& kernel, const std::vector<Stmt>& statements) {
  LaunchBuffers buffers;
  std::function<void(const Stmt&)> stores = [&](const Stmt& s) {
    if (s.kind == StmtKind::Store) buffers.written.insert(s.buffer);
    for (const Stmt& inner : s.body) stores(inner);
  };
  for (const Stmt& s : statements) stores(s);
  sched::for_each_load(kernel, statements,
                       [&](const sched::Expr& load) { buffers.read.insert(load.buffer); });
  return buffers;
}

bool shares_written(const LaunchBuffers& a, const LaunchBuffers& b,
                    const sched::SharedMemory& shared) {
  auto meets = [&](const std::set<int32_t>& some, const std::set<int32_t>& others) {
    for (int32_t buffer : some)
      for (int32_t other : others)
        if (shared(buffer, other)) return true;
    return false;
  };
  return meets(a.written, b.read) || meets(a.written, b.written) || meets(b.written, a.read);
}

bool combinable(const Kernel& kernel, const LaunchPlan& plan) {
  if (plan.kind != LaunchKind::ThreadPerIteration || plan.iterations == 0) return false;
  return sched::elementwise(launch_statements(kernel, plan));
}

}  // namespace

std::vector<std::vector<size_t>> combined_launches(const Program& program, const Kernel& kernel,
                                                   const std::vector<LaunchPlan>& plans) {
  std::optional<sched::SharedMemory> shared;  // made when two launches might combine
  std::vector<std::vector<size_t>> groups;
  std::vector<LaunchBuffers> group_buffers;
  bool open = false;  // whether the last group takes more parts
  for (size_t k = 0; k < plans.size(); ++k) {
    const LaunchPlan& plan = plans[k];
    if (plan.iterations == 0) continue;  // an empty output: nothing to launch
    if (!combinable(kernel, plan)) {
      groups.push_back({k});
      open = false;
      continue;
    }
    LaunchBuffers buffers = launch_buffers(kernel, launch_statements(kernel, plan));
    bool joins = open && groups.back().size() < sched::kMostJoinedKernels;
    if (joins && !shared) shared.emplace(program);
    for (size_t p = 0; joins && p < group_buffers.size(); ++p)
      joins = !shares_written(group_buffers[p], buffers, *shared);
    if (!joins) {
      groups.push_back({});
      group_buffers.clear();
    }
    groups.back().push_back(k);
    group_buffers.push_back(std::move(buffers));
    open = true;
  }
  return groups;
}

// The parts one after another, each in the blocks after the last part's: a part's code is the
// launch's own with its block index and grid size those of its range.
void CudaKernelEmitter::combined_body() {
  int64_t first = 0;
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Part& part = parts_[p];
    const int64_t end = first + part.blocks;
    const std::string test = "if (blockIdx.x < " + std::to_string(end) + ") {";
    line(p == 0 ? test : p + 1 < parts_.size() ? "else " + test : "else {");
    open_block();
    line("const int64_t kiln_block = (int64_t)blockIdx.x - " + std::to_string(first) +
         ", kiln_grid = " + std::to_string(part.blocks) + ";");
    // A part planned for fewer threads than the launch's block leaves the others idle.
    const bool fewer = part.plan->threads < plan_.threads;
    if (fewer) {
      line("if (threadIdx.x < " + std::to_string(part.plan->threads) + ") {");
      open_block();
    }
    CudaKernelEmitter own(program_, kernel_, options_, target_, arguments_, *part.plan);
    own.in_part_ = true;
    own.depth_ = depth_;
    own.body();
    out_ << own.argument_declarations(own.used_arguments_) << own.out_.str();
    if (fewer) close_block();
    close_block();
    first = end;
  }
}

}  // namespace kiln::codegen::cuda_detail
