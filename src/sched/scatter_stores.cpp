#include "sched/scatter_stores.h"

namespace kiln::sched {

Stmt scatter_store(const ir::Graph& graph, ir::ValueId scatter, int32_t buffer,
                   KernelBuilder& builder, Lowering& lowering, const std::vector<ExprId>& index) {
  const ir::Node& node = graph.node(scatter);
  const size_t axis = static_cast<size_t>(node.attrs.axis);
  const int64_t size = node.shape[axis].constant();
  ExprId i = builder.cast(lowering.value(node.inputs[1], {index[axis]}), DType::Int64);
  ExprId wrapped = builder.select(builder.less(i, builder.index_constant(0)),
                                  builder.add(i, builder.index_constant(size)), i);
  std::vector<ExprId> target = index;
  target[axis] = builder.minimum(builder.maximum(wrapped, builder.index_constant(0)),
                                 builder.index_constant(size - 1));
  Stmt store;
  store.kind = StmtKind::Store;
  store.accumulate = node.attrs.scatter_mode == ir::ScatterMode::Add;
  store.buffer = buffer;
  store.index = lowering.offset(buffer, target);
  store.value = lowering.value(node.inputs[2], index);
  return store;
}

}  // namespace kiln::sched
