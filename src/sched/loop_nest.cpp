#include "sched/loop_nest.h"

namespace kiln::sched {

Stmt loop_nest(KernelBuilder& builder, Lowering& lowering, const std::vector<int64_t>& shape,
               std::vector<int32_t>& loops, const std::function<void(std::vector<Stmt>&)>& inner) {
  std::vector<Stmt> nest(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    nest[d].kind = StmtKind::Loop;
    nest[d].loop = Loop{builder.new_loop(shape[d]), shape[d]};
    loops.push_back(nest[d].loop.variable);
    lowering.push_scope(&nest[d].body, {nest[d].loop.variable});
  }
  Stmt block;  // rank 0: the statements go straight into a block we unwrap below
  inner(shape.empty() ? block.body : nest.back().body);
  for (size_t d = shape.size(); d-- > 0;) {
    lowering.pop_scope();
    if (d > 0) nest[d - 1].body.push_back(std::move(nest[d]));
  }
  if (shape.empty()) return block;
  Stmt outer;
  outer.body.push_back(std::move(nest[0]));
  return outer;
}

Stmt split_nest(KernelBuilder& builder, Lowering& lowering, const std::vector<int64_t>& shape,
                const LoopSplits& splits, std::vector<int32_t>& dimension_loops,
                const std::function<void(std::vector<Stmt>&, std::vector<ExprId>)>& inner) {
  std::vector<int64_t> nest_shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    nest_shape.push_back(splits[d].empty() ? shape[d] : shape[d] / splits[d].front());
    for (size_t k = 0; k < splits[d].size(); ++k)
      nest_shape.push_back(k + 1 < splits[d].size() ? splits[d][k] / splits[d][k + 1] : splits[d][k]);
  }
  std::vector<int32_t> loops;
  return loop_nest(builder, lowering, nest_shape, loops, [&](std::vector<Stmt>& body) {
    std::vector<ExprId> index, nest_index = lowering.loop_index(loops);
    for (size_t d = 0, at = 0; d < shape.size(); ++d) {
      dimension_loops.push_back(loops[at]);
      ExprId i = nest_index[at++];
      for (size_t k = 0; k < splits[d].size(); ++k, ++at)
        i = builder.add(builder.mul(i, builder.loop_extent(loops[at])), nest_index[at]);
      index.push_back(i);
    }
    inner(body, std::move(index));
  });
}

}  // namespace kiln::sched
