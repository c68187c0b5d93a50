// Lowering: a graph node's value at an index, as a loop-IR expression inside the kernel being
// built. Pointwise producers and view ops are inlined (views become index arithmetic);
// materialized nodes are loads; a reduction is placed as a Reduce statement at the loop depth
// whose bound variables are exactly the ones its index uses, so it is computed once per
// distinct output element and shared by every use below that depth (row-wise softmax and
// layer-norm statistics, kmeans' inner distance sum). A reduction that cannot be placed like
// that would be recomputed across some loop: it is reported in `materialize_requests` and the
// scheduler makes it a kernel of its own.
#pragma once
#include <map>
#include <set>
#include <vector>

#include "ir/graph.h"
#include "sched/kernel_builder.h"

namespace kiln::sched {

std::vector<int32_t> use_counts(const ir::Graph& graph);

class Lowering {
 public:
  // buffer_of[node] is the buffer holding a materialized node's value, or -1.
  // uses[node]: how many node inputs name it (use_counts(); computed once per graph: a
  // Lowering is made per kernel).
  Lowering(const ir::Graph& graph, const std::vector<int32_t>& buffer_of,
           const std::vector<Buffer>& buffers, KernelBuilder& builder,
           std::set<ir::ValueId>& materialize_requests, const std::vector<int32_t>& uses);

  // The value of `node` at `index` (one index expression per dimension of the node's shape).
  // With `compute`, a materialized node is computed rather than loaded (the kernel's roots).
  ExprId value(ir::ValueId node, const std::vector<ExprId>& index, bool compute = false);

  // Statement scopes: the kernel body, then each open loop / reduce body, with the loop
  // variables that scope binds. Reductions are placed into these.
  void push_scope(std::vector<Stmt>* statements, std::vector<int32_t> bound_loops);
  void pop_scope();
  // Graph nodes inlined into the kernel so far (kernel names and comments).
  std::set<ir::ValueId> visited;
  // Materialized nodes this kernel computes and stores itself (a fused group's roots): a use of
  // one is its computed value, not a load of what the kernel stores (loads may be issued
  // before the stores: vector loads, hoisted reads).
  std::set<ir::ValueId> stored_here;
  // Byte-free element offset of `index` in buffer `buffer` (its strides).
  ExprId offset(int32_t buffer, const std::vector<ExprId>& index);
  // Loop variables that are the index of a full iteration over `shape`.
  std::vector<ExprId> loop_index(const std::vector<int32_t>& loops);

 private:
  ExprId lower(ir::ValueId node, const std::vector<ExprId>& index, bool compute);
  ExprId reduction(ir::ValueId node, const std::vector<ExprId>& index);
  // Places the reduction as a Reduce in the innermost scope, whose loops are `needed`.
  ExprId place_reduction(ir::ValueId node, const std::vector<ExprId>& index,
                         const std::set<int32_t>& needed);
  ExprId movement(const ir::Node& node, const std::vector<ExprId>& index);
  bool uses_local(ExprId id, const std::set<int32_t>& locals);
  // Whether any expression of the statements (nested ones included) reads one of `locals`.
  bool statements_use_local(const std::vector<Stmt>& statements,
                            const std::set<int32_t>& locals);
  // A shared value (several uses) inlined at many different indices (a time-step loop of
  // stencils, each step reading the last at several offsets) is computed once per index: past
  // a bound it is materialized instead, or the inlined code would grow with the square of the
  // number of steps.
  void note_recomputation(ir::ValueId id, const std::vector<ExprId>& index);
  static constexpr size_t kMostRecomputations = 8;
  std::map<ir::ValueId, std::set<std::vector<ExprId>>> computed_at_;

  struct Scope {
    std::vector<Stmt>* statements;
    std::vector<int32_t> bound_loops;
    std::map<std::pair<ir::ValueId, std::vector<ExprId>>, ExprId> placed;  // memo of reductions
    // Memo of every value lowered while this scope was the innermost: graphs are DAGs (an
    // unrolled Euclid references each step twice), so without it lowering is exponential.
    std::map<std::pair<ir::ValueId, std::vector<ExprId>>, ExprId> lowered;
  };

  const ir::Graph& graph_;
  const std::vector<int32_t>& buffer_of_;
  const std::vector<Buffer>& buffers_;
  KernelBuilder& builder_;
  std::set<ir::ValueId>& materialize_requests_;
  const std::vector<int32_t>& uses_;  // by node: how many node inputs name it
  std::vector<Scope> scopes_;
};

}  // namespace kiln::sched
