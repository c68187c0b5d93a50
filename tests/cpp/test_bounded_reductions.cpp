// Reductions bounded at run time: sched/trim_loops.h (sums guarded by run-time bounds of their
// innermost loop run over those bounds) and sched/guard_reductions.h (a sum selected away is
// not computed). Structural checks on the scheduled kernel (what is trimmed or guarded, what is
// left alone), and compiled results against the interpreter for bounds inside, outside and
// across the loop's extent, with NaN outside the bounds (which the guard must keep out).
#include "compile_test_util.h"
#include "sched/cpu/hoist_invariants.h"
#include "sched/guard_reductions.h"
#include "sched/scheduler.h"
#include "sched/trim_loops.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;

// lo <= i < hi along the last axis of `shape`, from an iota and two int64 0-d values.
ValueId window(ir::Builder& b, const ir::Shape& shape, ValueId lo, ValueId hi) {
  ValueId positions = b.iota(DType::Int64, shape, static_cast<int64_t>(shape.size()) - 1);
  ValueId low = b.broadcast(lo, shape), high = b.broadcast(hi, shape);
  return b.binary(Op::logical_and, b.binary(Op::ge, positions, low),
                  b.binary(Op::lt, positions, high));
}

ValueId masked(ir::Builder& b, ValueId x, ValueId inside) {
  const ir::Node& node = b.node(x);
  return b.where(inside, x, b.constant(Scalar::of(0), node.dtype, node.shape));
}

const sched::Stmt* first_reduce(const std::vector<sched::Stmt>& body) {
  for (const sched::Stmt& s : body) {
    if (s.kind == sched::StmtKind::Reduce) return &s;
    if (const sched::Stmt* inner = first_reduce(s.body)) return inner;
  }
  return nullptr;
}

TEST(TrimLoops, AGuardedMatrixVectorProductRunsOverItsBounds) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId matrix = b.parameter(DType::Float64, {64, 48});
  ValueId vector = b.parameter(DType::Float64, {48});
  ValueId lo = b.parameter(DType::Int64, {}), hi = b.parameter(DType::Int64, {});
  ValueId rows = masked(b, matrix, window(b, {64, 48}, lo, hi));
  ValueId column = masked(b, vector, window(b, {48}, lo, hi));
  ValueId product = b.binary(Op::mul, rows, b.broadcast(b.reshape(column, {1, 48}), {64, 48}));
  graph.set_outputs({b.reduce(Op::sum, product, {1}, false)});
  sched::Program program = sched::schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_TRUE(sched::trim_loops(program.kernels[0], target::Target{}));
  const sched::Stmt* reduce = first_reduce(program.kernels[0].body);
  ASSERT_NE(reduce, nullptr);
  EXPECT_GE(reduce->reduce_loops.back().begin, 0);
  EXPECT_GE(reduce->reduce_loops.back().end, 0);
  EXPECT_NE(sched::print_program(program).find("within ["), std::string::npos)
      << sched::print_program(program);
  EXPECT_FALSE(sched::trim_loops(program.kernels[0], target::Target{}));  // already trimmed
}

TEST(TrimLoops, UnguardedOrDifferentlyGuardedSumsAreLeftAlone) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float64, {48});
  ValueId lo = b.parameter(DType::Int64, {}), hi = b.parameter(DType::Int64, {});
  ValueId other = b.parameter(DType::Int64, {});
  // x * where(window, x, 0): the unguarded factor could be inf or NaN outside, and 0 * NaN
  // is NaN; where(window_a) * where(window_b): neither window bounds the product alone.
  ValueId one_sided = b.binary(Op::mul, x, masked(b, x, window(b, {48}, lo, hi)));
  ValueId two_windows = b.binary(Op::mul, masked(b, x, window(b, {48}, lo, hi)),
                                 masked(b, x, window(b, {48}, lo, other)));
  for (ValueId value : {one_sided, two_windows, x}) {
    graph.set_outputs({b.reduce(Op::sum, value, {}, false)});
    sched::Program program = sched::schedule(graph, {});
    for (sched::Kernel& kernel : program.kernels)
      EXPECT_FALSE(sched::trim_loops(kernel, target::Target{}));
  }
}

