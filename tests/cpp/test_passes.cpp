// The graph passes on hand-built IR: each simplification rule on its own (and the look-alikes it
// must leave alone), CSE, DCE, constant folding, and the pipeline's switches and logging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "api/logging.h"
#include "api/trace.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "passes/pipeline.h"
#include "kiln/tensor.h"

namespace kiln::passes {
namespace {

using ir::Op;
using ir::Scalar;
using ir::ValueId;

int count_ops(const ir::Graph& graph, Op op) {
  int count = 0;
  for (const ir::Node& node : graph.nodes()) count += node.op == op;
  return count;
}

// The node an output is, after a pass.
const ir::Node& output_node(const ir::Graph& graph, size_t index = 0) {
  return graph.node(graph.outputs()[index]);
}

class PassTest : public ::testing::Test {
 protected:
  PassTest() : builder(graph) {}
  ValueId finish(ValueId output) {
    graph.set_outputs({output});
    return output;
  }
  // simplify followed by DCE: what the rule leaves behind.
  ir::Graph simplified() { return eliminate_dead_code(simplify(graph)); }

  ir::Graph graph;
  ir::Builder builder;
};

TEST_F(PassTest, AddZeroIntegerIsRemoved) {
  ValueId x = builder.parameter(DType::Int32, {4});
  finish(builder.binary(Op::add, x, builder.constant(Scalar::of_int(0), DType::Int32)));
  ir::Graph result = simplified();
  EXPECT_EQ(count_ops(result, Op::add), 0) << ir::print_graph(result);
  EXPECT_EQ(output_node(result).op, Op::parameter);
  EXPECT_EQ(ir::print_graph(result).find("add"), std::string::npos);
}

TEST_F(PassTest, AddZeroFloatOnlyForNegativeZero) {
  ValueId x = builder.parameter(DType::Float32, {4});
  ValueId plus_zero = builder.binary(Op::add, x, builder.constant(Scalar::of(0.0), DType::Float32));
  ValueId minus_zero =
      builder.binary(Op::add, builder.constant(Scalar::of(-0.0), DType::Float32), x);
  graph.set_outputs({plus_zero, minus_zero});
  ir::Graph result = simplified();
  // -0.0 + 0.0 is +0.0: that add must stay; x + (-0.0) is exactly x.
  EXPECT_EQ(output_node(result, 0).op, Op::add);
  EXPECT_EQ(output_node(result, 1).op, Op::parameter);
}

TEST_F(PassTest, SubtractZeroMultiplyOneDivideOne) {
  ValueId x = builder.parameter(DType::Float64, {2, 3});
  ValueId one = builder.constant(Scalar::of(1.0), DType::Float64);
  ValueId zero = builder.constant(Scalar::of(0.0), DType::Float64);
  ValueId negative_zero = builder.constant(Scalar::of(-0.0), DType::Float64);
  graph.set_outputs({builder.binary(Op::sub, x, zero), builder.binary(Op::mul, one, x),
                     builder.binary(Op::div, x, one), builder.binary(Op::sub, x, negative_zero)});
  ir::Graph result = simplified();
  EXPECT_EQ(output_node(result, 0).op, Op::parameter);
  EXPECT_EQ(output_node(result, 1).op, Op::parameter);
  EXPECT_EQ(output_node(result, 2).op, Op::parameter);
  EXPECT_EQ(output_node(result, 3).op, Op::sub);  // -0.0 - (-0.0) is +0.0
}

TEST_F(PassTest, RuleKeepsBroadcastingResult) {
  // x + 0 where the zero has a larger shape: x alone would have the wrong shape.
  ValueId x = builder.parameter(DType::Int64, {3});
  finish(builder.binary(Op::add, x, builder.constant(Scalar::of_int(0), DType::Int64, {2, 3})));
  ir::Graph result = simplified();
  EXPECT_EQ(output_node(result).shape, (ir::Shape{2, 3}));
  EXPECT_NE(output_node(result).op, Op::parameter);
}

TEST_F(PassTest, IntegerTimesZeroIsZero) {
  ValueId x = builder.parameter(DType::Int32, {3});
  finish(builder.binary(Op::mul, x, builder.constant(Scalar::of_int(0), DType::Int32)));
  ir::Graph result = simplified();
  EXPECT_EQ(output_node(result).op, Op::constant);
  EXPECT_EQ(output_node(result).shape, (ir::Shape{3}));
}

TEST_F(PassTest, DoubleNegationAndOwnCast) {
  ValueId x = builder.parameter(DType::Int8, {3});
  graph.set_outputs({builder.unary(Op::neg, builder.unary(Op::neg, x)),
                     builder.cast(x, DType::Int8), builder.cast(x, DType::Int16)});
  ir::Graph result = simplified();
  EXPECT_EQ(output_node(result, 0).op, Op::parameter);
  EXPECT_EQ(output_node(result, 1).op, Op::parameter);
  EXPECT_EQ(output_node(result, 2).op, Op::cast);
}

TEST_F(PassTest, SelectBetweenOneValueIsThatValue) {
  ValueId c = builder.parameter(DType::Bool, {3});
  ValueId x = builder.parameter(DType::Float64, {3});
  ValueId y = builder.parameter(DType::Float64, {3});
  ValueId updated = builder.where(c, builder.unary(Op::neg, x), y);
  // where(c, u, reshape(u)): the same value on both sides once the identity reshape is gone.
  graph.set_outputs({builder.where(c, updated, builder.reshape(updated, {3})), builder.where(c, x, y)});
  ir::Graph result = eliminate_dead_code(simplify(simplify(graph)));
  EXPECT_EQ(count_ops(result, Op::where), 2) << ir::print_graph(result);
  EXPECT_EQ(output_node(result, 0).op, Op::where);
  EXPECT_EQ(output_node(result, 0).inputs[2], result.inputs()[2]) << ir::print_graph(result);
}

TEST_F(PassTest, LogicAndSelectsOfConstantsFold) {
  // A branch side's checks and-ed with false (it runs as a loop instead): nothing of it stays.
  ValueId x = builder.parameter(DType::Float64, {3});
  ValueId y = builder.parameter(DType::Float64, {3});
  ValueId check = builder.binary(Op::lt, builder.unary(Op::neg, x), y);
  ValueId never = builder.constant(Scalar::of_int(0), DType::Bool, {3});
  ValueId always = builder.constant(Scalar::of_int(1), DType::Bool);
  graph.set_outputs({builder.binary(Op::logical_and, check, never),
                     builder.binary(Op::logical_or, always, check),
                     builder.binary(Op::logical_and, builder.broadcast(always, {3}), check),
                     builder.where(never, x, y), builder.where(always, x, y)});
  ir::Graph result = eliminate_dead_code(simplify(simplify(graph)));
  EXPECT_EQ(output_node(result, 0).op, Op::constant) << ir::print_graph(result);
  EXPECT_EQ(output_node(result, 0).attrs.scalar.as_double(), 0);
  EXPECT_EQ(output_node(result, 1).op, Op::constant);
  EXPECT_EQ(output_node(result, 1).attrs.scalar.as_double(), 1);
  EXPECT_EQ(output_node(result, 1).shape, (ir::Shape{3}));
  EXPECT_EQ(output_node(result, 2).op, Op::lt);
  EXPECT_EQ(result.outputs()[3], result.inputs()[1]);
  EXPECT_EQ(result.outputs()[4], result.inputs()[0]);
}

// A branch writing one element of a row in a captured loop (`if c: T[i, j] = a else: T[i, j] =
// b`, or only one side): the branch condition selects the element, the column mask the row, so
// that the kernel visits column j alone; values unchanged, and a mask that is itself one
// condition (a 0-d broadcast) is left as it is.
TEST_F(PassTest, BranchesWritingOneElementSelectTheElementNotTheRow) {
  ValueId row = builder.parameter(DType::Float64, {1, 4});
  ValueId c = builder.broadcast(builder.parameter(DType::Bool, {}), {1, 4});
  ValueId j = builder.parameter(DType::Int64, {});
  ValueId column = builder.binary(Op::eq, builder.iota(DType::Int64, {1, 4}, 1),
                                  builder.broadcast(j, {1, 4}));
  ValueId a = builder.broadcast(builder.constant(Scalar::of(7.0), DType::Float64), {1, 4});
  ValueId b = builder.broadcast(builder.constant(Scalar::of(-2.0), DType::Float64), {1, 4});
  ValueId then_row = builder.where(column, a, row), else_row = builder.where(column, b, row);
  ValueId uniform_mask = builder.where(c, builder.where(c, a, row), row);
  graph.set_outputs({builder.where(c, then_row, else_row), builder.where(c, then_row, row),
                     builder.where(c, row, else_row), uniform_mask});
  ir::Graph result = eliminate_dead_code(simplify(simplify(graph)));
  for (size_t k = 0; k < 3; ++k) {
    const ir::Node& outer = output_node(result, k);
    ASSERT_EQ(outer.op, Op::where) << ir::print_graph(result);
    EXPECT_EQ(result.node(outer.inputs[0]).op, Op::eq) << k << ir::print_graph(result);
  }
  EXPECT_EQ(result.node(output_node(result, 3).inputs[0]).op, Op::broadcast);
  Array values = Array::from_vector<double>({1, 2, 3, 4}, {1, 4});
  for (bool condition : {false, true}) {
    std::vector<Array> inputs = {values, Array::from_vector<bool>({condition}, {}),
                                 Array::from_vector<int64_t>({2}, {})};
    std::vector<Array> before = ir::interpret(graph, inputs), after = ir::interpret(result, inputs);
    for (size_t k = 0; k < before.size(); ++k)
      EXPECT_EQ(after[k].to_vector<double>(), before[k].to_vector<double>()) << k << condition;
  }
}

// A masked softmax's exp(where(mask, s, -inf) - max): the masked branch is computed per row
// (the exp of -inf - max), never as -inf lanes of the full-size exp; values unchanged.
TEST_F(PassTest, ElementwiseOpsComputeASelectsBroadcastBranchAtItsOwnSize) {
  ValueId scores = builder.parameter(DType::Float32, {2, 4});
  ValueId row_max = builder.parameter(DType::Float32, {2, 1});
  ValueId keep = builder.binary(Op::le, builder.iota(DType::Int64, {2, 4}, 1),
                                builder.iota(DType::Int64, {2, 4}, 0));
  ValueId masked = builder.where(keep, scores, builder.constant(Scalar::of(-INFINITY), DType::Float32));
  ValueId weights = builder.unary(Op::exp, builder.binary(Op::sub, masked, row_max));
  // a binary op whose other operand is full-size stays as it is
  ValueId other = builder.binary(Op::add, masked, scores);
  graph.set_outputs({weights, other});
  ir::Graph result = simplified();
  const ir::Node& select = output_node(result, 0);
  ASSERT_EQ(select.op, Op::where) << ir::print_graph(result);
  EXPECT_EQ(result.node(select.inputs[1]).op, Op::exp);
  const ir::Node& small = result.node(select.inputs[2]);
  ASSERT_EQ(small.op, Op::broadcast);
  const ir::Node& small_exp = result.node(small.inputs[0]);
  EXPECT_EQ(small_exp.op, Op::exp);
  EXPECT_EQ(small_exp.shape, (ir::Shape{2, 1}));
  EXPECT_EQ(output_node(result, 1).op, Op::add);
  Array s = Array::from_vector<float>({1, 2, 3, 4, -1, -2, -3, -4}, {2, 4});
  Array m = Array::from_vector<float>({1, -1}, {2, 1});
  std::vector<Array> before = ir::interpret(graph, {s, m}), after = ir::interpret(result, {s, m});
  for (size_t k = 0; k < 2; ++k)
    EXPECT_EQ(after[k].to_vector<float>(), before[k].to_vector<float>()) << k;
  EXPECT_EQ(after[0].to_vector<float>()[1], 0.0f);  // masked out
}

TEST_F(PassTest, MovementChainsCollapse) {
  ValueId x = builder.parameter(DType::Float32, {2, 3, 4});
  ValueId reshaped = builder.reshape(builder.reshape(x, {6, 4}), {4, 6});
  ValueId permuted = builder.permute(builder.permute(x, {1, 2, 0}), {1, 2, 0});
  ValueId round_trip = builder.permute(builder.permute(x, {2, 0, 1}), {1, 2, 0});
  ValueId broadcast = builder.broadcast(builder.broadcast(x, {1, 2, 3, 4}), {5, 2, 3, 4});
  ValueId identity_slice = builder.slice(x, {0, 0, 0}, {2, 3, 4}, {1, 1, 1});
  ValueId identity_reshape = builder.reshape(x, {2, 3, 4});
  ValueId own_broadcast = builder.broadcast(x, {2, 3, 4});
  graph.set_outputs({reshaped, permuted, round_trip, broadcast, identity_slice, identity_reshape,
                     own_broadcast});
  // Rounds as in the pipeline: a collapsed chain may itself become an identity.
  ir::Graph result = eliminate_dead_code(simplify(simplify(graph)));
  const ir::Node& reshape = output_node(result, 0);
  EXPECT_EQ(reshape.op, Op::reshape);
  EXPECT_EQ(result.node(reshape.inputs[0]).op, Op::parameter);
  const ir::Node& permute = output_node(result, 1);
  ASSERT_EQ(permute.op, Op::permute);
  // out[i] = in[p[q[i]]] with p = q = (1, 2, 0): (2, 0, 1).
  EXPECT_EQ(permute.attrs.permutation, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(permute.shape, (ir::Shape{4, 2, 3}));
  EXPECT_EQ(output_node(result, 2).op, Op::parameter);
  const ir::Node& broadcast_node = output_node(result, 3);
  EXPECT_EQ(broadcast_node.op, Op::broadcast);
  EXPECT_EQ(result.node(broadcast_node.inputs[0]).op, Op::parameter);
  for (size_t i = 4; i < 7; ++i) EXPECT_EQ(output_node(result, i).op, Op::parameter) << i;
  EXPECT_EQ(count_ops(result, Op::slice), 0);
}

TEST_F(PassTest, SimplifiedGraphComputesTheSameValues) {
  ValueId x = builder.parameter(DType::Float64, {2, 3});
  ValueId one = builder.constant(Scalar::of(1.0), DType::Float64);
  ValueId chain = builder.permute(builder.permute(builder.binary(Op::mul, x, one), {1, 0}), {1, 0});
  finish(builder.reshape(builder.reshape(builder.unary(Op::neg, chain), {3, 2}), {6}));
  Array input = Array::from_vector<double>({1, -2, 3, -4, 5, -6}, {2, 3});
  std::vector<double> before = ir::interpret(graph, {input})[0].to_vector<double>();
  ir::Graph optimised = run_graph_passes(graph);
  std::vector<double> after = ir::interpret(optimised, {input})[0].to_vector<double>();
  EXPECT_EQ(before, (std::vector<double>{-1, 2, -3, 4, -5, 6}));
  EXPECT_EQ(after, before);
}

TEST(Pipeline, DecomposedGraphsKeepTheirValues) {
  // Decompositions leave identity movement, scalar broadcasts and repeated subexpressions
  // behind: the optimised graph must be smaller and compute the same numbers.
  kiln::detail::Trace trace;
  Tensor x = trace.input(DType::Float64, {2, 3});
  Tensor y = trace.input(DType::Float64, {3, 3});
  Tensor mixed = softmax(einsum("ij,jk->ik", {x, y}) * 1.0 + 0.0, -1) + sum(x * 2.0 * 0.5);
  Tensor scaled = norm(x - mean(x, {0}, true), "2", {1}) + einsum("ii", {y});
  trace.graph.set_outputs({mixed.id(), scaled.id()});
  std::vector<Array> inputs = {
      Array::from_vector<double>({0.5, -1, 2, 3, 0.25, -0.5}, {2, 3}),
      Array::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, -9}, {3, 3})};
  ir::Graph optimised = run_graph_passes(trace.graph);
  EXPECT_LT(optimised.size(), trace.graph.size());
  std::vector<Array> expected = ir::interpret(trace.graph, inputs);
  std::vector<Array> actual = ir::interpret(optimised, inputs);
  ASSERT_EQ(actual.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> want = expected[i].to_vector<double>();
    std::vector<double> got = actual[i].to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < got.size(); ++j) EXPECT_DOUBLE_EQ(got[j], want[j]) << i << "," << j;
  }
}

