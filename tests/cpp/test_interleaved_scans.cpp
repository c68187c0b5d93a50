// Scans of independent columns side by side (sched/cpu/interleave_scans.h): the pass's blocks
// and lanes on hand-built graphs, and every scan op, dtype and axis (with a last block of fewer
// lanes) compiled against the interpreter.
#include <gtest/gtest.h>

#include "compile_test_util.h"
#include "sched/cpu/interleave_scans.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::ValueId;

// The one scan kernel of cumsum(x, axis); whether interleave_scans changed it.
bool interleave(sched::Program& program, const std::vector<int64_t>& shape, int64_t axis) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float32, ir::from_ints(shape));
  graph.set_outputs({b.scan(Op::cumsum, x, axis)});
  program = sched::schedule(graph, {});
  EXPECT_EQ(program.kernels.size(), 1u);
  return sched::cpu::interleave_scans(program.kernels.back(), target::Target{});
}

// The loop whose body is the scan.
const sched::Stmt& innermost_loop(const sched::Program& program) {
  const sched::Stmt* loop = &program.kernels.back().body[0];
  while (loop->body[0].kind == sched::StmtKind::Loop) loop = &loop->body[0];
  return *loop;
}

TEST(InterleavedScans, ColumnsOfAScanDownTheFirstAxisAreLanes) {
  sched::Program program;
  ASSERT_TRUE(interleave(program, {33, 301}, 0));
  const sched::Stmt& block = innermost_loop(program);
  ASSERT_EQ(block.body.size(), 1u);
  const sched::Stmt& scan = block.body[0];
  EXPECT_EQ(scan.kind, sched::StmtKind::Scan);
  EXPECT_EQ(block.loop.extent, 3);  // 301 columns: blocks of 101, 101 and 99 lanes
  EXPECT_EQ(scan.lanes_loop.extent, 101);
  EXPECT_GE(scan.lanes_loop.end, 0);
  EXPECT_EQ(scan.reduce_loops[0].extent, 33);
}

TEST(InterleavedScans, AMiddleAxisScanHasTheLastAxisAsLanes) {
  sched::Program program;
  ASSERT_TRUE(interleave(program, {4, 16, 256}, 1));
  const sched::Stmt& block = innermost_loop(program);
  EXPECT_EQ(block.loop.extent, 2);
  EXPECT_EQ(block.body[0].lanes_loop.extent, 128);
  EXPECT_LT(block.body[0].lanes_loop.end, 0);  // two whole blocks
  EXPECT_EQ(block.body[0].reduce_loops[0].extent, 16);
}

// As lanes, rows 1024 floats apart would share L1 sets and evict each other.
TEST(InterleavedScans, ScansAlongRowsKeepTheirForm) {
  sched::Program program;
  EXPECT_FALSE(interleave(program, {64, 1024}, 1));
}

TEST(InterleavedScans, AWholeArrayScanHasNoColumnsToInterleave) {
  sched::Program program;
  EXPECT_FALSE(interleave(program, {100}, 0));
}

TEST(InterleavedScansCompiled, EveryOpDtypeAndAxisMatchesTheInterpreter) {
  GraphCase g;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Float16}) {
    const bool half = dtype == DType::Float16;
    ValueId x = g.input(make_array(dtype, {37, 301}, pseudo_random(37 * 301, -1.2, 1.2, 5)));
    ValueId y = g.input(make_array(dtype, {3, 19, 130}, pseudo_random(3 * 19 * 130, -3, 3, 6)));
    for (Op op : {Op::cumsum, Op::cumprod, Op::cummax, Op::cummin}) {
      if (half && op == Op::cumprod) continue;  // float16 products of 300 factors: denormal noise
      // float32 running sums that cancel near zero: each element is a sum of up to 301 terms,
      // rounded in float (the interpreter's running value is a double)
      Tolerance tolerance = default_tolerance(dtype);
      if (dtype == DType::Float32) tolerance.absolute = 1e-4;
      for (int64_t axis : {0, 1}) g.output(g.builder.scan(op, x, axis), "2-d", tolerance);
      for (int64_t axis : {0, 1, 2}) g.output(g.builder.scan(op, y, axis), "3-d", tolerance);
    }
  }
  CompiledRun run = g.check();
  EXPECT_NE(run.compiled->source_text().find("#pragma omp simd"), std::string::npos);
}

}  // namespace
}  // namespace kiln::test
