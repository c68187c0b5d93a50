// Structured loops (ir/loop.h) end to end: built by hand and through the trace's region API
// (api/loop_trace.h), interpreted, verified, printed, serialised, scheduled as LoopBegin/LoopEnd
// steps around their body's kernels, compiled and compared with the interpreter.
#include <gtest/gtest.h>

#include "api/loop_trace.h"
#include "compile_test_util.h"
#include "ir/loop.h"
#include "ir/printer.h"
#include "ir/serializer.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "sched/scheduler.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;

ValueId index_constant(ir::Builder& b, int64_t value) {
  return b.constant(Scalar::of_int(value), DType::Int64);
}

// u <- u * 0.5 + x, `steps` times: a carried array and an invariant one.
std::shared_ptr<ir::Graph> relaxation_body(const ir::Shape& shape) {
  auto body = std::make_shared<ir::Graph>();
  ir::Builder b(*body);
  b.parameter(DType::Int64, {});
  ValueId u = b.parameter(DType::Float64, shape);
  ValueId x = b.parameter(DType::Float64, shape);
  ValueId half = b.constant(Scalar::of(0.5), DType::Float64, shape);
  body->set_outputs({b.binary(Op::add, b.binary(Op::mul, u, half), x)});
  return body;
}

TEST(Loops, TripCountIsPythonsRangeLength) {
  EXPECT_EQ(ir::loop_trip_count(0, 10, 1), 10);
  EXPECT_EQ(ir::loop_trip_count(0, 10, 3), 4);
  EXPECT_EQ(ir::loop_trip_count(10, 0, -3), 4);
  EXPECT_EQ(ir::loop_trip_count(5, 5, 1), 0);
  EXPECT_EQ(ir::loop_trip_count(5, 0, 1), 0);
  EXPECT_EQ(ir::loop_trip_count(INT64_MIN, INT64_MAX, 1), -1);  // 2**64 - 1 wraps: never asked
  EXPECT_EQ(ir::loop_trip_count(INT64_MIN, INT64_MAX, INT64_MAX), 3);
}

TEST(Loops, TimeStepLoopMatchesTheInterpreter) {
  for (int64_t steps : {0, 1, 7}) {
    GraphCase g;
    ValueId u0 = g.input(make_array(DType::Float64, {33}, pseudo_random(33, -1, 1, 3)));
    ValueId x = g.input(make_array(DType::Float64, {33}, pseudo_random(33, -1, 1, 4)));
    ValueId loop = g.builder.loop(index_constant(g.builder, 0), index_constant(g.builder, steps), 1,
                                  {u0}, {x}, relaxation_body({33}));
    g.output(g.builder.loop_result(loop, 0), "u after " + std::to_string(steps) + " steps");
    CompiledRun run = g.check();
    // The body's kernel is compiled once, whatever the trip count.
    EXPECT_LE(run.stats.kernels, 3);
  }
}