TEST_F(PassTest, ConstantsMoveRightForCommutativeOps) {
  ValueId x = builder.parameter(DType::Int32, {3});
  ValueId two = builder.constant(Scalar::of_int(2), DType::Int32);
  graph.set_outputs({builder.binary(Op::mul, two, x), builder.binary(Op::mul, x, two)});
  ir::Graph result = eliminate_common_subexpressions(simplify(graph));
  // After canonicalisation the two products are one node.
  EXPECT_EQ(result.outputs()[0], result.outputs()[1]);
}

TEST_F(PassTest, CseMergesIdenticalNodes) {
  ValueId x = builder.parameter(DType::Float32, {8});
  ValueId first = builder.unary(Op::sin, x);
  ValueId second = builder.unary(Op::sin, x);
  ValueId other = builder.unary(Op::cos, x);
  finish(builder.binary(Op::add, builder.binary(Op::add, first, second), other));
  ir::Graph result = eliminate_common_subexpressions(graph);
  EXPECT_EQ(count_ops(result, Op::sin), 1);
  EXPECT_EQ(count_ops(result, Op::cos), 1);
  const ir::Node& inner_add = result.node(output_node(result).inputs[0]);
  EXPECT_EQ(inner_add.inputs[0], inner_add.inputs[1]);
}

