// Conditionals (ir/cond.h) end to end: built by hand and through the trace's region API
// (api/loop_trace.h), interpreted, verified, printed, serialised, lowered to loops of 0 or 1
// iterations, compiled and compared with the interpreter.
#include <gtest/gtest.h>

#include "api/loop_trace.h"
#include "compile_test_util.h"
#include "ir/cond.h"
#include "ir/loop.h"
#include "ir/printer.h"
#include "ir/serializer.h"
#include "ir/verifier.h"
#include "passes/passes.h"

namespace kiln::test {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;

// (u, v) -> (u * 2 + t, v): the then region updates one carried value, reads an invariant.
std::shared_ptr<ir::Graph> then_region(const ir::Shape& shape) {
  auto region = std::make_shared<ir::Graph>();
  ir::Builder b(*region);
  ValueId u = b.parameter(DType::Float64, shape);
  ValueId v = b.parameter(DType::Float64, shape);
  ValueId t = b.parameter(DType::Float64, shape);
  ValueId two = b.constant(Scalar::of(2), DType::Float64, shape);
  region->set_outputs({b.binary(Op::add, b.binary(Op::mul, u, two), t), v});
  return region;
}

// (u, v) -> (u, v - e[0]): the else region updates the other one, with its own invariant.
std::shared_ptr<ir::Graph> else_region(const ir::Shape& shape) {
  auto region = std::make_shared<ir::Graph>();
  ir::Builder b(*region);
  ValueId u = b.parameter(DType::Float64, shape);
  ValueId v = b.parameter(DType::Float64, shape);
  ValueId e = b.parameter(DType::Float64, {});
  region->set_outputs({u, b.binary(Op::sub, v, b.broadcast(e, shape))});
  return region;
}

Array bool_scalar(bool value) {
  return make_array(DType::Bool, {}, std::vector<double>{value ? 1.0 : 0.0});
}

TEST(Conditionals, OnlyTheTakenRegionRuns) {
  for (bool taken : {true, false}) {
    GraphCase g;
    ValueId predicate = g.input(bool_scalar(taken));
    ValueId u = g.input(make_array(DType::Float64, {17}, pseudo_random(17, -1, 1, 3)));
    ValueId v = g.input(make_array(DType::Float64, {17}, pseudo_random(17, -1, 1, 4)));
    ValueId t = g.input(make_array(DType::Float64, {17}, pseudo_random(17, -1, 1, 5)));
    ValueId e = g.input(Array::from_vector(std::vector<double>{0.25}, {}));
    ValueId cond =
        g.builder.cond(predicate, {u, v}, {t}, {e}, then_region({17}), else_region({17}));
    g.output(g.builder.loop_result(cond, 0), taken ? "u, then" : "u, else");
    g.output(g.builder.loop_result(cond, 1), taken ? "v, then" : "v, else");
    g.graph.set_outputs(g.outputs);
    // The interpreter against the regions' arithmetic by hand.
    std::vector<Array> expected = ir::interpret(g.graph, g.inputs);
    const double* u0 = g.inputs[1].data_as<double>();
    const double* v0 = g.inputs[2].data_as<double>();
    const double* t0 = g.inputs[3].data_as<double>();
    for (int i = 0; i < 17; ++i) {
      EXPECT_DOUBLE_EQ(expected[0].data_as<double>()[i], taken ? u0[i] * 2 + t0[i] : u0[i]);
      EXPECT_DOUBLE_EQ(expected[1].data_as<double>()[i], taken ? v0[i] : v0[i] - 0.25);
    }
    g.check();  // compiled (through lower_conditionals) against the interpreter
  }
}

TEST(Conditionals, PrintedSerialisedVerifiedAndLowered) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId predicate = b.parameter(DType::Bool, {});
  ValueId u = b.parameter(DType::Float64, {4});
  ValueId v = b.parameter(DType::Float64, {4});
  ValueId t = b.parameter(DType::Float64, {4});
  ValueId e = b.parameter(DType::Float64, {});
  ValueId cond = b.cond(predicate, {u, v}, {t}, {e}, then_region({4}), else_region({4}));
  graph.set_outputs({b.loop_result(cond, 0), b.loop_result(cond, 1)});
  ir::verify(graph, "test");
  std::string text = ir::print_graph(graph);
  EXPECT_NE(text.find("cond(%0, %1, %2, %3, %4) {axis=1, index=2, body={"), std::string::npos)
      << text;
  EXPECT_NE(text.find("else_body={"), std::string::npos) << text;
  ir::Graph back = ir::deserialize_graph(ir::serialize_graph(graph));
  EXPECT_EQ(ir::print_graph(back), text);

