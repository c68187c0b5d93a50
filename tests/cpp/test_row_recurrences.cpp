// sched/in_place.h: out[i] = 0.9 * out[i - 1] + x[i] on an array updated in place. The values
// read the base in their own column of another row (a gather at one position along the
// scatter's axis): no other element writes what an element reads, so they are computed as the
// scatter writes, one kernel, not into a buffer first. Structure on the schedule, and compiled
// results against the interpreter for rows apart, the same row and wrapped or clamped rows.
#include "compile_test_util.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;

// base[to] = 0.9 * base[from] + x[to], base a running sum of x (its own kernel, updated in
// place). `from` of shape (1,), or 0-d as NumPy's out[i - 1] traces: a row, then reshaped.
ValueId recurrence_step(ir::Builder& b, ValueId x, ValueId from, ValueId to) {
  const ir::Shape shape = b.node(x).shape;
  const ir::Shape row_shape{ir::Dim(1), shape[1]};
  ValueId base = b.scan(Op::cumsum, x, 1);
  ValueId previous = b.gather(base, from, 0);
  if (b.node(from).shape.empty()) {
    const ir::Shape row{shape[1]};
    previous = b.binary(Op::mul, previous, b.constant(Scalar::of(0.9), DType::Float64, row));
    previous = b.reshape(previous, row_shape);
  } else {
    previous = b.binary(Op::mul, previous, b.constant(Scalar::of(0.9), DType::Float64, row_shape));
  }
  return b.scatter(base, to, b.binary(Op::add, previous, b.gather(x, to, 0)), 0,
                   ir::ScatterMode::Set);
}

TEST(RowRecurrences, ARowFromAnotherRowIsComputedAsTheScatterWrites) {
  for (bool zero_d : {false, true}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId x = b.parameter(DType::Float64, {40, 70});
    ValueId from = b.parameter(DType::Int64, zero_d ? ir::Shape{} : ir::Shape{ir::Dim(1)});
    ValueId to = b.parameter(DType::Int64, {1});
    graph.set_outputs({recurrence_step(b, x, from, to)});
    sched::Program program = sched::schedule(graph, {});
    // the running sum into the output's buffer, then the row stored over it: no buffer between
    ASSERT_EQ(program.kernels.size(), 2u) << sched::print_program(program);
    EXPECT_EQ(program.kernels[1].buffers_read.size(), 4u) << sched::print_program(program);
  }
}

TEST(RowRecurrences, StepsMatchTheInterpreterForAnyTwoRows) {
  const std::vector<double> values = pseudo_random(40 * 70, -1, 1, 12);
  for (auto [from, to] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 1}, {38, 39}, {5, 5}, {-1, 0}, {39, -40}, {41, 3}, {3, 41}}) {
    GraphCase g;
    ValueId x = g.input(make_array(DType::Float64, {40, 70}, values));
    ValueId row_from = g.input(make_array(DType::Int64, from % 2 ? std::vector<int64_t>{}
                                                                  : std::vector<int64_t>{1},
                                          {static_cast<double>(from)}));
    ValueId row_to = g.input(make_array(DType::Int64, {1}, {static_cast<double>(to)}));
    g.output(recurrence_step(g.builder, x, row_from, row_to), "out[to] = 0.9 * out[from] + x[to]");
    g.check();
  }
}

}  // namespace
}  // namespace kiln::test