TEST(TrimLoops, TrimmedSumsMatchTheInterpreterForAnyBounds) {
  std::vector<double> values = pseudo_random(40 * 70, -1, 1, 5);
  for (size_t row = 0; row < 40; ++row)  // NaN in the first and last columns: outside most bounds
    for (size_t column : {0, 1, 2, 66, 69}) values[row * 70 + column] = kNaN;
  Array nan_outside = make_array(DType::Float64, {40, 70}, values);
  for (auto [low, high] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 70}, {3, 61}, {-5, 20}, {50, 500}, {30, 30}, {40, 10}, {69, 70}}) {
    GraphCase g;
    ValueId matrix = g.input(nan_outside);
    ValueId lo = g.input(make_array(DType::Int64, {}, {static_cast<double>(low)}));
    ValueId hi = g.input(make_array(DType::Int64, {}, {static_cast<double>(high)}));
    ir::Builder& b = g.builder;
    ValueId inside = window(b, {40, 70}, lo, hi);
    ValueId rows = masked(b, matrix, inside);
    g.output(b.reduce(Op::sum, rows, {1}, false), "row sums within the bounds");
    g.output(b.reduce(Op::sum, b.binary(Op::mul, rows, rows), {1}, false), "sums of squares");
    ValueId positive =
        b.binary(Op::gt, matrix, b.constant(Scalar::of(0.5), DType::Float64, {40, 70}));
    ValueId any_inside =
        b.where(inside, positive, b.constant(Scalar::of(0), DType::Bool, {40, 70}));
    g.output(b.reduce(Op::any, any_inside, {1}, false), "any within the bounds");
    g.check();
  }
}

// where(k == at, x, 0) (x[i, j] = v written as where(column == j, v, row), kiln/_indexing.py):
// its loop runs over [at, at + 1) clamped to the extent; positions outside it give empty loops.
TEST(TrimLoops, AnEqualityTrimsItsLoopToOnePosition) {
  {
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId x = b.parameter(DType::Float64, {48});
    ValueId at = b.parameter(DType::Int64, {});
    ValueId here = b.binary(Op::eq, b.iota(DType::Int64, {48}, 0), b.broadcast(at, {48}));
    graph.set_outputs({b.reduce(Op::sum, masked(b, x, here), {}, false)});
    sched::Program program = sched::schedule(graph, {});
    ASSERT_EQ(program.kernels.size(), 1u);
    EXPECT_TRUE(sched::trim_loops(program.kernels[0], target::Target{}))
        << sched::print_program(program);
  }
  std::vector<double> values = pseudo_random(40 * 70, -1, 1, 6);
  for (size_t row = 0; row < 40; ++row)
    for (size_t column : {1, 2, 66}) values[row * 70 + column] = kNaN;
  for (int64_t position : {0, 3, 69, 70, -2, 500}) {
    GraphCase g;
    ValueId matrix = g.input(make_array(DType::Float64, {40, 70}, values));
    ValueId at = g.input(make_array(DType::Int64, {}, {static_cast<double>(position)}));
    ir::Builder& b = g.builder;
    ValueId here =
        b.binary(Op::eq, b.iota(DType::Int64, {40, 70}, 1), b.broadcast(at, {40, 70}));
    g.output(b.reduce(Op::sum, masked(b, matrix, here), {1}, false), "the column at `at`");
    g.check();
  }
}