  ir::Graph lowered = ir::lower_conditionals(graph);
  EXPECT_FALSE(ir::has_conditionals(lowered));
  ir::verify(lowered, "lowered");
  int loops = 0;
  for (const ir::Node& node : lowered.nodes()) loops += node.op == Op::loop;
  EXPECT_EQ(loops, 2);
  for (bool taken : {true, false}) {
    std::vector<Array> inputs = {bool_scalar(taken),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 1)),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 2)),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 3)),
                                 Array::from_vector(std::vector<double>{3.0}, {})};
    std::vector<Array> direct = ir::interpret(graph, inputs);
    std::vector<Array> through_loops = ir::interpret(lowered, inputs);
    for (size_t k = 0; k < 2; ++k)
      expect_array_matches(through_loops[k], direct[k], Tolerance{0, 0}, "lowered", inputs);
  }
}

// Work only the then side reads (an exp, and a loop's result) moves into the then loop
// (passes/sink_into_branches.cpp); a value something else reads too stays where it was.
TEST(Conditionals, WorkOnlyOneSideReadsMovesIntoIt) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId predicate = b.parameter(DType::Bool, {});
  ValueId u = b.parameter(DType::Float64, {4});
  ValueId v = b.parameter(DType::Float64, {4});
  ValueId w = b.parameter(DType::Float64, {4});
  auto twice = std::make_shared<ir::Graph>();  // (i, acc, w) -> acc + w, for 2 iterations
  {
    ir::Builder r(*twice);
    r.parameter(DType::Int64, {});
    ValueId acc = r.parameter(DType::Float64, {4});
    twice->set_outputs({r.binary(Op::add, acc, r.parameter(DType::Float64, {4}))});
  }
  ValueId sum_loop = b.loop(b.constant(Scalar::of_int(0), DType::Int64),
                            b.constant(Scalar::of_int(2), DType::Int64), 1, {w}, {w}, twice);
  ValueId t = b.binary(Op::add, b.unary(Op::exp, w), b.loop_result(sum_loop, 0));
  ValueId e = b.reduce(Op::sum, w, {0}, false);
  ValueId cond = b.cond(predicate, {u, v}, {t}, {e}, then_region({4}), else_region({4}));
  graph.set_outputs({b.loop_result(cond, 0), b.loop_result(cond, 1), e});
  ir::Graph lowered = ir::lower_conditionals(graph);
  ir::Graph sunk = passes::sink_into_branches(lowered);
  ir::verify(sunk, "sunk");
  auto count = [](const ir::Graph& g, Op op) {
    int n = 0;
    for (const ir::Node& node : g.nodes()) n += node.op == op;
    return n;
  };
  EXPECT_EQ(count(sunk, Op::exp), 0) << ir::print_graph(sunk);
  EXPECT_EQ(count(sunk, Op::sum), 1) << ir::print_graph(sunk);  // an output too: stays
  EXPECT_EQ(count(sunk, Op::loop), 2) << ir::print_graph(sunk);  // the sides' loops only
  const ir::Node& then_loop = *std::find_if(sunk.nodes().begin(), sunk.nodes().end(),
                                            [](const ir::Node& n) { return n.op == Op::loop; });
  EXPECT_EQ(count(*then_loop.attrs.body, Op::exp), 1);
  EXPECT_EQ(count(*then_loop.attrs.body, Op::loop), 1);
  EXPECT_TRUE(ir::print_graph(passes::sink_into_branches(sunk)) == ir::print_graph(sunk));
  for (bool taken : {true, false}) {
    std::vector<Array> inputs = {bool_scalar(taken),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 1)),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 2)),
                                 make_array(DType::Float64, {4}, pseudo_random(4, -1, 1, 3))};
    std::vector<Array> direct = ir::interpret(graph, inputs);
    std::vector<Array> moved = ir::interpret(sunk, inputs);
    for (size_t k = 0; k < 3; ++k)
      expect_array_matches(moved[k], direct[k], Tolerance{0, 0}, "sunk", inputs);
  }
}

