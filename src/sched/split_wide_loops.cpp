#include "sched/split_wide_loops.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "sched/independent_kernels.h"
#include "sched/kernel_builder.h"

namespace kiln::sched {
namespace {

bool plain_stores(const Stmt& loop) {
  if (loop.kind != StmtKind::Loop || loop.loop.begin >= 0 || loop.loop.end >= 0) return false;
  for (const Stmt& s : loop.body)
    if (s.kind != StmtKind::Store || s.accumulate || s.to_local_array) return false;
  return loop.body.size() > kMostStoresPerLoop;
}

// The statements of `loop` in groups of at most kMostStoresPerLoop (a group of stores that meet
// alone where it is larger), each group's statements in their order in the loop.
std::vector<std::vector<size_t>> store_groups(KernelBuilder& builder, const Stmt& loop) {
  const Kernel& kernel = builder.kernel();
  const size_t n = loop.body.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  };
  auto unite = [&](size_t a, size_t b) { parent[find(a)] = find(b); };
  std::map<int32_t, size_t> stored_by;  // a buffer -> a statement storing it
  for (size_t k = 0; k < n; ++k) {
    auto [at, added] = stored_by.emplace(loop.body[k].buffer, k);
    if (!added) unite(k, at->second);
  }
  std::map<int32_t, size_t> streamed_by;  // a buffer read at the loop's positions -> a reader
  for (size_t k = 0; k < n; ++k) {
    for_each_load(kernel, {loop.body[k]}, [&](const Expr& load) {
      if (auto writer = stored_by.find(load.buffer); writer != stored_by.end())
        unite(k, writer->second);
      if (!builder.dependencies(load.operands[0]).count(loop.loop.variable)) return;
      auto [at, added] = streamed_by.emplace(load.buffer, k);
      if (!added) unite(k, at->second);
    });
  }
  std::map<size_t, std::vector<size_t>> components;  // by root, in order of first statement
  std::vector<size_t> order;
  for (size_t k = 0; k < n; ++k) {
    auto [at, added] = components.try_emplace(find(k));
    if (added) order.push_back(find(k));
    at->second.push_back(k);
  }
  std::vector<std::vector<size_t>> groups;
  for (size_t root : order) {
    const std::vector<size_t>& members = components[root];
    if (groups.empty() || groups.back().size() + members.size() > kMostStoresPerLoop)
      groups.emplace_back();
    groups.back().insert(groups.back().end(), members.begin(), members.end());
  }
  for (std::vector<size_t>& group : groups) std::sort(group.begin(), group.end());
  return groups;
}

// Whether `kernel` is top-level plain stores of which none reads what another stores.
bool independent_stores(const Kernel& kernel) {
  std::set<int32_t> stored;
  for (const Stmt& s : kernel.body) {
    if (s.kind != StmtKind::Store || s.accumulate || s.to_local_array) return false;
    stored.insert(s.buffer);
  }
  if (stored.size() != kernel.body.size()) return false;
  bool reads_stored = false;
  for_each_load(kernel, kernel.body,
                [&](const Expr& load) { reads_stored = reads_stored || stored.count(load.buffer); });
  return !reads_stored;
}

}  // namespace

bool split_wide_loops(Kernel& kernel, const target::Target&) {
  if (kernel.ordered_from >= 0) return false;  // the order of top-level statements matters
  if (kernel.body.size() > 1 && independent_stores(kernel)) {
    wrap_top_level_stores(kernel);  // 0-d updates (step counts): parts, not one thread's chain
    return true;
  }
  KernelBuilder builder(kernel);
  std::vector<Stmt> body;
  bool changed = false;
  for (Stmt& loop : kernel.body) {
    std::vector<std::vector<size_t>> groups;
    if (plain_stores(loop)) groups = store_groups(builder, loop);
    if (groups.size() < 2) {
      body.push_back(std::move(loop));
      continue;
    }
    changed = true;
    for (size_t g = 0; g < groups.size(); ++g) {
      Stmt part = loop;
      part.body.clear();
      // Each loop after the first counts with a variable of its own (a loop is named by it).
      std::map<int32_t, ExprId> renamed;
      std::unordered_map<ExprId, ExprId> memo;
      if (g > 0) {
        part.loop.variable = builder.new_loop(loop.loop.extent);
        renamed[loop.loop.variable] = builder.loop_var(part.loop.variable);
      }
      for (size_t k : groups[g]) {
        Stmt store = loop.body[k];
        if (g > 0) {
          store.index = builder.substitute(store.index, renamed, &memo);
          store.value = builder.substitute(store.value, renamed, &memo);
        }
        part.body.push_back(std::move(store));
      }
      body.push_back(std::move(part));
    }
  }
  kernel.body = std::move(body);
  return changed;
}

}  // namespace kiln::sched
