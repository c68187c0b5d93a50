// Normalisations whose statistics reduce over merged axes (group norm's (C/G, H, W), NumPy's
// x.reshape(n, g, -1).mean(-1)): the index arithmetic folds the reshape's divisions back into
// the flat index, and the statistics and the normalisation share one kernel and one pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "ir/builder.h"
#include "sched/kernel_builder.h"
#include "sched/merge_loops.h"
#include "sched/scheduler.h"

namespace kiln::sched {
namespace {

using ir::Scalar;

// Whether an expression of `kind` is among those `id` is computed from.
bool reaches(const Kernel& kernel, ExprId id, ExprKind kind) {
  return any_subexpr(kernel, id, [&](const Expr& e) { return e.kind == kind; });
}

// A (8, 256, 32, 32) array read as (8, 32, 8192): the channel, row and column of reduction index
// r are divisions of the flat index, and the offset they make is that flat index, undivided.
TEST(IndexArithmetic, DivModPairsOfAReshapeFoldBackIntoTheFlatIndex) {
  Kernel kernel;
  KernelBuilder b(kernel);
  const ExprId n = b.loop_var(b.new_loop(8)), g = b.loop_var(b.new_loop(32));
  const ExprId r = b.loop_var(b.new_loop(8192));
  const ExprId flat = b.add(b.add(b.mul(n, 262144), b.mul(g, 8192)), r);
  const ExprId c = b.mod(b.floordiv(flat, 1024), 256), h = b.mod(b.floordiv(flat, 32), 32);
  const ExprId w = b.mod(flat, 32);
  const ExprId offset = b.add(b.add(b.add(b.mul(n, 262144), b.mul(c, 1024)), b.mul(h, 32)), w);
  EXPECT_EQ(offset, flat);
  EXPECT_FALSE(reaches(kernel, offset, ExprKind::IndexFloorDiv));
  // The same pixels channels-last (strides 1 for c, 8192 for h, 256 for w): one stride of 256.
  const ExprId strided = b.add(b.mul(h, 8192), b.mul(w, 256));
  EXPECT_EQ(strided, b.mul(b.mod(r, 1024), 256));
  // A division keeps only the terms that need it: (g * 8192 + r) // 32 is g * 256 + r // 32.
  EXPECT_EQ(b.floordiv(b.add(b.mul(g, 8192), r), 32), b.add(b.mul(g, 256), b.floordiv(r, 32)));
  // Unequal weights are no pair: 2 * (r // 32) + r % 32 stays as it is.
  const ExprId unpaired = b.add(b.mul(b.floordiv(r, 32), 2), b.mod(r, 32));
  EXPECT_TRUE(reaches(kernel, unpaired, ExprKind::IndexFloorDiv));
  EXPECT_TRUE(reaches(kernel, unpaired, ExprKind::IndexMod));
  // A negative weight keeps the whole division (its parts' ranges would be looser).
  const ExprId negative = b.floordiv(b.add(b.mul(g, -64), r), 32);
  EXPECT_EQ(kernel.exprs[static_cast<size_t>(negative)].kind, ExprKind::IndexFloorDiv);
}

// torch's group norm decomposition: x (N, C, H, W) viewed as (N, G, C/G, H*W), sum and var over
// the last two axes, the per-channel scale and shift broadcast back over (N, C, H, W).
ir::Graph group_norm_graph(int64_t n, int64_t c, int64_t groups, int64_t h, int64_t w) {
  ir::Graph graph;
  ir::Builder b(graph);
  auto scalar = [&](double v, const ir::Shape& shape) {
    return b.broadcast(b.constant(Scalar::of(v), DType::Float32), shape);
  };
  const int64_t per_group = c / groups;
  const ir::Shape stats = {n, groups, 1, 1}, channels = {n, groups, per_group, 1};
  ir::ValueId weight = b.parameter(DType::Float32, {c});
  ir::ValueId bias = b.parameter(DType::Float32, {c});
  ir::ValueId x = b.parameter(DType::Float32, {n, c, h, w});
  ir::ValueId grouped = b.reshape(x, {n, groups, per_group, h * w});
  ir::ValueId var = b.reduce(Op::var, grouped, {2, 3}, true);
  ir::ValueId mean = b.binary(Op::mul, b.reduce(Op::sum, grouped, {2, 3}, true),
                              scalar(1.0 / static_cast<double>(per_group * h * w), stats));
  ir::ValueId rstd = b.unary(Op::rsqrt, b.binary(Op::add, var, scalar(1e-5, stats)));
  ir::ValueId scale = b.binary(Op::mul, b.broadcast(rstd, channels),
                               b.broadcast(b.reshape(weight, {1, groups, per_group, 1}), channels));
  ir::ValueId shift = b.binary(
      Op::add, b.binary(Op::mul, b.broadcast(b.unary(Op::neg, mean), channels), scale),
      b.broadcast(b.reshape(bias, {1, groups, per_group, 1}), channels));
  auto per_pixel = [&](ir::ValueId v) {
    return b.broadcast(b.reshape(v, {n, c, 1, 1}), {n, c, h, w});
  };
  graph.set_outputs({b.binary(Op::add, b.binary(Op::mul, x, per_pixel(scale)), per_pixel(shift))});
  return graph;
}

// The statistics of each group sit in the kernel that normalises it, both in one pass over the
// group's elements, read at the flat index: no division in the reduction, whose innermost loop
// steps through memory one element at a time.
TEST(Scheduler, GroupNormIsOneKernelWithOneUndividedPassOverEachGroup) {
  ir::Graph graph = group_norm_graph(2, 16, 4, 8, 8);
  std::vector<std::string> notes;
  Program program = schedule(graph, {}, &notes);
  std::string all;
  for (const std::string& note : notes) all += note + "\n";
  ASSERT_EQ(program.kernels.size(), 1u) << print_program(program) << all;
  const Kernel& kernel = program.kernels[0];
  std::vector<const Stmt*> reduces;
  std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Reduce) reduces.push_back(&s);
      walk(s.body);
    }
  };
  walk(kernel.body);
  ASSERT_EQ(reduces.size(), 1u) << print_program(program);
  const Stmt& reduce = *reduces[0];
  EXPECT_EQ(reduce.accumulations.size(), 2u);  // sum and var
  for (const Accumulation& a : reduce.accumulations) {
    EXPECT_FALSE(reaches(kernel, a.value, ExprKind::IndexFloorDiv)) << print_program(program);
    EXPECT_FALSE(reaches(kernel, a.value, ExprKind::IndexMod)) << print_program(program);
  }
  const Expr& load = kernel.exprs[static_cast<size_t>(reduce.accumulations[0].value)];
  ASSERT_EQ(load.kind, ExprKind::Load);
  Kernel copy = kernel;
  KernelBuilder builder(copy);
  EXPECT_EQ(builder.coefficient(load.operands[0], reduce.reduce_loops.back().variable), 1);
}