// A causal mask's maximum, max_k where(k <= i, x[i, k], -inf) (attention's scores), and the
// minimum over k > i: each row runs over its own columns only, its values unchanged; NaN and
// +-inf outside the bounds stay out.
TEST(TrimLoops, CausalMaximaAndMinimaRunOverTheirRowsColumns) {
  const int64_t rows = 37, columns = 70;
  std::vector<double> values = pseudo_random(rows * columns, -1, 1, 7);
  for (int64_t row = 0; row < rows; ++row) {
    values[static_cast<size_t>(row * columns + columns - 1)] = kNaN;
    if (row + 1 < columns) values[static_cast<size_t>(row * columns + row + 1)] = INFINITY;
  }
  for (Op reduction : {Op::max, Op::min}) {
    GraphCase g;
    ValueId x = g.input(make_array(DType::Float32, {rows, columns}, values));
    ir::Builder& b = g.builder;
    ValueId row = b.iota(DType::Int64, {rows, columns}, 0);
    ValueId column = b.iota(DType::Int64, {rows, columns}, 1);
    bool maximum = reduction == Op::max;
    ValueId inside = b.binary(maximum ? Op::le : Op::gt, column, row);
    ValueId outside = b.constant(Scalar::of(maximum ? -INFINITY : INFINITY), DType::Float32,
                                 {rows, columns});
    g.output(b.reduce(reduction, b.where(inside, x, outside), {1}, false),
             maximum ? "causal row maxima" : "minima right of the diagonal");
    g.check();
    sched::Program program = sched::schedule(g.graph, {});
    int trimmed = 0;
    for (sched::Kernel& kernel : program.kernels)
      trimmed += sched::trim_loops(kernel, target::Target{});
    EXPECT_EQ(trimmed, 1) << sched::print_program(program);
  }
}

// out[i] = where(lo <= i, 2 * sum_k x[i, k], old[i]): the row sums below lo are not computed.
struct SelectedRowSums {
  ir::Graph graph;
  ir::Builder b{graph};
  ValueId x, old, lo, out;
  SelectedRowSums() {
    x = b.parameter(DType::Float64, {50, 30});
    old = b.parameter(DType::Float64, {50});
    lo = b.parameter(DType::Int64, {});
    ValueId rows = b.iota(DType::Int64, {50}, 0);
    ValueId selected = b.binary(Op::ge, rows, b.broadcast(lo, {50}));
    ValueId sums = b.reduce(Op::sum, x, {1}, false);
    ValueId doubled = b.binary(Op::mul, sums, b.constant(Scalar::of(2), DType::Float64, {50}));
    out = b.where(selected, doubled, old);
    graph.set_outputs({out});
  }
};