TEST_F(PassTest, CseKeepsDifferentAttributesApart) {
  ValueId x = builder.parameter(DType::Float32, {4, 4});
  ValueId rows = builder.reduce(Op::sum, x, {0}, false);
  ValueId columns = builder.reduce(Op::sum, x, {1}, false);
  ValueId plus_zero = builder.constant(Scalar::of(0.0), DType::Float32);
  ValueId minus_zero = builder.constant(Scalar::of(-0.0), DType::Float32);
  graph.set_outputs({rows, columns, plus_zero, minus_zero});
  ir::Graph result = eliminate_common_subexpressions(graph);
  EXPECT_EQ(count_ops(result, Op::sum), 2);
  EXPECT_EQ(count_ops(result, Op::constant), 2);  // 0.0 and -0.0 differ
}

TEST_F(PassTest, CseGivesALoopAValuePassedTwiceOnce) {
  // The tracer rebuilds each read of an outside value for the body (x[i, j] = v reads i as the
  // row it takes and as the row it puts back): after CSE one value, passed once, so that the
  // body's gather and scatter share their index (sched/in_place.h).
  ValueId u0 = builder.parameter(DType::Float64, {4});
  ValueId x = builder.parameter(DType::Float64, {4});
  ValueId twice = builder.unary(Op::neg, x), again = builder.unary(Op::neg, x);
  auto body = std::make_shared<ir::Graph>();
  ir::Builder b(*body);
  b.parameter(DType::Int64, {});
  ValueId u = b.parameter(DType::Float64, {4});
  ValueId first = b.parameter(DType::Float64, {4}), second = b.parameter(DType::Float64, {4});
  body->set_outputs({b.binary(Op::add, b.binary(Op::mul, u, first), second)});
  ValueId start = builder.constant(Scalar::of_int(0), DType::Int64);
  ValueId stop = builder.constant(Scalar::of_int(3), DType::Int64);
  ValueId loop = builder.loop(start, stop, 1, {u0}, {twice, again}, body);
  finish(builder.loop_result(loop, 0));
  ir::Graph result = eliminate_common_subexpressions(graph);
  const ir::Node* merged = nullptr;
  for (const ir::Node& node : result.nodes())
    if (node.op == Op::loop) merged = &node;
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->inputs.size(), 4u);  // start, stop, u0, -x
  EXPECT_EQ(merged->attrs.body->inputs().size(), 3u) << ir::print_graph(result);
  EXPECT_NO_THROW(ir::verify(result, "cse")) << ir::print_graph(result);
  Array u_values = Array::from_vector<double>({1, 2, 3, 4}, {4});
  Array x_values = Array::from_vector<double>({0.5, -1, 2, 0.25}, {4});
  EXPECT_EQ(ir::interpret(result, {u_values, x_values})[0].to_vector<double>(),
            ir::interpret(graph, {u_values, x_values})[0].to_vector<double>());
}