// Bounded compile work (codegen/cpp/translation_units.h): with units of one byte, each constant
// array, kernel and loop driver is a translation unit of its own (the driver calls kernels
// defined in other units), compiled in parallel and linked; results as the interpreter's, the
// cache keeps one source file, and a warm start loads what was linked.
TEST(Loops, SourceSplitIntoTranslationUnitsCompilesAndLinks) {
  const char* saved_text = getenv("KILN_UNIT_BYTES");
  const std::string saved = saved_text ? saved_text : "";
  setenv("KILN_UNIT_BYTES", "1", 1);
  TemporaryDirectory cache("kiln-units-");
  Options options = test_options();
  options.cache_dir = cache.path();
  auto build = [](GraphCase& g) {
    ValueId u0 = g.input(make_array(DType::Float64, {33}, pseudo_random(33, -1, 1, 3)));
    ValueId x = g.input(make_array(DType::Float64, {33}, pseudo_random(33, -1, 1, 4)));
    std::vector<uint8_t> bytes(33 * sizeof(double));
    std::vector<double> values = pseudo_random(33, 0, 1, 5);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    ValueId table = g.builder.constant_array(bytes, DType::Float64, {33});
    ValueId loop = g.builder.loop(index_constant(g.builder, 0), index_constant(g.builder, 5), 1,
                                  {u0}, {g.builder.binary(Op::mul, x, table)},
                                  relaxation_body({33}));
    ValueId u = g.builder.loop_result(loop, 0);
    g.output(g.builder.reduce(Op::sum, g.builder.binary(Op::mul, u, u), {0}, false), "|u|^2");
    g.output(u, "u after 5 steps");
  };
  GraphCase first, second;
  build(first);
  build(second);
  CompiledRun run = first.check(options);
  std::string source = run.compiled->source_text();
  EXPECT_NE(source.find("#if !defined(KILN_UNIT) || KILN_UNIT == 3\n"), std::string::npos);
  EXPECT_NE(source.find("extern \"C\" __attribute__((flatten)) void kiln_loop"), std::string::npos);
  EXPECT_EQ(second.check(options).stats.disk_hits, 1);
  if (saved_text) setenv("KILN_UNIT_BYTES", saved.c_str(), 1);
  else unsetenv("KILN_UNIT_BYTES");
}

TEST(Loops, PrintedSerialisedAndVerified) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId u0 = b.parameter(DType::Float64, {4});
  ValueId x = b.parameter(DType::Float64, {4});
  ValueId start = index_constant(b, 0), stop = index_constant(b, 3);
  ValueId loop = b.loop(start, stop, 1, {u0}, {x}, relaxation_body({4}));
  graph.set_outputs({b.loop_result(loop, 0)});
  ir::verify(graph, "test");
  std::string text = ir::print_graph(graph);
  EXPECT_NE(text.find("loop(%2, %3, %0, %1) {index=1, steps=[1], body={"), std::string::npos)
      << text;
  EXPECT_NE(text.find("    %4 = mul(%1, %3) : float64(4,)"), std::string::npos) << text;
  ir::Graph back = ir::deserialize_graph(ir::serialize_graph(graph));
  EXPECT_EQ(ir::print_graph(back), text);
}

TEST(Loops, BadLoopsAreRefused) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId u0 = b.parameter(DType::Float32, {4});  // the body carries float64
  ValueId x = b.parameter(DType::Float64, {4});
  EXPECT_THROW(
      b.loop(index_constant(b, 0), index_constant(b, 3), 1, {u0}, {x}, relaxation_body({4})),
      Error);
  ValueId u1 = b.parameter(DType::Float64, {4});
  EXPECT_THROW(
      b.loop(index_constant(b, 0), index_constant(b, 3), 0, {u1}, {x}, relaxation_body({4})),
      Error);  // step 0
  EXPECT_THROW(
      b.loop(index_constant(b, 0), index_constant(b, 3), 1, {u1}, {}, relaxation_body({4})),
      Error);  // missing invariant
}

// out[i, :] = x[i, :] * i for i in range(rows - 1, -1, -1): a carried array updated one row per
// iteration through the induction variable.
TEST(Loops, RowUpdatesThroughTheInductionVariable) {
  GraphCase g;
  ValueId x = g.input(make_array(DType::Float64, {6, 5}, pseudo_random(30, -2, 2, 9)));
  ValueId out0 = g.builder.constant(Scalar::of(0.0), DType::Float64, {6, 5});
  auto body = std::make_shared<ir::Graph>();
  ir::Builder b(*body);
  ValueId i = b.parameter(DType::Int64, {});
  ValueId out = b.parameter(DType::Float64, {6, 5});
  ValueId xs = b.parameter(DType::Float64, {6, 5});
  ValueId row_index = b.reshape(i, {1});
  ValueId row = b.gather(xs, row_index, 0);
  ValueId scale = b.broadcast(b.cast(i, DType::Float64), {1, 5});
  body->set_outputs(
      {b.scatter(out, row_index, b.binary(Op::mul, row, scale), 0, ir::ScatterMode::Set)});
  ValueId loop = g.builder.loop(index_constant(g.builder, 5), index_constant(g.builder, -1), -1,
                                {out0}, {x}, body);
  g.output(g.builder.loop_result(loop, 0), "rows");
  g.check();
}

