// Combined launches (kernel_emitter.h): independent ThreadPerIteration launches of one kernel
// as one function, each part taking its own range of the grid's blocks (Inductor's combo
// kernels): a compiled optimizer step's 46 small updates were 46 launches. Parts may store
// into one buffer where their elements are apart: an in-place slice update's interior and the
// edges it copies into the other buffer of a loop's pair (the heat equation's step, three
// launches).
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "codegen/cuda/kernel_emitter.h"
#include "sched/disjoint_slices.h"
#include "sched/independent_kernels.h"

namespace kiln::codegen::cuda_detail {

namespace {

using IndexRange = std::pair<int64_t, int64_t>;

// The buffers statements of `kernel` load from and store into, and the elements each store
// may write (nullopt: unknown).
struct LaunchBuffers {
  std::set<int32_t> read;
  std::map<int32_t, std::vector<std::optional<IndexRange>>> written;
};

LaunchBuffers launch_buffers(const Kernel& kernel, const std::vector<Stmt>& statements) {
  LaunchBuffers buffers;
  std::function<void(const Stmt&)> stores = [&](const Stmt& s) {
    if (s.kind == StmtKind::Store)
      buffers.written[s.buffer].push_back(sched::index_range(kernel, s.index));
    for (const Stmt& inner : s.body) stores(inner);
  };
  for (const Stmt& s : statements) stores(s);
  sched::for_each_load(kernel, statements,
                       [&](const sched::Expr& load) { buffers.read.insert(load.buffer); });
  return buffers;
}

// Whether every store of `some` is known to miss every store of `others`.
bool apart(const std::vector<std::optional<IndexRange>>& some,
           const std::vector<std::optional<IndexRange>>& others) {
  for (const std::optional<IndexRange>& a : some)
    for (const std::optional<IndexRange>& b : others)
      if (!a || !b || (a->first <= b->second && b->first <= a->second)) return false;
  return true;
}

bool shares_written(const LaunchBuffers& a, const LaunchBuffers& b,
                    const sched::SharedMemory& shared) {
  auto meets_read = [&](const LaunchBuffers& writer, const std::set<int32_t>& read) {
    for (const auto& [buffer, ranges] : writer.written)
      for (int32_t other : read)
        if (shared(buffer, other)) return true;
    return false;
  };
  for (const auto& [buffer, ranges] : a.written)
    for (const auto& [other, other_ranges] : b.written)
      if (shared(buffer, other) && (buffer != other || !apart(ranges, other_ranges))) return true;
  return meets_read(a, b.read) || meets_read(b, a.read);
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