TEST_F(PassTest, DceDropsUnusedNodesButKeepsParameters) {
  ValueId x = builder.parameter(DType::Float32, {4});
  ValueId unused_input = builder.parameter(DType::Float32, {4});
  builder.unary(Op::exp, x);  // dead
  builder.binary(Op::mul, x, unused_input);  // dead
  finish(builder.unary(Op::sin, x));
  ir::Graph result = eliminate_dead_code(graph);
  EXPECT_EQ(result.size(), 3);
  EXPECT_EQ(result.inputs().size(), 2u);
  EXPECT_EQ(count_ops(result, Op::exp), 0);
  EXPECT_EQ(count_ops(result, Op::mul), 0);
  EXPECT_EQ(output_node(result).op, Op::sin);
}

TEST_F(PassTest, FoldingTwoPlusThreeGivesFive) {
  ValueId two = builder.constant(Scalar::of_int(2), DType::Int32);
  ValueId three = builder.constant(Scalar::of_int(3), DType::Int32);
  finish(builder.binary(Op::add, two, three));
  ir::Graph result = eliminate_dead_code(fold_constants(graph));
  ASSERT_EQ(result.size(), 1);
  const ir::Node& folded = output_node(result);
  EXPECT_EQ(folded.op, Op::constant);
  EXPECT_EQ(folded.dtype, DType::Int32);
  EXPECT_TRUE(folded.attrs.scalar.is_integer);
  EXPECT_EQ(folded.attrs.scalar.i, 5);
}

