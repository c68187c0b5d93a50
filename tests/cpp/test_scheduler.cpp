// The scheduler and the CPU loop passes on hand-built graphs and loop IR, without compiling:
// which nodes become kernels, which share one, what the passes mark, and why fusion is refused.
#include <gtest/gtest.h>

#include <functional>

#include "ir/builder.h"
#include "sched/cpu/block_scatter_adds.h"
#include "sched/cpu/hoist_invariants.h"
#include "sched/cpu/interchange_reductions.h"
#include "sched/cpu/mark_parallel.h"
#include "sched/cpu/mark_vector_loops.h"
#include "sched/cpu/parallel_scatter_adds.h"
#include "sched/cpu/peel_clamps.h"
#include "sched/kernel_builder.h"
#include "sched/scheduler.h"
#include "target/target.h"

namespace kiln::sched {
namespace {

using ir::Scalar;

target::Target cpu(int threads) {
  target::Target target;
  target.threads = threads;
  return target;
}

TEST(Scheduler, PointwiseChainIsOneKernelAndSiblingReductionsShareIt) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {64, 32});
  ir::ValueId y = b.unary(Op::exp, b.binary(Op::mul, x, x));
  ir::ValueId total = b.reduce(Op::sum, y, {1}, false);
  ir::ValueId largest = b.reduce(Op::max, y, {1}, false);
  graph.set_outputs({total, largest});
  std::vector<std::string> notes;
  Program program = schedule(graph, {}, &notes);
  ASSERT_EQ(program.kernels.size(), 1u);  // exp(x*x) inlined, both reductions in one pass
  EXPECT_EQ(program.steps.size(), 1u);
  EXPECT_TRUE(notes.empty());
  int stores = 0;
  for (const Stmt& s : program.kernels[0].body[0].body) stores += s.kind == StmtKind::Store;
  EXPECT_EQ(stores, 2);
  EXPECT_EQ(program.arena_bytes, 0);  // nothing intermediate is materialized
}

// A channels-last pooling window permuted back to channels-first (a training graph's saved
// activation): the kernel loops in the window's own order, so its loads are contiguous.
TEST(Scheduler, PermutedWorkLoopsInTheOrderOfWhatItPermutes) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {2, 6, 6, 8});  // (N, H, W, C)
  ir::ValueId pooled = b.binary(Op::maximum, b.slice(x, {0, 0, 0, 0}, {2, 6, 6, 8}, {1, 2, 2, 1}),
                                b.slice(x, {0, 1, 1, 0}, {2, 6, 6, 8}, {1, 2, 2, 1}));
  ir::ValueId copied = b.parameter(DType::Float32, {2, 3, 3, 8});
  graph.set_outputs({b.permute(pooled, {0, 3, 1, 2})});
  Program program = schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_EQ(program.kernels[0].loop_extents, (std::vector<int64_t>{2, 3, 3, 8}));
  // A plain transpose of a buffer keeps the order of its contiguous stores.
  graph.set_outputs({b.permute(copied, {0, 3, 1, 2})});
  program = schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_EQ(program.kernels[0].loop_extents, (std::vector<int64_t>{2, 8, 3, 3}));
}

// BERT's attention heads merged back, (8, 12, 128, 64) -> (8, 128, 12, 64) -> (1024, 768): the
// kernel loops over the finer nest, so reading the heads needs no division.
TEST(Scheduler, AReshapeThatSplitsALoopLoopsOverTheFinerNest) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId heads = b.parameter(DType::Float32, {8, 12, 128, 64});
  ir::ValueId merged = b.reshape(b.permute(heads, {0, 2, 1, 3}), {1024, 768});
  graph.set_outputs({b.unary(Op::exp, merged)});
  Program program = schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_EQ(program.kernels[0].loop_extents, (std::vector<int64_t>{8, 128, 12, 64}));
  for (const Expr& e : program.kernels[0].exprs) {
    EXPECT_NE(e.kind, ExprKind::IndexFloorDiv);
    EXPECT_NE(e.kind, ExprKind::IndexMod);
  }
}

