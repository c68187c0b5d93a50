// The store of one element of a scatter: in a scatter's own kernel (sched/scheduler.cpp), and a
// scatter of one element fused into the kernel before it (sched/kernel_groups.cpp:
// one_element_scatter).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "sched/kernel_builder.h"
#include "sched/loop_ir.h"
#include "sched/lowering.h"

namespace kiln::sched {

// The store into `buffer` of scatter `scatter`'s element at `index` of its values: to the
// position its index names along the axis (negative ones from the end, clamped into the
// buffer), added there for a scatter-add.
Stmt scatter_store(const ir::Graph& graph, ir::ValueId scatter, int32_t buffer,
                   KernelBuilder& builder, Lowering& lowering, const std::vector<ExprId>& index);

}  // namespace kiln::sched