// for i in range(n): for j in range(i): s += x[i] * x[j]: the inner bound is the outer index.
TEST(Loops, NestedTriangularLoops) {
  GraphCase g;
  ValueId x = g.input(make_array(DType::Float64, {9}, pseudo_random(9, -1, 1, 5)));
  auto inner = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*inner);
    ValueId j = b.parameter(DType::Int64, {});
    ValueId s = b.parameter(DType::Float64, {});
    ValueId xi = b.parameter(DType::Float64, {});
    ValueId xs = b.parameter(DType::Float64, {9});
    ValueId xj = b.reshape(b.gather(xs, b.reshape(j, {1}), 0), {});
    inner->set_outputs({b.binary(Op::add, s, b.binary(Op::mul, xi, xj))});
  }
  auto outer = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*outer);
    ValueId i = b.parameter(DType::Int64, {});
    ValueId s = b.parameter(DType::Float64, {});
    ValueId xs = b.parameter(DType::Float64, {9});
    ValueId xi = b.reshape(b.gather(xs, b.reshape(i, {1}), 0), {});
    ValueId loop = b.loop(index_constant(b, 0), i, 1, {s}, {xi, xs}, inner);
    outer->set_outputs({b.loop_result(loop, 0)});
  }
  ValueId zero = g.builder.constant(Scalar::of(0.0), DType::Float64);
  ValueId loop = g.builder.loop(index_constant(g.builder, 0), index_constant(g.builder, 9), 1,
                                {zero}, {x}, outer);
  g.output(g.builder.loop_result(loop, 0), "pair sum");
  g.output(g.builder.binary(Op::add, g.builder.loop_result(loop, 0),
                            g.builder.constant(Scalar::of(1.0), DType::Float64)),
           "pair sum + 1");
  g.check();
}

// A body returning one array for two carried values, updated in place by an inner loop (which
// then leaves it in the first value's buffer, donated to it): the second value still gets its
// copy. NumPy's `return M` in a loop, then a loop writing M after it, carried M so (the second
// value's buffer was never written: garbage).
TEST(Loops, ABodyReturningOneArrayForTwoCarriedValuesCopiesItIntoBoth) {
  GraphCase g;
  ValueId x = g.input(make_array(DType::Float64, {6}, pseudo_random(6, -1, 1, 7)));
  auto inner = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*inner);
    ValueId j = b.parameter(DType::Int64, {});
    ValueId a = b.parameter(DType::Float64, {6});
    ValueId index = b.reshape(j, {1});
    ValueId one = b.broadcast(b.constant(Scalar::of(1.5), DType::Float64), {1});
    inner->set_outputs({b.scatter(a, index, b.binary(Op::add, b.gather(a, index, 0), one), 0,
                                  ir::ScatterMode::Set)});
  }
  auto outer = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*outer);
    b.parameter(DType::Int64, {});
    ValueId a = b.parameter(DType::Float64, {6});
    b.parameter(DType::Float64, {6});
    ValueId loop = b.loop(index_constant(b, 0), index_constant(b, 3), 1, {a}, {}, inner);
    ValueId updated = b.loop_result(loop, 0);
    outer->set_outputs({updated, updated});
  }
  ValueId zeros = g.builder.broadcast(g.builder.constant(Scalar::of(0.0), DType::Float64), {6});
  ValueId loop = g.builder.loop(index_constant(g.builder, 0), index_constant(g.builder, 2), 1,
                                {x, zeros}, {}, outer);
  g.output(g.builder.loop_result(loop, 0), "first");
  g.output(g.builder.loop_result(loop, 1), "second");
  g.check();
}