// Training batch norm over channels-last data: the statistics, the (1, C, 1, 1) mean a backward
// reads, the running mean, a small gradient-like root that comes after the normalisation and
// the running counts' increments all join the kernels of their domain: one kernel of the
// reductions, one normalising, one of the two counts.
TEST(Scheduler, SmallRootsJoinTheKernelOfTheirElementsWhereverTheyComeFrom) {
  ir::Graph graph;
  ir::Builder b(graph);
  auto scalar = [&](double v) { return b.constant(Scalar::of(v), DType::Float32); };
  ir::ValueId count = b.parameter(DType::Int64, {});
  ir::ValueId counted = b.binary(Op::add, count, b.constant(Scalar::of(int64_t{1}), DType::Int64));
  ir::ValueId x = b.parameter(DType::Float32, {4, 8, 8, 16});
  ir::ValueId running = b.parameter(DType::Float32, {16});
  ir::ValueId mean = b.binary(Op::mul, b.reduce(Op::sum, x, {0, 1, 2}, false),
                              b.broadcast(scalar(1.0 / 256), {16}));
  ir::ValueId var = b.reduce(Op::var, x, {0, 1, 2}, false);
  ir::ValueId saved_mean = b.reshape(mean, {1, 16, 1, 1});
  ir::ValueId updated = b.binary(Op::add, b.binary(Op::mul, running, b.broadcast(scalar(0.9), {16})),
                                 b.binary(Op::mul, mean, b.broadcast(scalar(0.1), {16})));
  ir::ValueId centred = b.binary(Op::sub, x, b.broadcast(mean, {4, 8, 8, 16}));
  ir::ValueId normalized = b.binary(Op::mul, centred, b.broadcast(var, {4, 8, 8, 16}));
  ir::ValueId scaled = b.binary(Op::mul, var, running);
  ir::ValueId count2 = b.parameter(DType::Int64, {});
  ir::ValueId counted2 = b.binary(Op::add, count2, b.constant(Scalar::of(int64_t{1}), DType::Int64));
  graph.set_outputs({counted, saved_mean, updated, normalized, scaled, counted2});
  std::vector<std::string> notes;
  Program program = schedule(graph, {}, &notes);
  std::string all;
  for (const std::string& note : notes) all += note + "\n";
  ASSERT_EQ(program.kernels.size(), 3u) << all;
  EXPECT_EQ(program.kernels[0].buffers_written.size(), 2u);  // the two counts
  EXPECT_EQ(program.kernels[2].buffers_written.size(), 1u);  // the normalised values
}

// Softmax as exp(x - logsumexp(x)) over rows (BERT's attention after torch's decomposition):
// the row's max and sum sit in the kernel that writes the row, however long the chain after
// them. The same chain over the whole array (0-d) gets a kernel of its own.
TEST(Scheduler, ARowReductionBroadcastBackOverItsRowsStaysInItsKernel) {
  for (bool rows : {true, false}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {24, 16, 16});
    const std::vector<int64_t> axes = rows ? std::vector<int64_t>{2} : std::vector<int64_t>{0, 1, 2};
    ir::ValueId largest = b.reduce(Op::max, x, axes, true);
    ir::ValueId shifted = b.binary(Op::sub, x, b.broadcast(largest, {24, 16, 16}));
    ir::ValueId total = b.reduce(Op::sum, b.unary(Op::exp, shifted), axes, true);
    ir::ValueId lse = b.binary(Op::add, b.unary(Op::log, total), largest);
    graph.set_outputs({b.unary(Op::exp, b.binary(Op::sub, x, b.broadcast(lse, {24, 16, 16})))});
    std::vector<std::string> notes;
    Program program = schedule(graph, {}, &notes);
    if (rows)
      EXPECT_EQ(program.kernels.size(), 1u);
    else
      EXPECT_GE(program.kernels.size(), 2u);
  }
}

