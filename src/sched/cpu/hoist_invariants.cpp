#include "sched/cpu/hoist_invariants.h"

#include <algorithm>
#include <map>

#include "ir/size_choices.h"
#include "sched/kernel_builder.h"

namespace kiln::sched::cpu {
namespace {

// Rough cost of evaluating an expression tree once, in "simple op" units. Memoised: kernels
// are DAGs, and walking one as a tree can take exponential time.
double cost(const Kernel& kernel, ExprId id, std::map<ExprId, double>& memo) {
  if (auto found = memo.find(id); found != memo.end()) return found->second;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  double own = 0;
  switch (e.kind) {  // every kind listed: a new one must say what it costs (-Wswitch)
    case ExprKind::Elementwise:  // the op table's cost column
      own = ir::op_info(e.op).cost == ir::Cost::Cheap ? 1 : 8;
      break;
    case ExprKind::Cast: case ExprKind::Select: own = 1; break;
    case ExprKind::Random: own = 20; break;
    case ExprKind::Load: case ExprKind::ArrayLoad: own = 0.5; break;
    case ExprKind::Constant: case ExprKind::LoopVar: case ExprKind::Local:
    case ExprKind::IndexAdd: case ExprKind::IndexMul: case ExprKind::IndexFloorDiv:
    case ExprKind::IndexMod: case ExprKind::IndexMin: case ExprKind::IndexMax:
    case ExprKind::IndexLess:
      break;
  }
  if (own > 0 && e.kind != ExprKind::Load && e.kind != ExprKind::ArrayLoad)
    for (ExprId operand : e.operands) own += cost(kernel, operand, memo);
  return memo[id] = own;
}

bool contains_local(const Kernel& kernel, ExprId id, std::map<ExprId, bool>& memo) {
  if (auto found = memo.find(id); found != memo.end()) return found->second;
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  bool result = e.kind == ExprKind::Local;
  for (ExprId operand : e.operands) result = result || contains_local(kernel, operand, memo);
  return memo[id] = result;
}

bool trimmed(const Loop& loop) { return loop.begin >= 0 || loop.end >= 0; }

struct ChainLoop {
  int32_t loop;
  int64_t extent;
  std::vector<Stmt>* parent_body;  // where the owning statement sits
  size_t position;                 // its index there
  int depth;                       // nesting depth of parent_body (the kernel body is 0)
  bool first_of_statement;         // a Reduce's later loops cannot have code placed before them
  bool trimmed;                    // runs over run-time bounds (sched/trim_loops.h)
};

class Hoister {
 public:
  Hoister(Kernel& kernel, int64_t max_elements) : kernel_(kernel), builder_(kernel), max_(max_elements) {}

  void run() {
    walk(kernel_.body, 0);
    // Insert the precomputation nests: deepest bodies first (inserting into an outer body moves
    // the inner ones), and within a body the last position first.
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
      auto& [place, statements] = *it;
      auto& [depth, body, position] = place;
      body->insert(body->begin() + static_cast<long>(position), std::make_move_iterator(statements.begin()),
                   std::make_move_iterator(statements.end()));
    }
  }

 private:
  void walk(std::vector<Stmt>& body, int depth) {
    for (size_t k = 0; k < body.size(); ++k) {
      Stmt& s = body[k];
      size_t pushed = 0;
      if (s.kind == StmtKind::Loop) {
        chain_.push_back({s.loop.variable, s.loop.extent, &body, k, depth, true, trimmed(s.loop)});
        pushed = 1;
      }
      for (size_t q = 0; q < s.reduce_loops.size(); ++q, ++pushed)
        chain_.push_back({s.reduce_loops[q].variable, s.reduce_loops[q].extent, &body, k, depth,
                          q == 0, trimmed(s.reduce_loops[q])});
      walk(s.body, depth + 1);
      rewritten_.clear();  // hoisting depends on the enclosing loops
      for (Accumulation& a : s.accumulations) a.value = rewrite(a.value);
      if (s.kind == StmtKind::Store) s.value = rewrite(s.value);
      chain_.resize(chain_.size() - pushed);
    }
  }

  ExprId rewrite(ExprId id) {
    Expr e = builder_.expr(id);  // a copy: the arena grows below
    switch (e.kind) {
      case ExprKind::Elementwise: case ExprKind::Cast: case ExprKind::Select: case ExprKind::Random:
        break;
      default:
        return id;
    }
    if (auto done = rewritten_.find(id); done != rewritten_.end()) return done->second;
    ExprId result = rewrite_uncached(id);
    rewritten_[id] = result;
    return result;
  }