// The region API: the body is traced into the trace's graph on placeholders, reads a value
// from before the loop (captured as an invariant) and computes loop-invariant work (hoisted).
TEST(Loops, TracedBodyCapturesAndHoists) {
  detail::Trace trace;
  Tensor u0 = trace.input(DType::Float64, {16});
  Tensor x = trace.input(DType::Float64, {16});
  Tensor i = detail::begin_loop_body(trace);
  Tensor u = detail::loop_placeholder(trace, DType::Float64, {16});
  Tensor invariant = kiln::sqrt(kiln::abs(x));  // depends on no placeholder: hoisted
  Tensor next =
      kiln::add(kiln::multiply(u, 0.25), kiln::multiply(invariant, i.astype(DType::Float64)));
  Tensor start = Tensor(&trace, trace.builder.constant(Scalar::of_int(0), DType::Int64));
  Tensor stop = Tensor(&trace, trace.builder.constant(Scalar::of_int(12), DType::Int64));
  std::vector<Tensor> after = detail::end_loop(trace, start, stop, 1, {u0}, {next});
  ASSERT_EQ(after.size(), 1u);
  ValueId loop = trace.graph.node(after[0].id()).inputs[0];
  const ir::Graph& body = *trace.graph.node(loop).attrs.body;
  for (const ir::Node& node : body.nodes()) EXPECT_NE(node.op, Op::sqrt) << ir::print_graph(body);
  EXPECT_EQ(body.inputs().size(), 3u);  // index, u, sqrt(abs(x))

  std::vector<Array> inputs{make_array(DType::Float64, {16}, pseudo_random(16, -1, 1, 1)),
                            make_array(DType::Float64, {16}, pseudo_random(16, -1, 1, 2))};
  trace.graph.set_outputs({after[0].id()});
  EXPECT_THROW(ir::verify(trace.graph, "trace"), Error);  // the dead body is still there
  CompiledRun run = compile_and_run(trace.graph, inputs);
  std::vector<Array> expected = ir::interpret(passes::eliminate_dead_code(trace.graph), inputs);
  expect_array_matches(run.outputs[0], expected[0], default_tolerance(DType::Float64), "u", inputs);
}

TEST(Loops, WorkOnValuesCarriedUnchangedIsHoisted) {
  // The NumPy tracer carries every array a body names: one the body only reads (x) comes back
  // as its own placeholder, and work on it alone is rebuilt before the loop on x's value.
  detail::Trace trace;
  Tensor u0 = trace.input(DType::Float64, {16});
  Tensor x0 = trace.input(DType::Float64, {16});
  Tensor i = detail::begin_loop_body(trace);
  Tensor u = detail::loop_placeholder(trace, DType::Float64, {16});
  Tensor x = detail::loop_placeholder(trace, DType::Float64, {16});
  Tensor invariant = kiln::sqrt(kiln::abs(x));  // reads only x, which the body leaves as it is
  Tensor next =
      kiln::add(kiln::multiply(u, 0.25), kiln::multiply(invariant, i.astype(DType::Float64)));
  Tensor start = Tensor(&trace, trace.builder.constant(Scalar::of_int(0), DType::Int64));
  Tensor stop = Tensor(&trace, trace.builder.constant(Scalar::of_int(12), DType::Int64));
  std::vector<Tensor> after = detail::end_loop(trace, start, stop, 1, {u0, x0}, {next, x});
  ASSERT_EQ(after.size(), 2u);
  ValueId loop = trace.graph.node(after[0].id()).inputs[0];
  const ir::Graph& body = *trace.graph.node(loop).attrs.body;
  for (const ir::Node& node : body.nodes()) EXPECT_NE(node.op, Op::sqrt) << ir::print_graph(body);

  std::vector<Array> inputs{make_array(DType::Float64, {16}, pseudo_random(16, -1, 1, 1)),
                            make_array(DType::Float64, {16}, pseudo_random(16, -1, 1, 2))};
  trace.graph.set_outputs({after[0].id(), after[1].id()});
  CompiledRun run = compile_and_run(trace.graph, inputs);
  std::vector<Array> expected = ir::interpret(passes::eliminate_dead_code(trace.graph), inputs);
  expect_array_matches(run.outputs[0], expected[0], default_tolerance(DType::Float64), "u", inputs);
  expect_array_matches(run.outputs[1], inputs[1], default_tolerance(DType::Float64), "x", inputs);
}