TEST(Scheduler, ExternScanAndScatterGetTheirOwnStepsWithReasons) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId a = b.parameter(DType::Float32, {16, 8});
  ir::ValueId w = b.parameter(DType::Float32, {8, 4});
  ir::ValueId product = b.matmul(a, w);
  ir::ValueId scanned = b.scan(Op::cumsum, b.unary(Op::tanh, product), 0);
  ir::ValueId index = b.parameter(DType::Int64, {3});
  ir::ValueId values = b.parameter(DType::Float32, {3, 4});
  ir::ValueId scattered = b.scatter(scanned, index, values, 0, ir::ScatterMode::Add);
  graph.set_outputs({scattered});
  std::vector<std::string> notes;
  Program program = schedule(graph, {}, &notes);
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_EQ(program.steps[0].kind, StepKind::Extern);  // matmul: a library call on whole buffers
  EXPECT_EQ(program.steps[0].call.op, Op::matmul);
  // The scan's buffer is dead after the scatter: the scan writes the output buffer and the
  // scatter adds its updates there in place (no copy), in order.
  const Kernel& scatter = program.kernels.back();
  EXPECT_EQ(scatter.ordered_from, 0);
  const Kernel& scan = program.kernels[program.kernels.size() - 2];
  EXPECT_EQ(scan.buffers_written, std::vector<int32_t>{program.output_buffers[0]});
  EXPECT_EQ(scatter.buffers_written, std::vector<int32_t>{program.output_buffers[0]});
}

TEST(Scheduler, ScatterIntoALiveArrayCopiesIt) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {16});
  ir::ValueId doubled = b.binary(Op::add, x, x);
  ir::ValueId scanned = b.scan(Op::cumsum, doubled, 0);
  ir::ValueId index = b.parameter(DType::Int64, {3});
  ir::ValueId values = b.parameter(DType::Float32, {3});
  ir::ValueId scattered = b.scatter(scanned, index, values, 0, ir::ScatterMode::Set);
  // `scanned` is read after the scatter: it keeps its own buffer, the scatter copies it first.
  graph.set_outputs({scattered, b.binary(Op::mul, scanned, scanned)});
  Program program = schedule(graph, {});
  const Kernel& scatter = program.kernels[1];
  EXPECT_GE(scatter.ordered_from, 1);
}

// x[start::step] = values traces as a scatter at step * iota + start: no index repeats, so the
// updates run in any order (on many GPU threads), not in order on one.
TEST(Scheduler, ScattersAtDistinctSliceIndicesRunInAnyOrder) {
  auto ordered_from = [](int64_t step, int64_t start, bool user_index) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {100});
    ir::ValueId index = user_index ? b.parameter(DType::Int64, {40}) : b.binary(
        Op::add, b.binary(Op::mul, b.iota(DType::Int64, {40}, 0),
                          b.constant(Scalar::of_int(step), DType::Int64, {40})),
        b.constant(Scalar::of_int(start), DType::Int64, {40}));
    ir::ValueId values = b.parameter(DType::Float32, {40});
    graph.set_outputs({b.scatter(b.binary(Op::add, x, x), index, values, 0,
                                 ir::ScatterMode::Set)});
    return schedule(graph, {}).kernels.back().ordered_from;
  };
  EXPECT_EQ(ordered_from(1, 1, false), -1);    // x[1:41]
  EXPECT_EQ(ordered_from(2, 3, false), -1);    // x[3:83:2]
  EXPECT_EQ(ordered_from(-2, 99, false), -1);  // x[99:19:-2]
  EXPECT_EQ(ordered_from(1, -40, false), -1);  // x[-40:], negative indices all
  EXPECT_GE(ordered_from(1, 0, true), 0);      // indices the user gives may repeat
  EXPECT_GE(ordered_from(0, 5, false), 0);     // one index, forty times
  EXPECT_GE(ordered_from(1, -3, false), 0);    // -3..36: -3 wraps to 97, past the check
  EXPECT_GE(ordered_from(3, 0, false), 0);     // 0..117: clamped, so repeated
}

// out[i] = row (one index, whatever it is at run time: a loop's row store) repeats no
// position, set or added: its row's stores run in any order (on a block's threads), where in
// order a device loop stored row_recurrence's 256 elements on one thread (6 us an iteration).
TEST(Scheduler, ARowStoredAtOneIndexRunsInAnyOrder) {
  for (ir::ScatterMode mode : {ir::ScatterMode::Set, ir::ScatterMode::Add}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {100, 8});
    ir::ValueId index = b.parameter(DType::Int64, {1});
    ir::ValueId row = b.parameter(DType::Float32, {1, 8});
    graph.set_outputs({b.scatter(b.binary(Op::add, x, x), index, row, 0, mode)});
    EXPECT_EQ(schedule(graph, {}).kernels.back().ordered_from, -1);
  }
}