  ExprId rewrite_uncached(ExprId id) {
    Expr e = builder_.expr(id);  // a copy: the arena grows below
    if (cost(kernel_, id, cost_memo_) >= 4 && !contains_local(kernel_, id, local_memo_)) {
      ExprId hoisted = hoist(id);
      if (hoisted >= 0) return hoisted;
    }
    bool changed = false;
    for (ExprId& operand : e.operands) {
      ExprId replaced = rewrite(operand);
      changed |= replaced != operand;
      operand = replaced;
    }
    if (!changed) return id;
    switch (e.kind) {
      case ExprKind::Elementwise: return builder_.elementwise(e.op, e.dtype, e.operands);
      case ExprKind::Cast: return builder_.cast(e.operands[0], e.dtype);
      case ExprKind::Select: return builder_.select(e.operands[0], e.operands[1], e.operands[2]);
      default: return builder_.random(e.op, e.dtype, e.seed, e.operands[0], e.operands[1]);
    }
  }

  // Returns the array load replacing `id`, or -1 when hoisting does not apply.
  ExprId hoist(ExprId id) {
    const std::set<int32_t> deps = builder_.dependencies(id);
    // A loop the chain does not list (a lane reduction's lanes) cannot be iterated ahead.
    for (int32_t loop : deps)
      if (std::none_of(chain_.begin(), chain_.end(), [&](const ChainLoop& c) { return c.loop == loop; }))
        return -1;
    // The outermost loop it does not depend on that runs more than once: hoisting out of a
    // loop of one iteration (an extent-1 dimension) saves nothing and adds a local array.
    size_t missing = 0;
    while (missing < chain_.size() &&
           (deps.count(chain_[missing].loop) || ir::size_choice(chain_[missing].extent == 1)))
      ++missing;
    if (missing == chain_.size() || !chain_[missing].first_of_statement) return -1;
    std::vector<ChainLoop> inner;
    int64_t size = 1;
    for (size_t j = missing + 1; j < chain_.size(); ++j)
      if (deps.count(chain_[j].loop)) inner.push_back(chain_[j]), size *= chain_[j].extent;
    // A loop trimmed to run-time bounds reads a few of its positions: computing all of them
    // ahead is the work the trim saved (a moving window's mask over the whole axis, once per
    // step of a captured Python loop: x[max(0, i - k + 1):i + 1].mean(axis=0) of rows).
    if (std::any_of(inner.begin(), inner.end(), [](const ChainLoop& c) { return c.trimmed; }))
      return -1;
    // A threshold on sizes: every size of a graph with size symbols makes the recorded sizes'
    // choice (ir/size_choices.h), up to twice the bound (the arrays live on the stack).
    if (inner.empty() || !ir::size_choice(size <= max_) || size > 2 * max_) return -1;

    const ChainLoop& at = chain_[missing];
    auto key = std::make_tuple(id, at.parent_body, at.position);
    if (auto found = memo_.find(key); found != memo_.end()) return found->second;

    DType dtype = builder_.expr(id).dtype;
    int32_t array = static_cast<int32_t>(kernel_.local_arrays.size());
    kernel_.local_arrays.push_back({dtype, size});
    std::map<int32_t, ExprId> substitution;
    std::vector<Stmt> nest(inner.size());
    ExprId new_index = builder_.index_constant(0), old_index = builder_.index_constant(0);
    for (size_t j = 0; j < inner.size(); ++j) {
      int32_t loop = builder_.new_loop(inner[j].extent);
      nest[j].kind = StmtKind::Loop;
      nest[j].loop = Loop{loop, inner[j].extent};
      substitution[inner[j].loop] = builder_.loop_var(loop);
      new_index = builder_.add(builder_.mul(new_index, inner[j].extent), builder_.loop_var(loop));
      old_index = builder_.add(builder_.mul(old_index, inner[j].extent), builder_.loop_var(inner[j].loop));
    }
    Stmt store;
    store.kind = StmtKind::Store;
    store.to_local_array = true;
    store.buffer = array;
    store.index = new_index;
    store.value = builder_.substitute(id, substitution);
    nest.back().body.push_back(std::move(store));
    nest.back().vectorize = true;
    for (size_t j = nest.size() - 1; j > 0; --j) nest[j - 1].body.push_back(std::move(nest[j]));
    Stmt declare;
    declare.kind = StmtKind::LocalArray;
    declare.buffer = array;
    auto& statements = pending_[{at.depth, at.parent_body, at.position}];
    statements.push_back(std::move(declare));
    statements.push_back(std::move(nest[0]));
    ExprId load = builder_.array_load(array, dtype, old_index);
    memo_[key] = load;
    return load;
  }

  Kernel& kernel_;
  KernelBuilder builder_;
  int64_t max_;
  std::vector<ChainLoop> chain_;
  std::map<ExprId, double> cost_memo_;
  std::map<ExprId, bool> local_memo_;
  std::map<ExprId, ExprId> rewritten_;  // valid while the loop chain is unchanged
  std::map<std::tuple<int, std::vector<Stmt>*, size_t>, std::vector<Stmt>> pending_;
  std::map<std::tuple<ExprId, std::vector<Stmt>*, size_t>, ExprId> memo_;
};

}  // namespace

bool hoist_invariants(Kernel& kernel, const target::Target&) {
  size_t arrays_before = kernel.local_arrays.size();
  Hoister(kernel, kMaxHoistedElements).run();
  return kernel.local_arrays.size() != arrays_before;
}

}  // namespace kiln::sched::cpu