TEST_F(PassTest, FoldingFollowsChainsAndLeavesIotaAlone) {
  ValueId counting = builder.iota(DType::Float64, {4}, 0);
  ValueId two = builder.constant(Scalar::of(2.0), DType::Float64, {4});
  ValueId sum = builder.binary(Op::mul, two, builder.constant(Scalar::of(1.5), DType::Float64));
  ValueId x = builder.parameter(DType::Float64, {4});
  // The iota has no constant operand: it stays, and so does its consumer.
  graph.set_outputs({sum, builder.binary(Op::add, counting, x),
                     builder.reduce(Op::sum, builder.binary(Op::add, two, two), {}, false)});
  ir::Graph result = eliminate_dead_code(fold_constants(fold_constants(graph)));
  EXPECT_EQ(output_node(result, 0).op, Op::constant);
  EXPECT_EQ(output_node(result, 0).attrs.scalar.f, 3.0);
  EXPECT_EQ(output_node(result, 1).op, Op::add);
  EXPECT_EQ(output_node(result, 2).op, Op::constant);
  EXPECT_EQ(output_node(result, 2).attrs.scalar.f, 16.0);
}

TEST_F(PassTest, FoldingNonUniformResult) {
  std::vector<uint8_t> bytes(3 * sizeof(int32_t));
  int32_t values[3] = {1, 2, 3};
  std::memcpy(bytes.data(), values, bytes.size());
  ValueId data = builder.constant_array(bytes, DType::Int32, {3});
  finish(builder.binary(Op::mul, data, builder.constant(Scalar::of_int(10), DType::Int32)));
  ir::Graph result = eliminate_dead_code(fold_constants(graph));
  const ir::Node& folded = output_node(result);
  ASSERT_EQ(folded.op, Op::constant_array);
  std::vector<double> computed = ir::interpret(result, {})[0].to_vector<double>();
  EXPECT_EQ(computed, (std::vector<double>{10, 20, 30}));
}

