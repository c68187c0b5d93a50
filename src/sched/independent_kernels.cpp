#include "sched/independent_kernels.h"

#include <algorithm>
#include <set>
#include <utility>

namespace kiln::sched {

namespace {

bool joinable(const Kernel& kernel) {
  return kernel.ordered_from < 0 && kernel.local_arrays.empty() &&
         kernel.local_dependencies.empty() && elementwise(kernel.body);
}

// The bytes of the arena buffer `b` covers, or an empty range for one outside it.
std::pair<int64_t, int64_t> arena_bytes(const Program& program, int32_t b) {
  const Buffer& buffer = program.buffers[static_cast<size_t>(b)];
  if (buffer.role != BufferRole::Intermediate || buffer.arena_offset < 0) return {0, 0};
  return {buffer.arena_offset, buffer.arena_offset + buffer_bytes(buffer)};
}

// What the steps from a head on use: buffers read and written, and the arena bytes of both.
struct Used {
  std::set<int32_t> read, written;
  std::vector<std::pair<int64_t, int64_t>> bytes;

  void add(const Program& program, const Step& step) {
    for (bool writes : {false, true})
      for (int32_t b : step_buffers(program, step, writes)) {
        (writes ? written : read).insert(b);
        auto range = arena_bytes(program, b);
        if (range.first < range.second) bytes.push_back(range);
      }
  }

  // Whether `kernel` can run before these steps with the same results.
  bool independent(const Program& program, const Kernel& kernel) const {
    for (int32_t b : kernel.buffers_read)
      if (written.count(b)) return false;
    for (int32_t b : kernel.buffers_written) {
      if (read.count(b) || written.count(b)) return false;
      auto [low, high] = arena_bytes(program, b);
      for (auto [other_low, other_high] : bytes)
        if (low < other_high && other_low < high) return false;
    }
    return true;
  }
};

template <class Remap>
void remap_statements(std::vector<Stmt>& body, const Remap& remap) {
  for (Stmt& s : body) {
    remap(s);
    remap_statements(s.body, remap);
  }
}

}  // namespace

bool elementwise(const std::vector<Stmt>& body) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Store ? s.accumulate || s.to_local_array
                                  : s.kind != StmtKind::Loop || !elementwise(s.body))
      return false;
  }
  return true;
}

void append_kernel(Kernel& into, const Kernel& from) {
  const auto exprs = static_cast<ExprId>(into.exprs.size());
  const auto loops = static_cast<int32_t>(into.loop_extents.size());
  const auto locals = static_cast<int32_t>(into.local_dependencies.size());
  const auto arrays = static_cast<int32_t>(into.local_arrays.size());
  auto expr = [&](ExprId& id) {
    if (id >= 0) id += exprs;
  };
  for (Expr e : from.exprs) {
    for (ExprId& operand : e.operands) expr(operand);
    if (e.kind == ExprKind::LoopVar) e.variable += loops;
    if (e.kind == ExprKind::Local) e.variable += locals;
    if (e.kind == ExprKind::ArrayLoad) e.buffer += arrays;
    into.exprs.push_back(std::move(e));
  }
  auto loop = [&](Loop& l) {
    if (l.variable >= 0) l.variable += loops;
    expr(l.begin), expr(l.end);
  };
  std::vector<Stmt> body = from.body;
  remap_statements(body, [&](Stmt& s) {
    loop(s.loop), loop(s.lanes_loop);
    for (Loop& l : s.reduce_loops) loop(l);
    for (Accumulation& a : s.accumulations) a.local += locals, expr(a.value), expr(a.position);
    expr(s.guard), expr(s.index), expr(s.value);
    if (s.kind == StmtKind::LocalArray || s.to_local_array) s.buffer += arrays;
  });
  into.body.insert(into.body.end(), body.begin(), body.end());
  into.loop_extents.insert(into.loop_extents.end(), from.loop_extents.begin(), from.loop_extents.end());
  for (std::vector<int32_t> dependencies : from.local_dependencies) {
    for (int32_t& l : dependencies) l += loops;
    into.local_dependencies.push_back(std::move(dependencies));
  }
  into.local_arrays.insert(into.local_arrays.end(), from.local_arrays.begin(), from.local_arrays.end());
  into.comments.insert(into.comments.end(), from.comments.begin(), from.comments.end());
  for (auto [list, more] : {std::pair{&into.buffers_read, &from.buffers_read},
                            std::pair{&into.buffers_written, &from.buffers_written}}) {
    std::set<int32_t> all(list->begin(), list->end());
    all.insert(more->begin(), more->end());
    list->assign(all.begin(), all.end());
  }
}

bool join_independent_kernels(Program& program) {
  // A kernel run by two steps cannot take in another's work.
  std::vector<int> runs(program.kernels.size(), 0);
  for (const Step& step : program.steps)
    if (step.kind == StepKind::Kernel) ++runs[static_cast<size_t>(step.kernel)];
  std::vector<bool> joined(program.steps.size(), false);
  size_t head = SIZE_MAX, parts = 0;
  int depth = 0;  // of graph loops: their steps run per iteration, and stay where they are
  Used used;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::LoopBegin || step.kind == StepKind::LoopEnd) {
      depth += step.kind == StepKind::LoopBegin ? 1 : -1;
      head = SIZE_MAX;
      continue;
    }
    const bool candidate = depth == 0 && step.kind == StepKind::Kernel &&
                           runs[static_cast<size_t>(step.kernel)] == 1 &&
                           joinable(program.kernels[static_cast<size_t>(step.kernel)]);
    if (candidate && head != SIZE_MAX && parts < kMostJoinedKernels) {
      Kernel& into = program.kernels[static_cast<size_t>(program.steps[head].kernel)];
      const Kernel& kernel = program.kernels[static_cast<size_t>(step.kernel)];
      if (used.independent(program, kernel)) {
        append_kernel(into, kernel);
        joined[s] = true;
        ++parts;
        used.add(program, step);  // it runs beside the head's parts now
        continue;
      }
    }
    if (candidate && (head == SIZE_MAX || parts >= kMostJoinedKernels)) {
      head = s, parts = 1, used = Used();
    }
    if (head != SIZE_MAX) used.add(program, step);
  }
  if (std::find(joined.begin(), joined.end(), true) == joined.end()) return false;
  // Drop the joined kernels and their steps; renumber the kernels the steps run.
  std::vector<int32_t> renumbered(program.kernels.size(), -1);
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (joined[s]) continue;
    Step step = program.steps[s];
    if (step.kind == StepKind::Kernel) {
      int32_t& number = renumbered[static_cast<size_t>(step.kernel)];
      if (number < 0) {
        number = static_cast<int32_t>(kernels.size());
        kernels.push_back(std::move(program.kernels[static_cast<size_t>(step.kernel)]));
      }
      step.kernel = number;
    }
    steps.push_back(std::move(step));
  }
  program.kernels = std::move(kernels);
  program.steps = std::move(steps);
  return true;
}

}  // namespace kiln::sched