// x[10:50] = v into a copy of x: the copy takes only what the slice leaves, so each element
// moves once (a heat equation's step copied everything, then wrote the slice over it).
TEST(Scheduler, SliceAssignmentsCopyOnlyWhatTheSliceLeaves) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {100, 3});
  ir::ValueId at = b.binary(Op::add, b.iota(DType::Int64, {40}, 0),
                            b.constant(Scalar::of_int(10), DType::Int64, {40}));
  ir::ValueId values = b.parameter(DType::Float32, {40, 3});
  graph.set_outputs({b.scatter(b.binary(Op::mul, x, x), at, values, 0, ir::ScatterMode::Set)});
  const Kernel& kernel = schedule(graph, {}).kernels.back();
  ASSERT_EQ(kernel.body.size(), 3u);
  EXPECT_EQ(kernel.body[0].loop.extent, 10);  // rows 0..9
  EXPECT_EQ(kernel.body[1].loop.extent, 50);  // rows 50..99
  EXPECT_EQ(kernel.body[2].loop.extent, 40);  // the slice
  EXPECT_EQ(kernel.ordered_from, -1);
}

// A pre-norm transformer's residual stream: h = h + layer output, layer after layer, each h also
// read by that layer's norm (a row reduction). Inlined, the last norm's kernel read every earlier
// layer's output again (GPT-2's 24 on the GPU, its kernels' time growing with the depth); a
// shared value that reads more than four buffers of its size gets one of its own.
TEST(Scheduler, AResidualStreamIsNotRecomputedFromEveryLayer) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId h = b.parameter(DType::Float32, {64, 128});
  std::vector<ir::ValueId> outputs;
  for (int layer = 0; layer < 12; ++layer) {
    h = b.binary(Op::add, h, b.parameter(DType::Float32, {64, 128}));
    ir::ValueId mean = b.reduce(Op::sum, h, {1}, true);
    outputs.push_back(b.binary(Op::sub, h, b.broadcast(mean, {64, 128})));
  }
  graph.set_outputs(outputs);
  Program program = schedule(graph, {});
  size_t most_reads = 0;
  for (const Kernel& kernel : program.kernels) most_reads = std::max(most_reads, kernel.buffers_read.size());
  EXPECT_LE(most_reads, 5u) << program.kernels.size() << " kernels";
}

// How many accumulations of `op` the program's kernels compute.
size_t accumulations_of(const Program& program, Op op) {
  size_t count = 0;
  std::function<void(const std::vector<Stmt>&)> visit = [&](const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      for (const Accumulation& a : s.accumulations) count += a.op == op ? 1 : 0;
      visit(s.body);
    }
  };
  for (const Kernel& kernel : program.kernels) visit(kernel.body);
  return count;
}