TEST(Loops, BodyValueUsedAfterTheLoopIsAnError) {
  detail::Trace trace;
  Tensor u0 = trace.input(DType::Float64, {4});
  detail::begin_loop_body(trace);
  Tensor u = detail::loop_placeholder(trace, DType::Float64, {4});
  Tensor next = kiln::add(u, 1.0);
  Tensor start = Tensor(&trace, trace.builder.constant(Scalar::of_int(0), DType::Int64));
  std::vector<Tensor> after = detail::end_loop(trace, start, start, 1, {u0}, {next});
  trace.graph.set_outputs({kiln::add(after[0], next).id()});  // `next` escaped the body
  CompileStats stats;
  try {
    detail::compile_graph(trace.graph, {{}}, test_options(), stats);
    FAIL() << "compiled a graph that uses a body value outside the loop";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("inside a loop body is used outside the loop"),
              std::string::npos)
        << error.what();
  }
}

TEST(Loops, WarmStartReadsLoopStepsBack) {
  TemporaryDirectory cache("kiln-loops-");
  Options options = test_options();
  options.cache_dir = cache.path();
  for (int round = 0; round < 2; ++round) {
    GraphCase g;
    ValueId u0 = g.input(make_array(DType::Float64, {8}, pseudo_random(8, -1, 1, 3)));
    ValueId x = g.input(make_array(DType::Float64, {8}, pseudo_random(8, -1, 1, 4)));
    ValueId loop = g.builder.loop(index_constant(g.builder, 0), index_constant(g.builder, 5), 1,
                                  {u0}, {x}, relaxation_body({8}));
    g.output(g.builder.loop_result(loop, 0), "u");
    CompiledRun run = g.check(options);
    EXPECT_EQ(run.stats.disk_hits, round);
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// while s.sum() < limit: s = s * 2 (the condition is carried value 0, computed from the new s).
TEST(Loops, WhileLoopStopsWhenItsConditionIsFalse) {
  for (double limit : {0.5, 10.0, 1000.0}) {
    GraphCase g;
    ValueId s0 = g.input(make_array(DType::Float64, {4}, {0.25, 0.5, 0.125, 1.0}));
    auto body = std::make_shared<ir::Graph>();
    ir::Builder b(*body);
    b.parameter(DType::Int64, {});
    b.parameter(DType::Bool, {});
    ValueId s = b.parameter(DType::Float64, {4});
    ValueId next = b.binary(Op::mul, s, b.constant(Scalar::of(2.0), DType::Float64, {4}));
    ValueId go_on = b.binary(Op::lt, b.reduce(Op::sum, next, {0}, false),
                             b.constant(Scalar::of(limit), DType::Float64));
    body->set_outputs({go_on, next});
    ValueId first = g.builder.binary(Op::lt, g.builder.reduce(Op::sum, s0, {0}, false),
                                     g.builder.constant(Scalar::of(limit), DType::Float64));
    ValueId start = index_constant(g.builder, 0);
    ValueId stop = index_constant(g.builder, INT64_MAX);
    ValueId loop = g.builder.loop(start, stop, 1, {first, s0}, {}, body, /*while_loop=*/true);
    g.output(g.builder.loop_result(loop, 1), "s, limit " + std::to_string(limit));
    g.check();
  }
}

}  // namespace
}  // namespace kiln::test