TEST(GuardReductions, ASumSelectedAwayIsComputedOnlyWhereSelected) {
  SelectedRowSums rows;
  sched::Program program = sched::schedule(rows.graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  EXPECT_TRUE(sched::guard_reductions(program.kernels[0], target::Target{}));
  const sched::Stmt* reduce = first_reduce(program.kernels[0].body);
  ASSERT_NE(reduce, nullptr);
  EXPECT_GE(reduce->guard, 0);
  EXPECT_NE(sched::print_program(program).find(" if "), std::string::npos);
  EXPECT_FALSE(sched::guard_reductions(program.kernels[0], target::Target{}));
}

TEST(GuardReductions, ASumReadOutsideTheSelectionIsNotGuarded) {
  SelectedRowSums rows;
  ir::Builder& b = rows.b;
  // The sums are also an output of their own: needed everywhere.
  rows.graph.set_outputs({rows.out, b.reduce(Op::sum, rows.x, {1}, false)});
  sched::Program program = sched::schedule(rows.graph, {});
  for (sched::Kernel& kernel : program.kernels) sched::guard_reductions(kernel, target::Target{});
  bool guarded_everywhere = true;
  for (const sched::Kernel& kernel : program.kernels)
    if (const sched::Stmt* reduce = first_reduce(kernel.body))
      guarded_everywhere = guarded_everywhere && reduce->guard >= 0;
  EXPECT_FALSE(guarded_everywhere) << sched::print_program(program);
}

TEST(GuardReductions, GuardedSumsMatchTheInterpreter) {
  for (int64_t low : {-3, 0, 17, 49, 50, 80}) {
    GraphCase g;
    ValueId x = g.input(make_array(DType::Float64, {50, 30}, pseudo_random(1500, -1, 1, 6)));
    ValueId old = g.input(make_array(DType::Float64, {50}, pseudo_random(50, -1, 1, 7)));
    ValueId lo = g.input(make_array(DType::Int64, {}, {static_cast<double>(low)}));
    ir::Builder& b = g.builder;
    ValueId selected = b.binary(Op::ge, b.iota(DType::Int64, {50}, 0), b.broadcast(lo, {50}));
    g.output(b.where(selected, b.reduce(Op::sum, x, {1}, false), old), "selected row sums");
    g.check();
  }
}

// sum_k where(lo <= i, m[i, k], 0) * where(lo <= i, v[k], 0): zero below lo without running.
ValueId guarded_rows_product(ir::Builder& b, ValueId m, ValueId v, ValueId lo, bool guard_both) {
  ValueId rows = b.binary(Op::ge, b.iota(DType::Int64, {40, 30}, 0), b.broadcast(lo, {40, 30}));
  ValueId spread = b.broadcast(b.reshape(v, {1, 30}), {40, 30});
  ValueId zeros = b.constant(Scalar::of(0), DType::Float64, {40, 30});
  ValueId left = b.where(rows, m, zeros);
  ValueId right = guard_both ? b.where(rows, spread, zeros) : spread;
  return b.reduce(Op::sum, b.binary(Op::mul, left, right), {1}, false);
}

TEST(GuardReductions, ASumOfElementsGuardedByTheOuterIndexIsGuarded) {
  for (bool guard_both : {true, false}) {
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId m = b.parameter(DType::Float64, {40, 30}), v = b.parameter(DType::Float64, {30});
    ValueId lo = b.parameter(DType::Int64, {});
    graph.set_outputs({guarded_rows_product(b, m, v, lo, guard_both)});
    sched::Program program = sched::schedule(graph, {});
    ASSERT_EQ(program.kernels.size(), 1u);
    // One guarded factor is not enough: where v is infinite, 0 * v is NaN, not 0.
    EXPECT_EQ(sched::guard_reductions(program.kernels[0], target::Target{}), guard_both)
        << sched::print_program(program);
  }
}

TEST(GuardReductions, ElementGuardedSumsMatchTheInterpreter) {
  std::vector<double> values = pseudo_random(1200, -1, 1, 8);
  for (size_t k = 0; k < 90; ++k) values[k] = kNaN;  // rows 0-2: outside most guards
  for (int64_t low : {-1, 0, 3, 25, 40, 70}) {
    GraphCase g;
    ValueId m = g.input(make_array(DType::Float64, {40, 30}, values));
    ValueId v = g.input(make_array(DType::Float64, {30}, pseudo_random(30, -1, 1, 9)));
    ValueId lo = g.input(make_array(DType::Int64, {}, {static_cast<double>(low)}));
    g.output(guarded_rows_product(g.builder, m, v, lo, true), "guarded row products");
    g.check();
  }
}

// Selected away and zero outside, both under one condition (a window's product assigned to the
// window): under its guard the elements' masks are true, so they are dropped from the sum.
TEST(GuardReductions, AWindowProductAssignedToItsWindowRunsUnmasked) {
  std::vector<double> values = pseudo_random(1200, -1, 1, 10);
  for (size_t k = 0; k < 90; ++k) values[k] = kNaN;  // rows 0-2: outside most windows
  for (int64_t low : {-1, 0, 3, 25, 40, 70}) {
    GraphCase g;
    ValueId m = g.input(make_array(DType::Float64, {40, 30}, values));
    ValueId v = g.input(make_array(DType::Float64, {30}, pseudo_random(30, -1, 1, 11)));
    ValueId old = g.input(make_array(DType::Float64, {40}, pseudo_random(40, -1, 1, 12)));
    ValueId lo = g.input(make_array(DType::Int64, {}, {static_cast<double>(low)}));
    ir::Builder& b = g.builder;
    ValueId rows = b.binary(Op::ge, b.iota(DType::Int64, {40}, 0), b.broadcast(lo, {40}));
    g.output(b.where(rows, guarded_rows_product(b, m, v, lo, true), old), "window rows");
    g.graph.set_outputs(g.outputs);
    sched::Program program = sched::schedule(g.graph, {});
    ASSERT_EQ(program.kernels.size(), 1u);
    EXPECT_TRUE(sched::guard_reductions(program.kernels[0], target::Target{}));
    std::string text = sched::print_program(program);
    std::string reduce_line = text.substr(text.find("reduce "));
    reduce_line = reduce_line.substr(0, reduce_line.find('\n'));
    EXPECT_EQ(reduce_line.find("where("), std::string::npos) << text;
    g.check();  // NaN rows outside the window stay out of the results
  }
}

// A column sum over a window of columns, assigned to the window (covariance's d[:, i] @ d[:, i:]):
// interchanged into SIMD lanes over the columns (sched/cpu/interchange_reductions.h), the lanes
// run over the window only. Every bound, inside and past the axis, against the interpreter.
TEST(GuardReductions, WindowColumnSumsRunOverTheWindowsLanes) {
  for (auto [low, high] : std::vector<std::pair<int64_t, int64_t>>{
           {-5, 70}, {0, 64}, {1, 64}, {17, 40}, {31, 33}, {63, 64}, {40, 17}, {64, 90}}) {
    GraphCase g;
    ValueId m = g.input(make_array(DType::Float64, {50, 64}, pseudo_random(3200, -1, 1, 13)));
    ValueId old = g.input(make_array(DType::Float64, {64}, pseudo_random(64, -1, 1, 14)));
    ValueId lo = g.input(make_array(DType::Int64, {}, {static_cast<double>(low)}));
    ValueId hi = g.input(make_array(DType::Int64, {}, {static_cast<double>(high)}));
    ir::Builder& b = g.builder;
    ValueId columns = window(b, {64}, lo, hi);
    ValueId inside = b.broadcast(b.reshape(columns, {1, 64}), {50, 64});
    ValueId sums = b.reduce(Op::sum, b.binary(Op::mul, masked(b, m, inside), masked(b, m, inside)),
                            {0}, false);
    g.output(b.where(columns, sums, old), "window column sums");
    g.check();
  }
}

TEST(TrimLoops, AMaskOfATrimmedLoopIsNotComputedAheadOverTheWholeAxis) {
  // where(lo <= row < hi, x, 0) summed over rows, per column: the rows' loop is trimmed to
  // [lo, hi). Hoisting the mask (it does not depend on the column) out of the columns' loop
  // computed it for every row, once per run: a moving window's mean of rows in a captured
  // Python loop, x[max(0, i - k + 1):i + 1].mean(axis=0), cost O(rows) per step.
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId x = b.parameter(DType::Float64, {512, 8});
  ValueId lo = b.parameter(DType::Int64, {}), hi = b.parameter(DType::Int64, {});
  ValueId rows = b.iota(DType::Int64, {512, 8}, 0);
  ValueId inside = b.binary(Op::logical_and, b.binary(Op::ge, rows, b.broadcast(lo, {512, 8})),
                            b.binary(Op::lt, rows, b.broadcast(hi, {512, 8})));
  graph.set_outputs({b.reduce(Op::sum, masked(b, x, inside), {0}, false)});
  sched::Program program = sched::schedule(graph, {});
  ASSERT_EQ(program.kernels.size(), 1u);
  ASSERT_TRUE(sched::trim_loops(program.kernels[0], target::Target{}))
      << sched::print_program(program);
  EXPECT_FALSE(sched::cpu::hoist_invariants(program.kernels[0], target::Target{}))
      << sched::print_program(program);
}

}  // namespace
}  // namespace kiln::test