TEST(Conditionals, BadCondsAreRefused) {
  ir::Graph graph;
  ir::Builder b(graph);
  ValueId predicate = b.parameter(DType::Bool, {});
  ValueId not_bool = b.parameter(DType::Int64, {});
  ValueId u = b.parameter(DType::Float64, {4});
  ValueId u32 = b.parameter(DType::Float32, {4});
  ValueId t = b.parameter(DType::Float64, {4});
  ValueId e = b.parameter(DType::Float64, {});
  EXPECT_THROW(b.cond(not_bool, {u, u}, {t}, {e}, then_region({4}), else_region({4})), Error);
  EXPECT_THROW(b.cond(predicate, {u32, u}, {t}, {e}, then_region({4}), else_region({4})), Error);
  EXPECT_THROW(b.cond(predicate, {u, u}, {}, {e}, then_region({4}), else_region({4})), Error);
  EXPECT_THROW(b.cond(predicate, {u, u}, {t}, {e}, then_region({4}), nullptr), Error);
  EXPECT_THROW(b.loop_result(u, 0), Error);
}

// for i in range(n): if x[i] > 0: s = s + x[i] else: s = s * 0.5 -- a cond in a loop body,
// the predicate read from the data at the induction variable.
TEST(Conditionals, CondInsideALoopBody) {
  GraphCase g;
  const int64_t n = 40;
  ValueId x = g.input(make_array(DType::Float64, {n}, pseudo_random(n, -1, 1, 7)));
  auto body = std::make_shared<ir::Graph>();
  {
    ir::Builder b(*body);
    ValueId i = b.parameter(DType::Int64, {});
    ValueId s = b.parameter(DType::Float64, {});
    ValueId xs = b.parameter(DType::Float64, {n});
    ValueId element = b.reshape(b.gather(xs, b.reshape(i, {1}), 0), {});
    ValueId positive = b.binary(Op::gt, element, b.constant(Scalar::of(0), DType::Float64));
    auto add = std::make_shared<ir::Graph>();
    {
      ir::Builder r(*add);
      ValueId sum = r.parameter(DType::Float64, {});
      ValueId value = r.parameter(DType::Float64, {});
      add->set_outputs({r.binary(Op::add, sum, value)});
    }
    auto halve = std::make_shared<ir::Graph>();
    {
      ir::Builder r(*halve);
      ValueId sum = r.parameter(DType::Float64, {});
      halve->set_outputs({r.binary(Op::mul, sum, r.constant(Scalar::of(0.5), DType::Float64))});
    }
    ValueId cond = b.cond(positive, {s}, {element}, {}, add, halve);
    body->set_outputs({b.loop_result(cond, 0)});
  }
  ir::Builder& b = g.builder;
  ValueId zero = b.constant(Scalar::of_int(0), DType::Int64);
  ValueId stop = b.constant(Scalar::of_int(n), DType::Int64);
  ValueId loop = b.loop(zero, stop, 1, {b.constant(Scalar::of(0), DType::Float64)}, {x}, body);
  g.output(b.loop_result(loop, 0), "s");
  g.graph.set_outputs(g.outputs);
  std::vector<Array> expected = ir::interpret(g.graph, g.inputs);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    double value = g.inputs[0].data_as<double>()[i];
    s = value > 0 ? s + value : s * 0.5;
  }
  EXPECT_DOUBLE_EQ(*expected[0].data_as<double>(), s);
  g.check();
}

}  // namespace
}  // namespace kiln::test