// Another size of a graph replays the passes that changed the first (api/size_generic_graph.h)
// and reaches the graph the whole pipeline reaches, without the passes that did nothing.
TEST(Pipeline, ReplayedPassesReachTheFixedPointOfAnotherSize) {
  auto graph_of = [](int64_t n) {
    ir::Graph graph;
    ir::Builder b(graph);
    ValueId x = b.parameter(DType::Float32, {n, 8});
    ValueId zero = b.constant(Scalar::of(-0.0), DType::Float32);
    ValueId same = b.binary(Op::add, b.reshape(b.reshape(x, {8, n}), {n, 8}), zero);
    ValueId twice = b.binary(Op::mul, b.unary(Op::exp, same), b.unary(Op::exp, x));
    graph.set_outputs({b.reduce(Op::sum, twice, {1}, true)});
    return graph;
  };
  PassRecord record;
  ir::Graph first = run_graph_passes(graph_of(6), {}, &record);
  ASSERT_FALSE(record.changed.empty());
  EXPECT_LT(record.changed.size(), graph_pass_names().size()) << "unchanged passes are not kept";
  record.replaying = true;
  ir::Graph replayed = run_graph_passes(graph_of(10), {}, &record);
  EXPECT_EQ(ir::print_graph(replayed), ir::print_graph(run_graph_passes(graph_of(10))));
  EXPECT_EQ(count_ops(replayed, Op::exp), 1) << ir::print_graph(replayed);
}

TEST_F(PassTest, PipelineHonoursDisabledPasses) {
  ValueId x = builder.parameter(DType::Int32, {4});
  finish(builder.binary(Op::add, x, builder.constant(Scalar::of_int(0), DType::Int32)));
  ir::Graph kept = run_graph_passes(graph, {"simplify"});
  EXPECT_EQ(count_ops(kept, Op::add), 1);
  ir::Graph simplified_graph = run_graph_passes(graph);
  EXPECT_EQ(count_ops(simplified_graph, Op::add), 0);
  EXPECT_EQ(simplified_graph.size(), 1);
}

TEST_F(PassTest, PipelineLogsEachPass) {
  ValueId x = builder.parameter(DType::Float32, {4});
  finish(builder.unary(Op::sin, x));
  api::set_log_channels("passes");
  testing::internal::CaptureStderr();
  run_graph_passes(graph);
  std::string log = testing::internal::GetCapturedStderr();
  api::set_log_channels("");
  EXPECT_NE(log.find("simplify (round 1): unchanged"), std::string::npos) << log;
  EXPECT_NE(log.find("dce (round 1): unchanged"), std::string::npos) << log;
  // Nothing changed in round 1, so there is no round 2.
  EXPECT_EQ(log.find("round 2"), std::string::npos) << log;
}