// A row value computed from a reduction and read by several row values (attention's max, read
// by isfinite and by the where that makes a fully masked row's shift 0; a masked softmax's
// exp(-inf - max), read by the row sum and by the division) is computed once a row in the
// kernel that reads it: it had a buffer of its own, a kernel computing the max, and the next
// kernel computed the max again.
TEST(Scheduler, RowValuesOfAReductionStayInTheirRowsKernel) {
  const ir::Shape rows = {2, 3, 64, 1}, scores_shape = {2, 3, 64, 64};
  {  // attention as flash attention divides: exp(S - shift) stored for the product with V
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId scores = b.parameter(DType::Float32, scores_shape);
    ir::ValueId v = b.parameter(DType::Float32, {2, 3, 64, 16});
    ir::ValueId zero = b.constant(Scalar::of(0.0), DType::Float32);
    ir::ValueId row_max = b.reduce(Op::max, scores, {3}, true);
    ir::ValueId shift = b.where(b.unary(Op::isfinite, row_max), row_max, b.broadcast(zero, rows));
    ir::ValueId weights = b.unary(Op::exp, b.binary(Op::sub, scores, b.broadcast(shift, scores_shape)));
    ir::ValueId total = b.reduce(Op::sum, weights, {3}, true);
    ir::ValueId product = b.matmul(weights, v);
    graph.set_outputs({b.binary(Op::div, product, b.broadcast(total, {2, 3, 64, 16}))});
    Program program = schedule(graph, {});
    EXPECT_EQ(accumulations_of(program, Op::max), 1u) << print_program(program);
    EXPECT_EQ(program.kernels.size(), 2u) << print_program(program);
  }
  {  // a masked softmax, exp moved into where's branches: exp(-inf - max) a row value
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId scores = b.parameter(DType::Float32, scores_shape);
    ir::ValueId mask = b.parameter(DType::Bool, scores_shape);
    ir::ValueId masked_out = b.broadcast(b.constant(Scalar::of(-1e30), DType::Float32), rows);
    ir::ValueId row_max = b.reduce(Op::max, b.where(mask, scores, b.broadcast(masked_out, scores_shape)), {3}, true);
    ir::ValueId kept = b.unary(Op::exp, b.binary(Op::sub, scores, b.broadcast(row_max, scores_shape)));
    ir::ValueId dropped = b.unary(Op::exp, b.binary(Op::sub, masked_out, row_max));
    ir::ValueId total = b.reduce(Op::sum, b.where(mask, kept, b.broadcast(dropped, scores_shape)), {3}, true);
    ir::ValueId kept_share = b.binary(Op::div, kept, b.broadcast(total, scores_shape));
    ir::ValueId dropped_share = b.broadcast(b.binary(Op::div, dropped, total), scores_shape);
    graph.set_outputs({b.where(mask, kept_share, dropped_share)});
    Program program = schedule(graph, {});
    EXPECT_EQ(accumulations_of(program, Op::max), 1u) << print_program(program);
    EXPECT_EQ(program.kernels.size(), 1u) << print_program(program);
  }
}

// An extern call's operand that views a computed value in an order strides cannot express
// (attention's heads, normalised per row, permuted back into a projection's rows) is computed
// in that order by one kernel: it was stored in the heads' order, then copied by a second.
TEST(Scheduler, AnOperandStridesCannotViewIsComputedInItsOwnOrder) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId weights = b.parameter(DType::Float32, {12, 128, 128});
  ir::ValueId product = b.parameter(DType::Float32, {12, 128, 64});
  ir::ValueId projection = b.parameter(DType::Float32, {768, 768});
  ir::ValueId total = b.reduce(Op::sum, weights, {2}, true);
  ir::ValueId heads = b.binary(Op::div, product, b.broadcast(total, {12, 128, 64}));
  ir::ValueId rows = b.reshape(b.permute(heads, {1, 0, 2}), {128, 768});
  graph.set_outputs({b.matmul(rows, projection)});
  Program program = schedule(graph, {});
  EXPECT_EQ(program.kernels.size(), 1u) << print_program(program);
}

TEST(Scheduler, FusionNotesSayWhy) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {8});
  ir::ValueId doubled = b.binary(Op::add, x, x);
  ir::ValueId running = b.scan(Op::cumsum, x, 0);
  ir::ValueId reads_running = b.binary(Op::mul, running, running);
  graph.set_outputs({doubled, running, reads_running});
  std::vector<std::string> notes;
  schedule(graph, {}, &notes);
  std::string all;
  for (const std::string& note : notes) all += note + "\n";
  EXPECT_NE(all.find("cumsum is a scan, in its own kernel"), std::string::npos) << all;
}

// A hand-built kernel: for i < outer: for j < inner: out[i * inner + j] = in[...] * 2.
Kernel copy_kernel(int64_t outer, int64_t inner) {
  Kernel kernel;
  KernelBuilder builder(kernel);
  int32_t i = builder.new_loop(outer), j = builder.new_loop(inner);
  ExprId offset = builder.add(builder.mul(builder.loop_var(i), inner), builder.loop_var(j));
  Stmt store;
  store.kind = StmtKind::Store;
  store.buffer = 1;
  store.index = offset;
  store.value = builder.elementwise(
      Op::mul, DType::Float32,
      {builder.load(0, DType::Float32, offset), builder.constant(Scalar::of(2.0), DType::Float32)});
  Stmt inner_loop;
  inner_loop.kind = StmtKind::Loop;
  inner_loop.loop = {j, inner};
  inner_loop.body.push_back(store);
  Stmt outer_loop;
  outer_loop.kind = StmtKind::Loop;
  outer_loop.loop = {i, outer};
  outer_loop.body.push_back(inner_loop);
  kernel.body.push_back(outer_loop);
  return kernel;
}

