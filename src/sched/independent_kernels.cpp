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

// What the steps from a head on use.
struct Used {
  std::set<int32_t> read, written;

  void add(const Program& program, const Step& step) {
    for (bool writes : {false, true})
      for (int32_t b : step_buffers(program, step, writes)) (writes ? written : read).insert(b);
  }

  // Whether `kernel` can run before these steps with the same results.
  bool independent(const Kernel& kernel, const SharedMemory& shared) const {
    auto meets = [&](int32_t b, const std::set<int32_t>& buffers) {
      return std::any_of(buffers.begin(), buffers.end(), [&](int32_t o) { return shared(b, o); });
    };
    for (int32_t b : kernel.buffers_read)
      if (meets(b, written)) return false;
    for (int32_t b : kernel.buffers_written)
      if (meets(b, read) || meets(b, written)) return false;
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

void wrap_top_level_stores(Kernel& kernel) {
  for (Stmt& s : kernel.body) {
    if (s.kind != StmtKind::Store) continue;
    Stmt loop;
    loop.kind = StmtKind::Loop;
    loop.loop.variable = static_cast<int32_t>(kernel.loop_extents.size());
    loop.loop.extent = 1;
    kernel.loop_extents.push_back(1);
    loop.body.push_back(std::move(s));
    s = std::move(loop);
  }
}

SharedMemory::SharedMemory(const Program& program) : bytes_(program.buffers.size()) {
  std::vector<int32_t> root(program.buffers.size());
  for (size_t b = 0; b < root.size(); ++b) root[b] = static_cast<int32_t>(b);
  auto find = [&](int32_t b) {
    while (root[static_cast<size_t>(b)] != b) b = root[static_cast<size_t>(b)];
    return b;
  };
  std::vector<int> swaps(root.size(), 0);
  partner_.assign(root.size(), -1);
  for (const Step& step : program.steps)
    if (step.kind == StepKind::LoopEnd)
      for (const auto& [carried, next] : step.loop.swaps) {
        root[static_cast<size_t>(find(carried))] = find(next);
        ++swaps[static_cast<size_t>(carried)];
        ++swaps[static_cast<size_t>(next)];
        partner_[static_cast<size_t>(carried)] = next;
        partner_[static_cast<size_t>(next)] = carried;
      }
  for (size_t b = 0; b < root.size(); ++b)
    if (swaps[b] != 1) partner_[b] = -1;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> of_root(root.size());
  for (size_t b = 0; b < root.size(); ++b) {
    const Buffer& buffer = program.buffers[b];
    if (buffer.role == BufferRole::Intermediate && buffer.arena_offset >= 0)
      of_root[static_cast<size_t>(find(static_cast<int32_t>(b)))].push_back(
          {buffer.arena_offset, buffer.arena_offset + buffer_bytes(buffer)});
  }
  for (size_t b = 0; b < root.size(); ++b)
    bytes_[b] = of_root[static_cast<size_t>(find(static_cast<int32_t>(b)))];
}

bool SharedMemory::operator()(int32_t a, int32_t b) const {
  if (a == b) return true;
  const int32_t partner = partner_[static_cast<size_t>(a)];
  if (partner == b && partner_[static_cast<size_t>(b)] == a) return false;
  for (auto [low, high] : bytes_[static_cast<size_t>(a)])
    for (auto [other_low, other_high] : bytes_[static_cast<size_t>(b)])
      if (low < other_high && other_low < high) return true;
  return false;
}

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
  auto append = [](auto& list, const auto& more) {
    list.insert(list.end(), more.begin(), more.end());
  };
  append(into.body, body);
  append(into.loop_extents, from.loop_extents);
  for (std::vector<int32_t> dependencies : from.local_dependencies) {
    for (int32_t& l : dependencies) l += loops;
    into.local_dependencies.push_back(std::move(dependencies));
  }
  append(into.local_arrays, from.local_arrays);
  append(into.comments, from.comments);
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
  // The kernels others may join, in step order, each with what the steps after it use (a step
  // that joins one moves before the heads after it, and is no longer in their way).
  struct Head {
    size_t step, parts;
    Used used;
  };
  std::vector<Head> heads;
  int depth = 0;  // of graph loops: their steps run per iteration, and stay where they are
  const SharedMemory shared(program);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const Step& step = program.steps[s];
    if (step.kind == StepKind::LoopBegin || step.kind == StepKind::LoopEnd) {
      depth += step.kind == StepKind::LoopBegin ? 1 : -1;
      heads.clear();
      continue;
    }
    const bool candidate = depth == 0 && step.kind == StepKind::Kernel &&
                           runs[static_cast<size_t>(step.kernel)] == 1 &&
                           joinable(program.kernels[static_cast<size_t>(step.kernel)]);
    size_t into = heads.size();
    if (candidate) {
      const Kernel& kernel = program.kernels[static_cast<size_t>(step.kernel)];
      for (size_t h = 0; h < heads.size() && into == heads.size(); ++h)
        if (heads[h].parts < kMostJoinedKernels && heads[h].used.independent(kernel, shared))
          into = h;
      if (into < heads.size()) {
        Kernel& head = program.kernels[static_cast<size_t>(program.steps[heads[into].step].kernel)];
        append_kernel(head, kernel);
        wrap_top_level_stores(head);
        joined[s] = true;
        ++heads[into].parts;
      }
    }
    for (size_t h = 0; h < heads.size() && (!joined[s] || h <= into); ++h)
      heads[h].used.add(program, step);
    if (candidate && !joined[s]) {
      heads.push_back({s, 1, Used()});
      heads.back().used.add(program, step);
      if (heads.size() > kMostOpenHeads) heads.erase(heads.begin());
    }
  }
  if (std::find(joined.begin(), joined.end(), true) == joined.end()) return false;
  // Drop the joined kernels and their steps; renumber the kernels the steps run, and the steps
  // a graph loop's ends name as their partners.
  std::vector<int32_t> renumbered(program.kernels.size(), -1), step_number(program.steps.size());
  for (size_t s = 0, kept = 0; s < program.steps.size(); ++s)
    step_number[s] = static_cast<int32_t>(joined[s] ? kept : kept++);
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    if (joined[s]) continue;
    Step step = program.steps[s];
    if (step.kind == StepKind::LoopBegin || step.kind == StepKind::LoopEnd)
      step.loop.partner = step_number[static_cast<size_t>(step.loop.partner)];
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