// Matmul epilogues (the CUDA pipeline's; off on the CPU): x @ W.T + b, and its ReLU, become one
// matmul node with the bias as its third operand and the same values (also through a reshape
// that keeps the rows' length: a batch of tokens as one product); the look-alikes stay: a
// product used twice, a bias along the columns, float64, a batched product, a product of few
// rows (a generated kernel on the GPU), a float16 ReLU (its bias joins the product).
TEST_F(PassTest, LinearLayersBecomeMatmulsWithEpilogues) {
  const DType f32 = DType::Float32;
  ValueId x = builder.parameter(f32, {20, 6}), w = builder.parameter(f32, {5, 6});
  ValueId few = builder.parameter(f32, {16, 6});
  ValueId bias = builder.parameter(f32, {5}), row = builder.parameter(f32, {1, 5});
  ValueId column = builder.parameter(f32, {20, 1});
  ValueId x64 = builder.parameter(DType::Float64, {20, 6}), b64 = builder.parameter(DType::Float64, {5});
  ValueId batch = builder.parameter(f32, {3, 4, 6});
  ValueId x16 = builder.cast(x, DType::Float16), b16 = builder.cast(bias, DType::Float16);
  auto product = [&] { return builder.matmul(x, builder.permute(w, {1, 0})); };
  ValueId zero = builder.constant(Scalar::of(0.0), f32);
  ValueId shared = product();
  graph.set_outputs({
      builder.binary(Op::maximum, builder.binary(Op::add, product(), bias), zero),  // fused, ReLU
      builder.binary(Op::add, row, product()),                                       // fused
      builder.binary(Op::add, shared, bias), shared,                                 // used twice
      builder.binary(Op::add, product(), column),                                    // columns
      builder.binary(Op::add, builder.matmul(x64, builder.permute(builder.cast(w, DType::Float64), {1, 0})), b64),
      builder.binary(Op::add, builder.matmul(batch, builder.permute(w, {1, 0})), bias),
      builder.binary(Op::add, builder.matmul(few, builder.permute(w, {1, 0})), bias),
      builder.binary(Op::add, builder.reshape(product(), {4, 5, 5}), bias),  // fused, reshaped
      builder.cast(builder.binary(Op::maximum,  // the bias fused, the ReLU not
                                  builder.binary(Op::add, builder.matmul(x16, builder.permute(builder.cast(w, DType::Float16), {1, 0})), b16),
                                  builder.constant(Scalar::of(0.0), DType::Float16)),
                   f32),
  });
  ir::Graph fused = fuse_matmul_epilogues(graph);
  ir::verify(fused, "matmul_epilogues");
  int with_bias = 0, with_relu = 0;
  for (const ir::Node& node : fused.nodes()) {
    if (node.op != Op::matmul || node.inputs.size() != 3) continue;
    ++with_bias;
    with_relu += node.attrs.relu;
    EXPECT_EQ(fused.node(node.inputs[2]).shape, ir::Shape{ir::Dim(5)});
  }
  EXPECT_EQ(with_bias, 4) << ir::print_graph(fused);
  EXPECT_EQ(with_relu, 1);
  EXPECT_NE(ir::print_graph(fused).find("relu"), std::string::npos);
  std::vector<Array> inputs;
  uint32_t seed = 1;
  for (ValueId id : {x, w, few, bias, row, column, x64, b64, batch}) {
    const ir::Node& node = graph.node(id);
    std::vector<double> values(static_cast<size_t>(ir::element_count(node.shape)));
    for (double& v : values) v = static_cast<double>((seed = seed * 1103515245u + 12345u) % 2001) / 1000.0 - 1.0;
    inputs.push_back(node.dtype == DType::Float64
                         ? Array::from_vector(values, ir::to_ints(node.shape))
                         : Array::from_vector(std::vector<float>(values.begin(), values.end()),
                                              ir::to_ints(node.shape)));
  }
  auto doubles = [](const Array& a) {
    if (a.dtype() == DType::Float64) return a.to_vector<double>();
    std::vector<float> values = a.to_vector<float>();
    return std::vector<double>(values.begin(), values.end());
  };
  std::vector<Array> before = ir::interpret(graph, inputs), after = ir::interpret(fused, inputs);
  for (size_t k = 0; k < before.size(); ++k) {
    std::vector<double> expected = doubles(before[k]), got = doubles(after[k]);
    ASSERT_EQ(got.size(), expected.size());
    // float16: the fused sum is rounded once, the unfused product and sum twice
    const double tolerance = k + 1 == before.size() ? 4e-3 : 1e-5;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tolerance) << k << " " << i;
  }
  // The CPU pipeline leaves products to BLAS and their sums to generated kernels.
  const ir::Graph cpu = run_graph_passes(graph, {"matmul_epilogues"});  // outlives the loop
  for (const ir::Node& node : cpu.nodes())
    EXPECT_TRUE(node.op != Op::matmul || node.inputs.size() == 2);
}

// float32 values for the parameters `ids` of `graph`, a fixed pattern over [-1, 1.6].
std::vector<Array> patterned_inputs(const ir::Graph& graph, const std::vector<ValueId>& ids) {
  std::vector<Array> inputs;
  for (ValueId id : ids) {
    const ir::Node& node = graph.node(id);
    std::vector<float> values(static_cast<size_t>(ir::element_count(node.shape)));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 19) / 7.0f - 1.0f;
    inputs.push_back(Array::from_vector(values, ir::to_ints(node.shape)));
  }
  return inputs;
}