TEST(LoopPasses, MarkParallelNeedsThreadsAndWork) {
  Kernel big = copy_kernel(1024, 1024);
  EXPECT_FALSE(cpu::mark_parallel(big, cpu(1)));  // one thread: no OpenMP region at all
  EXPECT_FALSE(big.body[0].parallel);
  EXPECT_TRUE(cpu::mark_parallel(big, cpu(2)));
  EXPECT_TRUE(big.body[0].parallel);
  EXPECT_FALSE(big.body[0].body[0].parallel);  // only the outermost loop
  Kernel small = copy_kernel(8, 16);
  EXPECT_FALSE(cpu::mark_parallel(small, cpu(2)));  // below the threshold: serial
  Kernel ordered = copy_kernel(1024, 1024);
  ordered.ordered_from = 0;  // a scatter's updates
  EXPECT_FALSE(cpu::mark_parallel(ordered, cpu(2)));
}

// Work is weighed by what an element computes (op_list.h's Cost column): a tanh over 500 x 256
// elements, under the threshold's 2^17 as a count, runs on the threads; as many products or
// divisions count one operation each, as before, and stay on one thread.
TEST(LoopPasses, CostlyElementsReachTheParallelThresholdSooner) {
  auto kernel_of = [](Op op) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId x = b.parameter(DType::Float32, {500, 256});
    graph.set_outputs({op == Op::tanh ? b.unary(op, x) : b.binary(op, x, x)});
    return schedule(graph, {}).kernels.at(0);
  };
  Kernel costly = kernel_of(Op::tanh), cheap = kernel_of(Op::mul), quotient = kernel_of(Op::div);
  ASSERT_LT(500 * 256, cpu(2).parallel_threshold);
  EXPECT_EQ(cpu::statement_work(cheap, cheap.body.at(0)), 500 * 256);
  EXPECT_EQ(cpu::statement_work(costly, costly.body.at(0)), 500 * 256 * (1 + cpu::kCallWork));
  EXPECT_TRUE(cpu::mark_parallel(costly, cpu(2)));
  EXPECT_FALSE(cpu::mark_parallel(cheap, cpu(2)));
  EXPECT_FALSE(cpu::mark_parallel(quotient, cpu(2)));
}

// A scatter's one kernel through the CPU passes that mark it (parallel, its adds, SIMD).
Program scatter_marked(const ir::Graph& graph) {
  Program program = schedule(graph, {});
  for (Kernel& kernel : program.kernels) cpu::mark_parallel(kernel, cpu(2));
  cpu::parallel_scatter_adds(program, cpu(2));
  for (Kernel& kernel : program.kernels) cpu::mark_vector_loops(kernel, cpu(2));
  return program;
}

// A scatter's loop is never SIMD (two lanes may store into one element); a big scatter-add's
// runs on the threads (its adds atomic), a scatter that sets stays on one thread.
TEST(LoopPasses, ScattersAreNeverSimdAndBigScatterAddsAreParallel) {
  for (ir::ScatterMode mode : {ir::ScatterMode::Add, ir::ScatterMode::Set}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId base = b.parameter(DType::Float32, {1000});
    ir::ValueId index = b.parameter(DType::Int64, {1 << 18});
    ir::ValueId values = b.parameter(DType::Float32, {1 << 18});
    graph.set_outputs({b.scatter(base, index, values, 0, mode)});
    Program program = scatter_marked(graph);
    ASSERT_EQ(program.kernels.size(), 1u);
    Kernel& kernel = program.kernels[0];
    ASSERT_GE(kernel.ordered_from, 0);
    const Stmt& scatter = kernel.body[static_cast<size_t>(kernel.ordered_from)];
    EXPECT_FALSE(scatter.vectorize);
    EXPECT_EQ(scatter.parallel, mode == ir::ScatterMode::Add);
    EXPECT_TRUE(kernel.body[0].vectorize);  // the copy of the base before it
  }
}