// Instance norm's statistics over (H, W) of contiguous data: one reduction loop of H * W on the
// CPU, long enough for the SIMD lane split (each row of 12 refilled the lanes); a pooling
// window's loops, whose weights differ, keep theirs.
TEST(LoopPasses, ContiguousReductionLoopsMergeIntoOne) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {2, 8, 12, 12});
  ir::ValueId stats = b.reduce(Op::var, x, {2, 3}, true);
  ir::ValueId window = b.reduce(Op::max, b.slice(x, {0, 0, 0, 0}, {2, 8, 12, 6}, {1, 1, 1, 1}),
                                {2, 3}, false);
  graph.set_outputs({b.binary(Op::sub, x, b.broadcast(stats, {2, 8, 12, 12})), window});
  Program program = schedule(graph, {});
  std::vector<size_t> loops_before, loops_after;
  auto count_loops = [](const Kernel& kernel, std::vector<size_t>& counts) {
    std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& body) {
      for (const Stmt& s : body) {
        if (s.kind == StmtKind::Reduce) counts.push_back(s.reduce_loops.size());
        walk(s.body);
      }
    };
    walk(kernel.body);
  };
  target::Target target;
  for (Kernel& kernel : program.kernels) {
    count_loops(kernel, loops_before);
    merge_reduction_loops(kernel, target);
    count_loops(kernel, loops_after);
  }
  std::sort(loops_after.begin(), loops_after.end());
  ASSERT_EQ(loops_before, (std::vector<size_t>{2, 2})) << print_program(program);
  EXPECT_EQ(loops_after, (std::vector<size_t>{1, 2})) << print_program(program);
}

}  // namespace
}  // namespace kiln::sched