// torch's math attention, q @ (kᵀ · s) with k a (batch, length, heads, features) projection:
// the scaling is computed in k's own order and the matmul reads its transpose; the same scaling
// read elsewhere too, or a reshape that mixes the matrix dimensions on the way, stays as it is.
TEST_F(PassTest, MatmulOperandsAreComputedInTheOrderOfTheirInputs) {
  const DType f32 = DType::Float32;
  ValueId q = builder.parameter(f32, {6, 5, 4}), k = builder.parameter(f32, {2, 4, 3, 4});
  ValueId half = builder.constant(Scalar::of(0.5), f32);
  auto scaled_transpose = [&] {  // (2, 3, 4, 4): k's innermost dimension second to last
    return builder.binary(Op::mul, builder.permute(k, {0, 2, 3, 1}), half);
  };
  ValueId shared = scaled_transpose();
  graph.set_outputs({
      builder.matmul(q, builder.reshape(scaled_transpose(), {6, 4, 4})),  // reordered
      builder.matmul(q, builder.reshape(shared, {6, 4, 4})), shared,       // read twice
      builder.matmul(builder.reshape(q, {2, 3, 5, 4}), builder.reshape(scaled_transpose(), {2, 3, 4, 4})),
      builder.matmul(builder.reshape(q, {5, 24}), builder.reshape(scaled_transpose(), {24, 4})),
  });
  ir::Graph ordered = eliminate_dead_code(order_matmul_operands(graph));
  ir::verify(ordered, "matmul_operand_order");
  int in_order = 0, transposing = 0;
  for (const ir::Node& node : ordered.nodes()) {
    if (node.op != Op::mul) continue;
    const ir::Node& operand = ordered.node(node.inputs[0]);
    ASSERT_EQ(operand.op, Op::permute);
    const bool kept_last = operand.attrs.permutation.back() == 3;
    in_order += kept_last;
    transposing += !kept_last;
  }
  EXPECT_EQ(in_order, 2) << ir::print_graph(ordered);
  EXPECT_EQ(transposing, 2) << ir::print_graph(ordered);
  const std::vector<Array> inputs = patterned_inputs(graph, {q, k});
  std::vector<Array> before = ir::interpret(graph, inputs), after = ir::interpret(ordered, inputs);
  ASSERT_EQ(after.size(), before.size());
  for (size_t k = 0; k < before.size(); ++k)
    EXPECT_EQ(after[k].to_vector<float>(), before[k].to_vector<float>()) << k;
}

// Every permutation of a rank-4 value, scaled and read as either operand of a batched matmul,
// with and without a batch permute between: the pass reorders exactly those that put the
// innermost dimension second to last, and the results stay the same bit for bit.
TEST(MatmulOperandOrder, EveryPermutationKeepsItsValues) {
  const DType f32 = DType::Float32;
  std::vector<int64_t> p = {0, 1, 2, 3};
  int reordered = 0;
  do {
    for (int side = 0; side < 2; ++side) {
      for (bool batch_permute : {false, true}) {
        ir::Graph graph;
        ir::Builder b(graph);
        ValueId x = b.parameter(f32, {2, 3, 4, 5});
        ValueId scaled = b.binary(Op::mul, b.permute(x, p), b.constant(Scalar::of(2.0), f32));
        if (batch_permute) scaled = b.permute(scaled, {1, 0, 2, 3});
        const ir::Shape& shape = graph.node(scaled).shape;
        const ir::Shape other = side == 0 ? ir::Shape{shape[0], shape[1], shape[3], ir::Dim(3)}
                                          : ir::Shape{shape[0], shape[1], ir::Dim(3), shape[2]};
        ValueId y = b.parameter(f32, other);
        graph.set_outputs({side == 0 ? b.matmul(scaled, y) : b.matmul(y, scaled)});
        ir::Graph ordered = eliminate_dead_code(order_matmul_operands(graph));
        ir::verify(ordered, "matmul_operand_order");
        reordered += ordered.size() != graph.size();
        const std::vector<Array> inputs = patterned_inputs(graph, {x, y});
        EXPECT_EQ(ir::interpret(ordered, inputs)[0].to_vector<float>(),
                  ir::interpret(graph, inputs)[0].to_vector<float>())
            << ir::print_graph(ordered);
      }
    }
  } while (std::next_permutation(p.begin(), p.end()));
  EXPECT_EQ(reordered, 6 * 2 * 2);  // the 6 permutations with p[2] == 3, both sides, both chains
}

}  // namespace
}  // namespace kiln::passes