// A scatter-add's loop computes its indices and values a block at a time in a SIMD loop, then
// adds them in order; the iterations after the last whole block run as before. A scatter that
// sets keeps its one loop.
TEST(LoopPasses, ScatterAddsComputeTheirIndicesInSimdBlocks) {
  const int64_t n = (1 << 18) + 100;  // parallel, with iterations after the last block
  for (ir::ScatterMode mode : {ir::ScatterMode::Add, ir::ScatterMode::Set}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId base = b.parameter(DType::Int64, {64});
    ir::ValueId x = b.parameter(DType::Float64, {n});
    ir::ValueId scaled = b.binary(Op::mul, x, b.constant(Scalar::of(8.0), DType::Float64));
    ir::ValueId index = b.cast(b.unary(Op::floor, scaled), DType::Int64);
    ir::ValueId values = b.parameter(DType::Int64, {n});
    graph.set_outputs({b.scatter(base, index, values, 0, mode)});
    Program program = scatter_marked(graph);
    ASSERT_EQ(program.kernels.size(), 1u);
    Kernel& kernel = program.kernels[0];
    ASSERT_GE(kernel.ordered_from, 0);
    const size_t statements = kernel.body.size();
    EXPECT_EQ(cpu::block_scatter_adds(kernel, cpu(2)), mode == ir::ScatterMode::Add);
    if (mode == ir::ScatterMode::Set) {
      EXPECT_EQ(kernel.body.size(), statements);
      continue;
    }
    ASSERT_EQ(kernel.body.size(), statements + 1);
    const Stmt& blocks = kernel.body[static_cast<size_t>(kernel.ordered_from)];
    EXPECT_EQ(blocks.loop.extent, n / cpu::kScatterBlock);
    EXPECT_TRUE(blocks.parallel);
    ASSERT_EQ(blocks.body.size(), 4u);  // two arrays, the SIMD loop that fills them, the adds
    EXPECT_EQ(blocks.body[0].kind, StmtKind::LocalArray);
    EXPECT_EQ(blocks.body[1].kind, StmtKind::LocalArray);
    const Stmt& fill = blocks.body[2];
    EXPECT_TRUE(fill.vectorize);
    ASSERT_EQ(fill.body.size(), 2u);
    EXPECT_TRUE(fill.body[0].to_local_array && fill.body[1].to_local_array);
    const Stmt& adds = blocks.body[3];
    EXPECT_FALSE(adds.vectorize);
    ASSERT_EQ(adds.body.size(), 1u);
    EXPECT_TRUE(adds.body[0].accumulate && !adds.body[0].to_local_array);
    const Stmt& rest = kernel.body.back();
    EXPECT_EQ(rest.loop.extent, n % cpu::kScatterBlock);
    EXPECT_FALSE(rest.parallel);
    EXPECT_FALSE(cpu::block_scatter_adds(kernel, cpu(2)));  // blocked already
  }
}

// exp(z) in out[i, j] = y[i, j] + exp(z[j]) is computed once into a local array before the
// loop over i, unless that loop runs once (an extent-1 dimension: nothing to save).
TEST(LoopPasses, HoistInvariantsSkipsLoopsOfOneIteration) {
  for (int64_t rows : {4, 1}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ir::ValueId y = b.parameter(DType::Float32, {rows, 300});
    ir::ValueId z = b.parameter(DType::Float32, {300});
    graph.set_outputs({b.binary(Op::add, y, b.unary(Op::exp, b.unary(Op::exp, z)))});
    Program program = schedule(graph, {}, nullptr);
    ASSERT_EQ(program.kernels.size(), 1u);
    EXPECT_EQ(cpu::hoist_invariants(program.kernels[0], cpu(1)), rows > 1) << rows << " rows";
  }
}

// A (64, 32, 1, 1) array's innermost loops run once: the SIMD loop is the one over 32.
TEST(LoopPasses, MarkVectorLoopsLooksThroughLoopsOfOneIteration) {
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {64, 32, 1, 1});
  graph.set_outputs({b.unary(Op::exp, x)});
  Program program = schedule(graph, {}, nullptr);
  ASSERT_EQ(program.kernels.size(), 1u);
  Kernel& kernel = program.kernels[0];
  EXPECT_TRUE(cpu::mark_vector_loops(kernel, cpu(1)));
  const Stmt* loop = &kernel.body[0];
  while (loop->kind != StmtKind::Loop || loop->loop.extent != 32) loop = &loop->body[0];
  EXPECT_TRUE(loop->vectorize);
  EXPECT_FALSE(loop->body[0].vectorize);  // the loops of one iteration inside it
}

TEST(LoopPasses, MarkVectorLoopsMarksTheInnermostStoreLoop) {
  Kernel kernel = copy_kernel(4, 256);
  EXPECT_TRUE(cpu::mark_vector_loops(kernel, cpu(2)));
  EXPECT_FALSE(kernel.body[0].vectorize);
  EXPECT_TRUE(kernel.body[0].body[0].vectorize);
  EXPECT_FALSE(cpu::mark_vector_loops(kernel, cpu(2)));  // already marked: unchanged
}

TEST(LoopPasses, ColumnSumsAreInterchangedIntoStrideOneLanes) {
  // out[a] = sum_i x[i, a] over a (4096, 256) array: a strided reduction.
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float32, {4096, 256});
  graph.set_outputs({b.reduce(Op::sum, x, {0}, false)});
  Program program = schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  Kernel& kernel = program.kernels[0];
  EXPECT_TRUE(cpu::interchange_reductions(kernel, cpu(2)));
  const Stmt& block = kernel.body[0];
  ASSERT_EQ(block.kind, StmtKind::Loop);
  ASSERT_FALSE(block.body.empty());
  EXPECT_GE(block.body[0].lanes_loop.variable, 0);  // accumulators over the lanes
  EXPECT_TRUE(cpu::mark_parallel(kernel, cpu(2)));
  EXPECT_TRUE(block.parallel);
  EXPECT_FALSE(block.body[0].parallel);  // the lane reduction itself is never split
}

// Whether an expression of `kind` is among those `id` is computed from.
bool reaches(const Kernel& kernel, ExprId id, ExprKind kind) {
  const Expr& e = kernel.exprs[static_cast<size_t>(id)];
  if (e.kind == kind) return true;
  for (ExprId operand : e.operands)
    if (reaches(kernel, operand, kind)) return true;
  return false;
}

TEST(LoopPasses, PeelClampsSplitsAShiftedReadWhereItsClampBites) {
  // y = pad(x[1:], high 1) + x over 1001 elements (a shrinking loop's v[1:] moved onto v[:-1]):
  // one loop reading x[min(i, 999) + 1], which g++ could only gather.
  ir::Graph graph;
  ir::Builder b(graph);
  ir::ValueId x = b.parameter(DType::Float64, {1001});
  ir::ValueId shifted = b.pad(b.slice(x, {1}, {1001}, {1}), {0}, {1}, ir::PadMode::Constant);
  graph.set_outputs({b.binary(Op::add, shifted, x)});
  Program program = schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  Kernel& kernel = program.kernels[0];
  ASSERT_EQ(kernel.body.size(), 1u);
  ASSERT_TRUE(reaches(kernel, kernel.body[0].body[0].value, ExprKind::IndexMin));
  EXPECT_TRUE(cpu::peel_clamps(kernel, cpu(2)));
  ASSERT_EQ(kernel.body.size(), 2u);
  EXPECT_EQ(kernel.body[0].loop.extent, 1000);  // x[i + 1] + x[i]: no clamp, no select
  EXPECT_EQ(kernel.body[1].loop.extent, 1);     // the padded element
  for (const Stmt& part : kernel.body) {
    EXPECT_FALSE(reaches(kernel, part.body[0].value, ExprKind::IndexMin));
    EXPECT_FALSE(reaches(kernel, part.body[0].value, ExprKind::Select));
  }
  EXPECT_FALSE(cpu::peel_clamps(kernel, cpu(2)));  // nothing left to split
  Kernel plain = copy_kernel(4, 256);
  EXPECT_FALSE(cpu::peel_clamps(plain, cpu(2)));  // no clamp: unchanged
}

}  // namespace
}  // namespace kiln::sched
